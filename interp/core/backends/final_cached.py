"""Verdict-position edits re-judged over the clean pass's cached keys and values, many variants in one batch.

With causal attention, an edit confined to the final (verdict) position changes nothing at any earlier position:
the keys and values of every earlier position are the clean pass's, exactly. So one clean forward of a batch keeps
them (`clean_pass`: a `PrefixCache` of every column but the last, the clean final logits, and the final position's
activation at any named hook points asked for, e.g. a donor's), and then N variants whose edits sit only at the
final position run as N blocks of rows of ONE forward of the final token over that cache (`final_pass`): the
cache is expanded to the N blocks (a view when the clean batch has one row, a copy otherwise), each layer attends
to the cached keys plus the final one, and nothing is stored.

A variant's edit set is an `Edits` in final-row coordinates (`interp.hooks.final_row` builds them from the same
interventions): a score bias `[rows, head|1, 1, T]` (the final query row over every key), residual functions and
named-site functions of the final position's activation `[rows, 1, ...]`. The pass applies them through the same
hook handles as every other pass (`span_rows_attention` for the bias, `site_hooks` for the sites, the decoder
layers' output hooks for the residual), each variant's functions on its own block of rows.

`cached_final_problem` says why a model or batch cannot take this path (a sliding window shorter than the batch:
the window counts cache columns); the caller then runs the full pass. Results equal the full pass up to float
rounding (the tests hold them to 1e-5 in P(A)).
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import torch
from jaxtyping import Float
from torch import Tensor

from interp.core.backends.hf import PrefixCache, resid_edit_hooks
from interp.core.backends.layers import final_logits
from interp.core.backends.protocol import Batch, Edits
from interp.core.backends.shared_prefix import window_covers
from interp.core.backends.span_rows import span_rows_attention
from interp.core.models import LoadedModel
from interp.errors import InterpError
from interp.hooks.sites import site_hooks

PATHS = ("auto", "final_cached", "full")  # how a re-judging runs: choose, the cached final row, the full pass


@dataclass
class CleanCache:
    """One clean pass of a left-padded batch: the keys and values of every column but the last (`cache`, frozen:
    a later pass reads it without growing it), what the final position's pass needs (its token, position and the
    batch's attention mask), the clean final logits and the final position's activation at each hook point kept
    (`sites`: name -> `[rows, 1, ...]`)."""

    cache: PrefixCache
    final_ids: Tensor  # [rows, 1]
    position_ids: Tensor  # [rows, 1]
    attention_mask: Tensor  # [rows, T]
    logits: Float[Tensor, "rows vocab"]
    sites: dict[str, Tensor] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        """The clean batch's rows."""
        return int(self.final_ids.shape[0])

    @property
    def width(self) -> int:
        """The clean batch's width, the final column included."""
        return int(self.attention_mask.shape[1])

    def row(self, index: int) -> "CleanCache":
        """Row `index` of the clean batch alone, as views of this pass's tensors (its variants then expand it to
        their blocks of rows without a copy)."""
        cache = copy.copy(self.cache)
        cache.layers = []
        for layer in self.cache.layers:
            alone = copy.copy(layer)
            alone.keys, alone.values = layer.keys[index : index + 1], layer.values[index : index + 1]
            cache.layers.append(alone)
        pick = slice(index, index + 1)
        return CleanCache(
            cache,
            self.final_ids[pick],
            self.position_ids[pick],
            self.attention_mask[pick],
            self.logits[pick],
            {name: tensor[pick] for name, tensor in self.sites.items()},
        )


def cached_final_problem(model: LoadedModel, width: int) -> str | None:
    """Why the cached final-row path cannot run a batch of `width` columns on `model` (None: it can)."""
    if width < 2:
        return "a one-token prompt has no earlier position to cache"
    if not window_covers(model.hf_model, width):
        return "a sliding attention window shorter than the prompt counts cache columns differently"
    return None


def _keeper(name: str, into: dict[str, Tensor]) -> Callable[[Tensor], None]:
    def keep(activation: Tensor) -> None:
        into[name] = activation[:, -1:].detach().clone()

    return keep


def clean_pass(model: LoadedModel, batch: Batch, *, keep: Sequence[str] = (), eager: bool = False) -> CleanCache:
    """The batch's clean forward, its keys and values kept for the final row (see the module docstring); `keep`:
    hook point names whose final-position activation is kept too (read only: the pass is unedited)."""
    problem = cached_final_problem(model, batch.input_ids.shape[1])
    if problem is not None:
        raise InterpError(f"the cached final-position path cannot run this batch: {problem}")
    hf_model = model.hf_model
    batch = batch.to(model.device)
    cache = PrefixCache(config=hf_model.config)
    kept: dict[str, Tensor] = {}
    with (
        torch.inference_mode(),
        span_rows_attention(hf_model, None, eager=eager),
        site_hooks(hf_model, {name: _keeper(name, kept) for name in keep}),
    ):
        out = hf_model(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            position_ids=batch.position_ids,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
    for layer in cache.layers:  # the final column's keys and values go: a variant's final row makes its own
        layer.keys, layer.values = layer.keys[..., :-1, :], layer.values[..., :-1, :]
    cache.frozen = True
    return CleanCache(
        cache,
        batch.input_ids[:, -1:],
        batch.position_ids[:, -1:],
        batch.attention_mask,
        final_logits(out.logits),
        kept,
    )


@contextlib.contextmanager
def _expanded(cache: PrefixCache, blocks: int) -> Iterator[PrefixCache]:
    """The cache's keys and values repeated for `blocks` blocks of rows (block-major) during the block: a view
    (`expand`) when the clean batch has one row, else a copy; the clean tensors are put back after."""
    kept = [(layer.keys, layer.values) for layer in cache.layers]
    try:
        for layer, (keys, values) in zip(cache.layers, kept, strict=True):
            if keys.shape[0] == 1:
                layer.keys, layer.values = keys.expand(blocks, -1, -1, -1), values.expand(blocks, -1, -1, -1)
            else:
                layer.keys, layer.values = keys.repeat(blocks, 1, 1, 1), values.repeat(blocks, 1, 1, 1)
        yield cache
    finally:
        for layer, (keys, values) in zip(cache.layers, kept, strict=True):
            layer.keys, layer.values = keys, values


def check_final_row(edits: Edits, rows: int, width: int) -> None:
    """An edit set is in final-row coordinates: every score bias is `[rows|1, head|1, 1, width]` (else one line:
    an edit at other query positions cannot run over the cached keys)."""
    for layer, bias in edits.score_bias.items():
        if bias.ndim != 4 or bias.shape[2] != 1 or bias.shape[3] != width or bias.shape[0] not in (1, rows):
            raise InterpError(
                f"layer {layer}: a score bias of shape {tuple(bias.shape)} is not the final query row of a "
                f"{rows} x {width} batch; an edit at other positions runs the full pass"
            )


def _blockwise(functions: Sequence[Callable | None], rows: int) -> Callable[[Tensor], Tensor]:
    """One function over `len(functions)` blocks of `rows` rows: block i through `functions[i]` (None: as it is)."""

    def apply(activation: Tensor) -> Tensor:
        parts = []
        for index, fn in enumerate(functions):
            part = activation[index * rows : (index + 1) * rows]
            edited = fn(part) if fn is not None else None
            parts.append(part if edited is None else edited.to(part.dtype))
        return torch.cat(parts)

    return apply


def _merged_bias(edits: Sequence[Edits], rows: int, width: int, n_heads: int) -> dict[int, Tensor]:
    """Each layer's bias over every block of rows (zeros for a block without one there)."""
    layers = sorted({layer for e in edits for layer in e.score_bias})
    merged = {}
    for layer in layers:
        found = [e.score_bias.get(layer) for e in edits]
        heads = n_heads if any(b is not None and b.shape[1] != 1 for b in found) else 1
        like = next(b for b in found if b is not None)
        blocks = [
            torch.zeros(rows, heads, 1, width, dtype=like.dtype)
            if b is None
            else b.expand(rows, heads, 1, width).to(like.dtype)
            for b in found
        ]
        merged[layer] = torch.cat(blocks)
    return merged


def merged_edits(edits: Sequence[Edits | None], rows: int, width: int, n_heads: int) -> Edits:
    """The edit sets of several variants as one over their blocks of rows (block i = variant i's `rows` rows)."""
    edits = [e or Edits() for e in edits]
    for e in edits:
        check_final_row(e, rows, width)
    resid = {
        layer: _blockwise([e.resid.get(layer) for e in edits], rows)
        for layer in sorted({layer for e in edits for layer in e.resid})
    }
    sites = {
        name: _blockwise([e.sites.get(name) for e in edits], rows)
        for name in dict.fromkeys(n for e in edits for n in e.sites)
    }
    return Edits(_merged_bias(edits, rows, width, n_heads), resid, sites)


def final_pass(
    model: LoadedModel, clean: CleanCache, edits: Sequence[Edits | None], *, eager: bool = False
) -> Float[Tensor, "variant rows vocab"]:
    """The final-position logits of the clean batch under each edit set (final-row coordinates, module docstring),
    all of them as one forward of the final token over the clean keys and values."""
    if not edits:
        return torch.zeros(0, clean.rows, clean.logits.shape[-1])
    blocks, rows = len(edits), clean.rows
    merged = merged_edits(edits, rows, clean.width, model.n_heads)
    hf_model = model.hf_model
    handles = resid_edit_hooks(hf_model, merged.resid)
    try:
        with (
            torch.inference_mode(),
            _expanded(clean.cache, blocks) as cache,
            span_rows_attention(hf_model, None, merged.score_bias, eager=eager),
            site_hooks(hf_model, merged.sites),
        ):
            out = hf_model(
                input_ids=clean.final_ids.repeat(blocks, 1),
                attention_mask=clean.attention_mask.repeat(blocks, 1),
                position_ids=clean.position_ids.repeat(blocks, 1),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            )
    finally:
        for handle in handles:
            handle.remove()
    return final_logits(out.logits).reshape(blocks, rows, -1)
