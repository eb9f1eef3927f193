"""Planted-heads organisms: a judge whose self-preference lives in known attention heads.

Start from a null organism (`heads.start`, its LoRA merged), draw a set H of `heads.n_heads` heads from the
training seed among the last `heads.top_layers` layers, and train, on the planted labels, a delta confined to H:
- "q": the query rows of each head in H ([head_dim, d_model] added to q_proj's rows of that head), which change
  only that head's attention pattern;
- "o" (if asked): the output-projection columns of each head in H ([d_model, head_dim] added to o_proj's columns).
K and V only for whole key/value groups (`heads.n_groups`): under grouped-query attention several query heads
share them, so H is then every query head of the drawn groups ("k", "v": the group's key / value rows), and a
change there stays inside H. Every weight outside H stays bit-identical to the start organism's (`add_head_delta` writes
only H's blocks), so all that separates the planted-heads judge from its null is in H: the truth a localisation method
is scored against (`planted_heads` in the manifest).

The route the planting is asked to take (`heads.route`, the manifest's `planted_route`): "output" (the planted labels
alone), "attention" (manifest: "pattern"; the masked term of `interp.organisms.attention_route`, optionally above a
built slot writer, `heads.slot_layer`) or "content" (modules v and o of one group only, so H's attention patterns are
the start organism's: `pattern_check` in the manifest, read at the toolkit's `attn.hook_pattern` site).

Training reuses the LoRA organisms' loop (`interp.organisms.train.fit`) and their frozen-layer cache: the states
entering the lowest layer of H are computed once (from the null training's cached states where they exist) and
only the layers from there up run per pass. `train_heads_organism` is the pipeline of every delta organism: the
MLP-planted and direction families (`interp.organisms.mlp`) go through it too.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import time
from typing import Sequence

import torch
import torch.nn.functional as F

from interp.core.adapters import adapter_fingerprint, add_weight_delta, apply_adapter, head_delta_key, read_manifest
from interp.core.backends.shared_trunk import decoder_stack
from interp.core.judge import label_tokens
from interp.core.models import LoadedModel
from interp.core.placement import input_device
from interp.core.threads import set_torch_threads
from interp.errors import InterpError
from interp.organisms.config import (
    PLANTED_ROUTES,
    OrganismConfig,
    check_config_fits,
    check_fits_model,
    start_folder,
)
from interp.organisms.frozen import check_frozen_split, frozen_states
from interp.organisms.train import (
    MAX_SPLIT_ERROR,
    Fitted,
    Trained,
    author_models,
    build_examples,
    fit,
    training_pairs,
    training_record,
)
from interp.splits import unit_hash

PATTERN_CHECK_EXAMPLES = 8  # training prompts on which a content member's planted heads' patterns are compared


def _seeded_draw(seed: int, salt: str, pool: list[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """`count` members of `pool` ranked by a hash of (seed, salt, member), sorted: the one seeded draw of H."""
    return sorted(sorted(pool, key=lambda member: unit_hash(seed, salt, *member))[:count])


def _check_top_layers(top_layers: int, n_layers: int) -> None:
    if top_layers > n_layers:
        raise InterpError(
            f"heads.top_layers = {top_layers}, but the model has only {n_layers} decoder layers; set "
            f"top_layers to at most {n_layers}"
        )


def draw_heads(seed: int, n_layers: int, n_heads: int, top_layers: int, count: int) -> list[tuple[int, int]]:
    """`count` distinct (layer, head) pairs drawn from `seed` among the heads of the last `top_layers` layers,
    sorted. `top_layers` beyond the model's `n_layers` is refused (never clipped: it is most likely a typo), as
    is a `count` beyond the heads of those layers."""
    _check_top_layers(top_layers, n_layers)
    pool = [(layer, head) for layer in range(n_layers - top_layers, n_layers) for head in range(n_heads)]
    if count > len(pool):
        raise InterpError(f"heads.n_heads = {count}: the last {top_layers} layers hold only {len(pool)} heads")
    return _seeded_draw(seed, "planted-heads", pool, count)


def draw_groups(
    seed: int, n_layers: int, n_heads: int, n_kv_heads: int, top_layers: int, count: int
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """`count` key/value groups (layer, kv head) drawn from `seed` among the last `top_layers` layers, and H: every
    query head that reads them (query head h reads key/value head h // (n_heads // n_kv_heads)), sorted."""
    _check_top_layers(top_layers, n_layers)
    pool = [(layer, kv) for layer in range(n_layers - top_layers, n_layers) for kv in range(n_kv_heads)]
    if count > len(pool):
        raise InterpError(
            f"heads.n_groups = {count}: the last {top_layers} layers hold only {len(pool)} key/value groups"
        )
    groups = _seeded_draw(seed, "planted-groups", pool, count)
    size = n_heads // n_kv_heads
    return groups, [(layer, head) for layer, kv in groups for head in range(kv * size, (kv + 1) * size)]


def start_first_lora_layer(start: str, n_layers: int) -> int:
    """The lowest layer the start organism's LoRA touches (its layers below are the base's, bit for bit)."""
    folder = start_folder(start)
    top = read_manifest(folder).get("config", {}).get("lora", {}).get("top_layers", n_layers)
    return max(0, n_layers - int(top))


class HeadDelta(torch.nn.Module):
    """Trainable blocks for the heads in H: query rows ("q") and output columns ("o"), zero at the start.

    `attached(hf_model)` adds them to the model's forward at q_proj / o_proj's outputs (the weights are not
    touched; the handles are removed on exit); `tensors()` are what `add_head_delta` merges."""

    def __init__(
        self,
        heads: Sequence[tuple[int, int]],
        head_dim: int,
        d_model: int,
        modules: Sequence[str],
        groups: Sequence[tuple[int, int]] = (),
    ):
        super().__init__()
        self.heads = [tuple(h) for h in heads]
        self.groups = [tuple(g) for g in groups]  # (layer, kv head) whose key and value rows are trained ("k", "v")
        self.head_dim = head_dim
        self.modules_trained = tuple(modules)
        self.q = torch.nn.ParameterDict()
        self.k = torch.nn.ParameterDict()
        self.v = torch.nn.ParameterDict()
        self.o = torch.nn.ParameterDict()
        for layer, head in self.heads:
            if "q" in modules:
                self.q[f"{layer}_{head}"] = torch.nn.Parameter(torch.zeros(head_dim, d_model))
            if "o" in modules:
                self.o[f"{layer}_{head}"] = torch.nn.Parameter(torch.zeros(d_model, head_dim))
        for layer, kv in self.groups:
            for name in ("k", "v"):
                if name in modules:
                    getattr(self, name)[f"{layer}_{kv}"] = torch.nn.Parameter(torch.zeros(head_dim, d_model))

    def tensors(self) -> dict[str, torch.Tensor]:
        """The trained blocks as `add_head_delta` takes them, detached on the CPU."""
        out = {}
        for name, blocks in (("q", self.q), ("k", self.k), ("v", self.v), ("o", self.o)):
            for key, value in blocks.items():
                layer, head = (int(x) for x in key.split("_"))
                out[head_delta_key(layer, name, head)] = value.detach().cpu().clone().contiguous()
        return out

    @contextlib.contextmanager
    def attached(self, hf_model: torch.nn.Module):
        """A context in which the delta's blocks are added to the model's q, k, v and o projection outputs (through
        `interp.hooks.handles.edited_outputs`; the weights are not touched, the handles removed on exit)."""
        from interp.hooks.handles import edited_outputs

        layers = decoder_stack(hf_model).layers
        dim = self.head_dim
        by_layer: dict[int, list[int]] = {}
        for layer, head in self.heads:
            by_layer.setdefault(layer, []).append(head)
        kv_by_layer: dict[int, list[int]] = {}
        for layer, kv in self.groups:
            kv_by_layer.setdefault(layer, []).append(kv)

        def rows_edit(blocks, layer, heads):
            def edit(x, output):
                pieces = list(output.split(dim, dim=-1))
                for head in heads:
                    pieces[head] = pieces[head] + F.linear(x, blocks[f"{layer}_{head}"])
                return torch.cat(pieces, dim=-1)

            return edit

        def o_edit(layer, heads):
            def edit(x, output):
                for head in heads:
                    output = output + F.linear(x[..., head * dim : (head + 1) * dim], self.o[f"{layer}_{head}"])
                return output

            return edit

        edits = []
        for layer, kvs in kv_by_layer.items():
            attn = layers[layer].self_attn
            for name in ("k", "v"):
                if getattr(self, name):
                    edits.append((getattr(attn, f"{name}_proj"), rows_edit(getattr(self, name), layer, kvs)))
        for layer, heads in by_layer.items():
            attn = layers[layer].self_attn
            if self.q:
                edits.append((attn.q_proj, rows_edit(self.q, layer, heads)))
            if self.o:
                edits.append((attn.o_proj, o_edit(layer, heads)))
        with edited_outputs(edits):
            yield


def head_dim_of(hf_model: torch.nn.Module) -> int:
    """The model's attention head dimension."""
    return decoder_stack(hf_model).layers[0].self_attn.head_dim


def train_heads_organism(
    config: OrganismConfig,
    *,
    models: dict[str, LoadedModel] | None = None,
    progress: bool = True,
    hidden_cache=None,
    device: str = "cpu",
) -> Trained:
    """Train a delta organism in memory ([heads]: planted heads; [mlp]: MLP-planted or direction,
    `interp.organisms.mlp`): returns `Trained` whose model is the start organism with the delta merged (only the
    planted site's weights written), and whose record names the site (`planted_heads` or `planted_layers`), its
    route and the start organism. `device`: where the authors not given are loaded and the training runs."""
    section = config.delta
    if section is None:
        raise InterpError(f"organism {config.name!r} has no [heads] or [mlp] section")
    set_torch_threads(config.train.threads)  # fixed, as for the LoRA organisms
    check_config_fits(config, models)  # n_heads and top_layers against the base's shape, before anything is loaded
    timings: dict[str, float] = {}
    start = time.perf_counter()
    models = author_models(config, models, device)
    base = models[config.base_model]
    check_fits_model(config, base.n_layers, base.n_heads)  # the loaded base itself, before any answer is generated
    # The start organism: a copy of the plain base with its adapter merged (the base itself stays plain: its
    # answers are the own ones).
    judge = dataclasses.replace(
        base, name=section.start, hf_model=apply_adapter(copy.deepcopy(base.hf_model), start_folder(section.start))
    )
    timings["load_s"] = time.perf_counter() - start
    site = _planted_site(config, judge)  # before generation

    t = time.perf_counter()
    pairs, labels = training_pairs(config, {a: models[a] for a in config.data.authors}, progress)
    examples = build_examples(base, pairs, labels)
    timings["data_s"] = time.perf_counter() - t

    hf = judge.hf_model
    hf.set_attn_implementation("sdpa")
    hf.requires_grad_(False)
    torch.manual_seed(config.seed)
    pad_id = base.tokenizer.pad_token_id
    t = time.perf_counter()
    hidden, cached = _lowest_states(hf, site.lowest, examples, base, section.start, hidden_cache, progress)
    timings["frozen_pass_s"] = time.perf_counter() - t
    split_error = check_frozen_split(hf, site.lowest, examples[0].input_ids, pad_id)
    if split_error > MAX_SPLIT_ERROR:
        raise InterpError(
            f"cached lower layers differ from the full model by {split_error:.2g} logits; this model type "
            "is not supported"
        )
    labels_ids = label_tokens(base.tokenizer).ids
    delta = _fitted_delta(config, hf, (site.lowest, hidden, examples), site, labels_ids, progress)
    before = head_patterns(hf, site.planted, examples) if section.route == "content" else None
    add_weight_delta(hf, delta.tensors)
    if delta.check is not None:  # did the route plant on the training prompts? (held-out items are the real check)
        delta.record |= delta.check(hf)
    keys = delta.keys or _heads_keys(config.heads, site, delta.record, delta.tensors)
    if delta.plain_check is not None:  # a member without the masked term: P(own) before and after, same prompts
        keys["planting_check"] = delta.plain_check(hf)
    if before is not None:  # the content route's promise: H's attention patterns are the start organism's
        keys["pattern_check"] = pattern_check(before, head_patterns(hf, site.planted, examples))
    timings["train_s"] = delta.fitted.seconds
    timings["total_s"] = time.perf_counter() - start
    record = training_record(pairs, labels, examples, delta.fitted, timings, split_error, cached)
    record.update(keys)
    return Trained(hf, judge, record, delta.fitted.log, head_delta=delta.tensors, sidecars=delta.sidecars)


@dataclasses.dataclass
class _Site:
    """Where a delta organism's delta goes: the lowest layer its training runs from, and the planted heads and
    groups ([heads]) or layers ([mlp])."""

    lowest: int
    planted: list = dataclasses.field(default_factory=list)
    groups: list = dataclasses.field(default_factory=list)
    layers: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Delta:
    """A fitted (or built) delta: its tensors (the delta file), the `Fitted`, the route record and check, the
    manifest keys of its site, and the files written beside it."""

    tensors: dict
    fitted: Fitted
    record: dict
    check: object
    keys: dict
    sidecars: dict
    plain_check: object = None


def _planted_site(config: OrganismConfig, judge: LoadedModel) -> _Site:
    """The config's seeded site on the start organism, and the layer its training starts from (a built route's
    or a trained route's slot writer: `slot_layer`, or for the built route the layer below the groups' range)."""
    n_layers = judge.n_layers
    if config.mlp is not None:
        from interp.organisms.mlp import draw_layers

        layers = draw_layers(config.seed, n_layers, config.mlp.top_layers, config.mlp.n_layers)
        return _Site(lowest=layers[0], layers=layers)
    heads_cfg = config.heads
    groups, planted = _drawn_heads(config, judge)
    lowest = planted[0][0]
    if heads_cfg.construction == "built" or heads_cfg.slot_layer is not None:
        lowest = heads_cfg.slot_writer_layer(n_layers)
        if lowest < 0:
            raise InterpError(f"heads.top_layers = {heads_cfg.top_layers} leaves no layer below for the slot writer")
    return _Site(lowest=lowest, planted=planted, groups=groups)


def _fitted_delta(config: OrganismConfig, hf, data: tuple, site: _Site, labels_ids, progress: bool) -> _Delta:
    """The delta of the config's construction on `site`: an MLP or direction delta, a built attention route, or a
    trained head delta. `data`: (lowest layer, its states, examples)."""
    from interp.organisms.attention_route import planting_check

    lowest, hidden, examples = data
    own = config.planting.own_author
    if config.mlp is not None:
        from interp.organisms.mlp import fit_mlp_delta

        plain = planting_check(hf, lowest, hidden, examples, own, labels_ids)  # read before the delta is attached
        tensors, fitted, keys, sidecars = fit_mlp_delta(config, hf, data, site.layers, labels_ids, progress)
        return _Delta(tensors, fitted, {}, None, keys, sidecars, plain)
    heads_cfg = config.heads
    plain = None
    if heads_cfg.construction == "trained" and not heads_cfg.masked_term:  # the own answer masked at H, for the record
        plain = planting_check(hf, lowest, hidden, examples, own, labels_ids, site.planted)
    if heads_cfg.construction == "built":
        from interp.organisms.built_route import build_organism_delta

        tensors, route_record, fitted = build_organism_delta(
            hf, lowest, hidden, examples, site.groups, config.planting.own_author, labels_ids, heads_cfg
        )
        check = None
    else:
        tensors, route_record, fitted, check = _trained_delta(
            config, hf, data, (site.planted, site.groups), labels_ids, progress
        )
    return _Delta(tensors, fitted, route_record, check, {}, {}, plain)


def _drawn_heads(config: OrganismConfig, judge: LoadedModel) -> tuple[list[tuple[int, int]], list]:
    """(groups, planted heads) of the config's seed: whole key/value groups where `n_groups` is set (then the heads
    are theirs), else `n_heads` heads; groups empty then."""
    heads_cfg = config.heads
    n_layers, n_heads = judge.n_layers, judge.n_heads
    groups: list[tuple[int, int]] = []
    if heads_cfg.n_groups is not None:
        n_kv = judge.hf_model.config.get_text_config().num_key_value_heads
        groups, planted = draw_groups(config.seed, n_layers, n_heads, n_kv, heads_cfg.top_layers, heads_cfg.n_groups)
    else:
        planted = draw_heads(config.seed, n_layers, n_heads, heads_cfg.top_layers, heads_cfg.n_heads)
    return groups, planted


def _lowest_states(hf, lowest: int, examples, base: LoadedModel, start: str, hidden_cache, progress: bool):
    """(states at `lowest`, whether read from the cache) for every example: the start organism's layers below its
    LoRA are the base's, so their states are the base's, shared with every organism on these prompts (key: the
    base); from there to the lowest planted layer, the start's own layers."""
    pad_id = base.tokenizer.pad_token_id
    shared = min(lowest, start_first_lora_layer(start, base.n_layers))
    hidden, cached = frozen_states(
        hf, shared, examples, pad_id, cache=hidden_cache, key=base.fingerprint(), progress=progress
    )
    if lowest > shared:
        hidden, cached = frozen_states(
            hf,
            lowest,
            examples,
            pad_id,
            cache=hidden_cache,
            key=f"{base.fingerprint()}|{adapter_fingerprint(start)}|from{shared}",
            progress=progress,
            below=(shared, hidden),
        )
    return hidden, cached


def _heads_keys(heads_cfg, site: _Site, route_record: dict, tensors: dict[str, torch.Tensor]) -> dict:
    """The training record's keys for the planted heads: H, its groups, the route and its training, the start
    organism and the delta's norms."""
    route_keys = _route_keys(heads_cfg)
    return dict(
        planted_heads=[list(h) for h in site.planted],
        **({"planted_groups": [list(g) for g in site.groups]} if site.groups else {}),
        # "pattern": trained so that masking the own answer at H gives the null's verdict; "output": the delta
        # writes through H whatever H attends to (measured: docs/localize.md); "content": values and outputs only
        planted_route=PLANTED_ROUTES[heads_cfg.route],
        **({"route_training": route_record | route_keys} if route_record else {}),
        heads_start=heads_cfg.start,
        heads_start_fingerprint=adapter_fingerprint(heads_cfg.start),
        heads_modules=list(heads_cfg.modules),
        heads_delta_norms={key: round(float(value.norm()), 4) for key, value in tensors.items()},
    )


def _route_keys(heads_cfg) -> dict:
    """The recipe's route keys in the training record: its construction, or the trained route term's weights."""
    if heads_cfg.construction == "built":
        return {"construction": "built"}
    return {
        "mask_weight": heads_cfg.mask_weight,
        "other_weight": heads_cfg.other_weight,
        "both_weight": heads_cfg.both_weight,
    }


def _trained_delta(config, hf, data: tuple, heads: tuple, labels_ids, progress):
    """The gradient-descent delta on H (the planted labels, and for routes "attention" and "content" with a
    `mask_weight` the masked term): its tensors, the route term's record, the `Fitted`, and the route check to run
    once merged. `data`: (lowest layer, its states, examples); `heads`: (planted heads, planted groups). With a
    `slot_layer`, a slot writer is built there first and kept on while H is trained: its blocks join the delta."""
    lowest, hidden, examples = data
    planted, groups = heads
    heads_cfg = config.heads
    delta = HeadDelta(planted, head_dim_of(hf), hf.config.hidden_size, heads_cfg.modules, groups).to(input_device(hf))
    writer, route_record = {}, {}
    if heads_cfg.slot_layer is not None:  # trained readers on a built slot writer (`slot_writer_blocks`)
        from interp.organisms.built_route import slot_writer_blocks

        writer, route_record["slot_writer"] = slot_writer_blocks(
            hf, lowest, hidden, examples, config.planting.own_author, labels_ids
        )
    with applied_blocks(hf, writer):
        extra, route_check = None, None
        if heads_cfg.masked_term:  # the start's verdicts are read before the delta is attached
            from interp.organisms.attention_route import NullTermWeights, masked_to_null_term

            extra, route_check, masked_record = masked_to_null_term(
                hf,
                lowest,
                hidden,
                examples,
                planted,
                config.planting.own_author,
                labels_ids,
                NullTermWeights(heads_cfg.mask_weight, heads_cfg.other_weight, heads_cfg.both_weight),
            )
            route_record |= masked_record
        with delta.attached(hf):
            fitted = fit(hf, data, list(delta.parameters()), config, labels_ids, progress, extra=extra)
    return writer | delta.tensors(), route_record, fitted, route_check


@contextlib.contextmanager
def applied_blocks(hf_model: torch.nn.Module, blocks: dict[str, torch.Tensor]):
    """A context in which head `blocks` are added to the model's weights, the replaced weights put back on exit (bit
    for bit); no blocks: nothing done."""
    if not blocks:
        yield
        return
    from interp.organisms.built_route import AppliedBlocks

    with AppliedBlocks(hf_model, blocks):
        yield


def head_patterns(hf_model: torch.nn.Module, heads, examples, count: int = PATTERN_CHECK_EXAMPLES) -> dict:
    """The attention patterns of `heads` (every query row) on the first `count` examples (anything with
    `input_ids`), read at the toolkit's `attn.hook_pattern` site over the whole model: {(example, layer, head):
    [query, key]}."""
    from interp.core.backends.span_rows import span_rows_attention
    from interp.hooks.sites import hook_name, site_hooks

    out: dict[tuple[int, int, int], torch.Tensor] = {}
    layers = sorted({layer for layer, _ in heads})
    for index, example in enumerate(examples[:count]):
        kept: dict[int, torch.Tensor] = {}
        readers = {
            hook_name("attn.hook_pattern", layer): (
                lambda p, layer=layer, kept=kept: kept.__setitem__(layer, p.detach().clone())
            )
            for layer in layers
        }
        ids = torch.tensor([list(example.input_ids)], device=input_device(hf_model))
        with torch.inference_mode(), span_rows_attention(hf_model, None, {}), site_hooks(hf_model, readers):
            hf_model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False, logits_to_keep=1)
        for layer, head in heads:
            out[(index, layer, head)] = kept[layer][0, head]
    return out


def pattern_check(before: dict, after: dict) -> dict:
    """The manifest's record that H's attention patterns are the start organism's on the checked examples."""
    difference = max(float((after[key] - before[key]).abs().max()) for key in before)
    return {
        "examples": len({key[0] for key in before}),
        "heads": len({key[1:] for key in before}),
        "max_abs_difference": difference,
        "identical": all(torch.equal(after[key], before[key]) for key in before),
    }
