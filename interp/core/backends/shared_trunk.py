"""Judges whose lower layers hold the same weights run those layers once per batch.

An organism is its base model with a LoRA adapter on its top layers only (SmolLM2's top 8 of 30), merged: its
lower 22 layers and token embeddings are the base's, bit for bit. Judging the same prompts with the base and
its organisms, the lower layers' hidden states (and their attention patterns) are the same for every one of
them; `SharedTrunkBackend` computes them once per batch (`Trunk`, kept for the whole run) and runs each judge
only through its own top layers, fed the trunk's hidden states (`inputs_embeds`), as organism training does
with its frozen lower layers (`interp.organisms.frozen.frozen_states`). A score bias (an attention mask or
dampening) is the same for every judge of the group when their prompts are the same: the trunk applies its
lower layers' part, keyed by the bias, and each judge its own layers' part. A node intervention (a site edit:
head outputs, MLP outputs, a head's pattern or values) or a residual edit (steering) whose layers all lie in
the judge's own layers leaves the trunk as it is: the trunk's entry is shared with the clean pass, and only
the judge's top layers run under the edit (a route part's counterfactual and patched passes, a mean-ablated
reader: 8 layers of 30).

`shared_layers(a, b)` says how many bottom layers two models share (their weights compared, not their names);
`trunk_backends` gives each judge of a run its backend: the shared one where another judge of the run
shares at least half of its layers, the plain one otherwise; `TrunkPool` does the same for judges that come
one at a time (the causal test's tested and control judges). A pass with an edit reaching into the trunk's
layers (a residual edit or a site edit) runs the plain backend. Results equal the plain pass up to float
rounding (the lower layers see the same inputs; only the prefix-sharing layout differs).
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping

import torch
from torch import Tensor

from interp.core.backends.hf import HFBackend, resid_edit_hooks
from interp.core.backends.layers import attention_modules, final_logits
from interp.core.backends.protocol import Backend, Batch, Edits, PatternHook, ScoreBias, edit_hooks
from interp.core.backends.span_rows import rows_for, span_rows_attention
from interp.core.models import LoadedModel
from interp.core.weight_sharing import same_tensor
from interp.hooks.sites import output_hook, site_hooks, site_layer

MIN_SHARED_SHARE = 0.5  # share at least half the layers, or a judge runs its plain backend


def decoder_stack(hf_model: torch.nn.Module) -> torch.nn.Module:
    """The module holding the decoder's `layers` and `embed_tokens` (peft's base model's, for a peft model)."""
    base = hf_model.get_base_model() if hasattr(hf_model, "get_base_model") else hf_model
    return base.model


@contextlib.contextmanager
def layers_between(hf_model: torch.nn.Module, start: int, stop: int | None = None) -> Iterator[None]:
    """Run the model's forward through decoder layers `start:stop` only (feed layer `start`'s input as
    `inputs_embeds` when start > 0); the config's per-layer `layer_types` are sliced alike. The full stack
    is put back after."""
    stack = decoder_stack(hf_model)
    full = stack.layers
    config = getattr(stack, "config", None)
    types = getattr(config, "layer_types", None)  # per-layer attention kinds (Gemma-3), read by layer position
    stack.layers = torch.nn.ModuleList(list(full)[start:stop])
    if types is not None:
        config.layer_types = list(types)[start:stop]
    try:
        yield
    finally:
        stack.layers = full
        if types is not None:
            config.layer_types = types


def _same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    if a is b:
        return True
    ta = dict(a.named_parameters()) | dict(a.named_buffers())
    tb = dict(b.named_parameters()) | dict(b.named_buffers())
    return ta.keys() == tb.keys() and all(same_tensor(ta[k], tb[k]) for k in ta)  # shared tensors: nothing read


def shared_layers(a: torch.nn.Module, b: torch.nn.Module) -> int:
    """How many decoder layers, from the bottom, two models hold with the same weights (0 when their classes or
    token embeddings differ)."""
    if type(a) is not type(b):
        return 0
    try:
        sa, sb = decoder_stack(a), decoder_stack(b)
        if not _same_weights(sa.embed_tokens, sb.embed_tokens):
            return 0
        layers_a, layers_b = list(sa.layers), list(sb.layers)
    except AttributeError:  # not a decoder stack with `embed_tokens` and `layers`
        return 0
    count = 0
    for la, lb in zip(layers_a, layers_b, strict=False):
        if not _same_weights(la, lb):
            break
        count += 1
    return count


@dataclass
class _Entry:
    hidden: Tensor  # [batch, pos, d_model]: the output of the trunk's last layer
    patterns: dict[int, Tensor]  # layer -> the pattern the trunk pass gave its hook (the rows asked for)
    reads: int = 0

    @property
    def nbytes(self) -> int:
        return self.hidden.nbytes + sum(p.nbytes for p in self.patterns.values())


def _digest(batch: Batch, rows: int | None, score_bias: ScoreBias) -> tuple:
    """The key of a trunk pass: the batch's tokens and mask, the rows asked for, and the lower layers' bias
    (a tensor shared by several layers is hashed once)."""
    h = hashlib.sha256(batch.input_ids.cpu().numpy().tobytes() + batch.attention_mask.cpu().numpy().tobytes())
    seen: dict[int, str] = {}
    for layer in sorted(score_bias):
        bias = score_bias[layer]
        if id(bias) not in seen:
            seen[id(bias)] = hashlib.sha256(
                bias.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()  # bfloat16 has no numpy type
                + str((tuple(bias.shape), bias.dtype)).encode()
            ).hexdigest()
        h.update(f"|{layer}:{seen[id(bias)]}".encode())
    return (h.hexdigest(), tuple(batch.input_ids.shape), rows)


@dataclass
class Trunk:
    """The lower `layers` of `model`, run once per batch (and score bias): each batch's hidden states and
    patterns, kept until all `readers` (the judges sharing them) have read them. `readers=None` (judges that
    come one at a time, each over all the batches): kept while they fit in `max_bytes`, the oldest dropped first."""

    model: LoadedModel
    layers: int
    readers: int | None = 1
    max_bytes: int = 1 << 30
    entries: dict[tuple, _Entry] = field(default_factory=dict)
    passes: int = 0  # trunk passes run (a test counts them)

    def of(self, batch: Batch, rows: int | None, score_bias: ScoreBias | None = None) -> _Entry:
        key = _digest(batch, rows, score_bias or {})
        if key not in self.entries:
            self.entries[key] = self._run(batch, rows, score_bias or {})
            self.passes += 1
        entry = self.entries[key]
        entry.reads += 1
        if self.readers is not None and entry.reads >= self.readers:  # every judge sharing it has read it
            del self.entries[key]
        elif self.readers is None:
            while len(self.entries) > 1 and sum(e.nbytes for e in self.entries.values()) > self.max_bytes:
                del self.entries[next(iter(self.entries))]
        return entry

    def _run(self, batch: Batch, rows: int | None, score_bias: ScoreBias) -> _Entry:
        hf_model = self.model.hf_model
        batch = batch.to(self.model.device)
        patterns: dict[int, Tensor] = {}
        captured: dict[str, Tensor] = {}
        with layers_between(hf_model, 0, self.layers):
            modules = attention_modules(hf_model)
            handles = []
            if rows is not None:
                for layer, (_, module) in enumerate(modules):
                    handles.append(
                        output_hook(
                            module, lambda out, layer=layer: patterns.__setitem__(layer, out[1].detach().clone())
                        )
                    )
            last = decoder_stack(hf_model).layers[self.layers - 1]
            handles.append(
                output_hook(
                    last,
                    lambda out: captured.__setitem__("h", (out[0] if isinstance(out, tuple) else out).detach().clone()),
                )
            )
            try:
                with torch.inference_mode(), span_rows_attention(hf_model, rows, score_bias):
                    hf_model(
                        input_ids=batch.input_ids,
                        attention_mask=batch.attention_mask,
                        position_ids=batch.position_ids,
                        use_cache=False,
                        logits_to_keep=1,
                    )
            finally:
                for handle in handles:
                    handle.remove()
        return _Entry(captured["h"], patterns)


@dataclass
class SharedTrunkBackend:
    """The hf backend of a judge whose lower `trunk.layers` layers are `trunk.model`'s: those run once per
    batch (shared with every judge on the same `Trunk`), this judge's own layers run on their output."""

    model: LoadedModel
    trunk: Trunk
    plain: HFBackend
    name: str = "hf"
    shares_prefix: bool = True  # passed on to the plain backend, which runs biased and edited passes

    def forward(
        self,
        batch: Batch,
        *,
        edits: Edits | None = None,
        on_pattern: PatternHook | None = None,
        shared_prefix: int = 0,
    ) -> Tensor:
        """The judge's layers above the shared trunk (whose pass is cached per batch and bias); an edit inside the
        trunk's layers runs the plain pass."""
        edits = edit_hooks(self).applied(batch, edits) or Edits()  # the standing edits (`dampen`), then these
        score_bias, resid_edit, site_edit = edits.score_bias or None, edits.resid or None, edits.sites or None
        start = self.trunk.layers
        nodes_below = any((layer := site_layer(name)) is None or layer < start for name in site_edit or {})
        if (resid_edit and min(resid_edit) < start) or nodes_below:
            # an edit in the trunk's layers (of the residual stream, or of a node; a malformed node name too, which
            # the plain pass refuses in one line): the plain pass
            return self.plain.forward(batch, edits=edits, on_pattern=on_pattern, shared_prefix=shared_prefix)
        rows = rows_for(on_pattern)
        score_bias = score_bias or {}
        entry = self.trunk.of(batch, rows, {layer: bias for layer, bias in score_bias.items() if layer < start})
        own_bias = {
            layer - start: bias for layer, bias in score_bias.items() if layer >= start
        }  # this judge's layers, counted from its first
        if on_pattern is not None:
            for layer in range(start):
                on_pattern(layer, entry.patterns[layer])
        hf_model = self.model.hf_model
        batch = batch.to(self.model.device)
        # the edits' hooks go on the full stack (they count layers from the bottom), then it is cut
        nodes = site_hooks(hf_model, site_edit) if site_edit else contextlib.nullcontext()
        handles = resid_edit_hooks(hf_model, resid_edit or {})
        with contextlib.ExitStack() as stack:
            stack.callback(lambda: [handle.remove() for handle in handles])
            stack.enter_context(nodes)
            stack.enter_context(layers_between(hf_model, start))
            if on_pattern is not None:
                for offset, (_, module) in enumerate(attention_modules(hf_model)):
                    handles.append(output_hook(module, lambda out, layer=start + offset: on_pattern(layer, out[1])))
            with torch.inference_mode(), span_rows_attention(hf_model, rows, own_bias):
                out = hf_model(
                    inputs_embeds=entry.hidden.to(self.model.device),
                    attention_mask=batch.attention_mask,
                    position_ids=batch.position_ids,
                    use_cache=False,
                    logits_to_keep=1,
                )
        return final_logits(out.logits)


def trunk_backends(models: Mapping[str, LoadedModel], *, min_share: float = MIN_SHARED_SHARE) -> dict[str, Backend]:
    """An hf backend for each judge: a `SharedTrunkBackend` where another judge shares at least `min_share`
    of its layers (every judge of such a group on one `Trunk`: the fewest layers any two of them share), a
    plain `HFBackend` otherwise. Sharded models (a device map) always run plain."""
    names = list(models)
    groups: list[list[str]] = []
    for name in names:
        model = models[name]
        for group in groups:
            if (
                model.placement.device_map is None
                and shared_layers(models[group[0]].hf_model, model.hf_model) >= min_share * model.n_layers
            ):
                group.append(name)
                break
        else:
            groups.append([name])
    backends: dict[str, Backend] = {}
    for group in groups:
        if len(group) < 2 or models[group[0]].placement.device_map is not None:
            backends |= {name: HFBackend(models[name]) for name in group}
            continue
        first = models[group[0]]
        depth = min(shared_layers(first.hf_model, models[name].hf_model) for name in group[1:])
        depth = min(depth, *(models[name].n_layers - 1 for name in group))  # each judge runs a layer of its own
        trunk = Trunk(first, depth, readers=len(group))
        backends |= {name: SharedTrunkBackend(models[name], trunk, HFBackend(models[name])) for name in group}
    return backends


@dataclass
class TrunkPool:
    """Hf backends for judges that come one at a time (a job's tested and control judges, each judged over all
    the items in turn): a judge sharing at least `min_share` of its layers with a model already held gets a
    `SharedTrunkBackend` on one `Trunk` with it, whose entries are kept for the later judges (`readers=None`)."""

    min_share: float = MIN_SHARED_SHARE
    trunks: list[Trunk] = field(default_factory=list)

    def backend(self, model: LoadedModel, held: Iterable[LoadedModel]) -> Backend:
        plain = HFBackend(model)
        if model.placement.device_map is not None:
            return plain
        for trunk in self.trunks:
            if trunk.layers < model.n_layers and (
                trunk.model is model or shared_layers(trunk.model.hf_model, model.hf_model) >= trunk.layers
            ):
                return SharedTrunkBackend(model, trunk, plain)
        for other in held:
            if other is model or other.placement.device_map is not None:
                continue
            depth = shared_layers(other.hf_model, model.hf_model)
            if depth >= self.min_share * model.n_layers:
                trunk = Trunk(other, min(depth, model.n_layers - 1, other.n_layers - 1), readers=None)
                self.trunks.append(trunk)
                return SharedTrunkBackend(model, trunk, plain)
        return plain
