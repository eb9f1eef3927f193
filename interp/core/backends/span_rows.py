"""The one attention mechanism of the hf and nnsight backends: SDPA output plus the exact eager rows a
reducer reads, with every intervention's pre-softmax bias.

Inside `span_rows_attention(hf_model, rows, score_bias)` every decoder self-attention module (`*.self_attn`)
runs this implementation instead of its own:

- the layer output comes from SDPA (`sdpa_attention_forward`), with the layer's additive pre-softmax bias
  (if any) folded into the mask, so an intervention never needs eager attention;
- the layer's attention weights (`output[1]`, what forward hooks and nnsight's `self_attn.output[1]` see)
  are the LAST `rows` query rows only, `Float[Tensor, "batch head rows key"]` in float32, computed by the
  model family's own `eager_attention_forward` on `query[:, :, -rows:]` with the same mask and bias rows.
  Scaling, softcapping, grouped-query heads (repeat_kv), sliding windows (already in each layer's mask)
  are therefore the family's own, and the rows equal eager attention's rows up to float rounding.

Coordinates: queries are the query positions of this pass (all positions of a plain pass; only the new
positions of a pass that continues a cache), keys are every key position of the layer (cache included).
The last row is the last position of the batch; with left padding it is every row's final token.
`score_bias[layer]` is `Float[Tensor, "batch head|1 query key"]` in those coordinates, added to the additive
mask exactly as eager attention would see it (a boolean mask becomes 0 / dtype-min first; -inf entries
remove keys).

The mask: the registered mask function is transformers' `sdpa_mask` with `allow_is_causal_skip=False`, so
every layer receives a materialised boolean mask (never None, which SDPA's `is_causal` shortcut would
give for unpadded batches) to slice rows from. A layer whose mask arrives already prepared (a 4-D mask
passed by the caller) is used as it is, boolean or additive.

`rows` at least the query length asks for the whole pattern (eager rows on every query, beside the SDPA
output). A `softcap` keyword (Gemma-2 style logit softcapping, which SDPA cannot do) runs the layer on the
family's eager attention alone. With `eager=True` (a backend's `attn_implementation="eager"`) every layer runs the
family's eager attention: the reference, bit-identical to eager attention with the bias added to its mask.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from jaxtyping import Float
from torch import Tensor

from interp.core.backends.layers import attention_modules
from interp.core.backends.protocol import PatternHook, RowAwareHook
from interp.hooks.sites import INNER_ATTR, InnerSites

IMPLEMENTATION = "interp_span_rows"
ALL_ROWS = sys.maxsize  # `rows=ALL_ROWS`: every query row (the layer then runs eager attention alone)
_REQUEST_ATTR = "_interp_span_rows"


@dataclass(frozen=True)
class _Request:
    """What one attention module is asked for during the block: last `rows` query rows and a bias."""

    rows: int | None
    bias: Float[Tensor, "batch head|1 query key"] | None
    eager: bool = False  # the reference: the layer output from the family's eager attention too


def span_rows_mask(**kwargs) -> Tensor:
    """`sdpa_mask` that never skips the mask for a pure-causal batch: a boolean `[batch, 1, query, key]`."""
    from transformers.masking_utils import sdpa_mask

    kwargs["allow_is_causal_skip"] = False
    return sdpa_mask(**kwargs)


def _additive(mask: Tensor, bias: Tensor | None, dtype: torch.dtype) -> Tensor:
    """The additive mask eager attention adds to its scores: a boolean mask as 0 / dtype-min, plus the bias."""
    if mask.dtype == torch.bool:
        mask = torch.where(mask, torch.zeros((), device=mask.device, dtype=dtype), torch.finfo(dtype).min)
    if bias is None:
        return mask
    bias = bias.to(device=mask.device)
    return mask[..., : bias.shape[-1]] + bias


def _family_eager(module: torch.nn.Module):
    eager = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if eager is None:
        raise RuntimeError(f"{type(module).__name__}: its modeling module has no eager_attention_forward")
    return eager


def span_rows_attention_forward(
    module: torch.nn.Module,
    query: Float[Tensor, "batch head query dim"],
    key: Float[Tensor, "batch kv_head key dim"],
    value: Float[Tensor, "batch kv_head key dim"],
    attention_mask: Tensor | None,
    **kwargs,
) -> tuple[Tensor, Float[Tensor, "batch head rows key"] | None]:
    """The attention function registered as `IMPLEMENTATION` (the `AttentionInterface` signature)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    request = getattr(module, _REQUEST_ATTR, None) or _Request(None, None)
    rows, bias, softcap = request.rows, request.bias, kwargs.get("softcap")
    inner = getattr(module, INNER_ATTR, None)
    if inner is not None:
        if attention_mask is None:
            raise RuntimeError(
                f"{type(module).__name__}: no attention mask reached the layer to compute its pattern with"
            )
        return _with_inner_sites(
            module, inner, query, key, value, _additive(attention_mask, bias, query.dtype), rows, **kwargs
        )
    if rows is None and bias is None and softcap is None and not request.eager:  # nothing asked: transformers' SDPA
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    if attention_mask is None:
        raise RuntimeError(f"{type(module).__name__}: no attention mask reached the layer to bias or take rows from")
    eager = _family_eager(module)
    if request.eager or softcap is not None:  # the reference, or softcapping (which SDPA cannot do): eager alone
        output, weights = eager(module, query, key, value, _additive(attention_mask, bias, query.dtype), **kwargs)
        return output, None if rows is None else weights[:, :, -min(rows, query.shape[2]) :].float()
    rows = None if rows is None else min(rows, query.shape[2])
    if bias is None:  # SDPA gets the mask as transformers' own SDPA path would; only the rows become additive
        output, _ = sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
        row_mask = _additive(attention_mask[:, :, -rows:], None, query.dtype)
    else:
        mask = _additive(attention_mask, bias, query.dtype)
        output, _ = sdpa_attention_forward(module, query, key, value, mask.to(query.dtype), **kwargs)
        if rows is None:
            return output, None
        row_mask = mask[:, :, -rows:]
    _, weights = eager(module, query[:, :, -rows:], key, value, row_mask, **kwargs)
    return output, weights.float()


def _with_inner_sites(
    module: torch.nn.Module,
    inner: InnerSites,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor,
    rows: int | None,
    **kwargs,
) -> tuple[Tensor, Tensor | None]:
    """The layer as pattern x values, each through its hook point (`interp.hooks.sites`, "attn.hook_pattern" and
    "attn.hook_v"): the pattern is the family's eager one (scaling, softcapping, the mask and bias), the values
    are the key/value heads' repeated per query head, so the output equals eager attention's where nothing is
    edited."""
    _, weights = _family_eager(module)(module, query, key, value, mask, **kwargs)
    groups = query.shape[1] // value.shape[1]
    values = value.repeat_interleave(groups, dim=1) if groups > 1 else value  # head h reads key/value head h // groups
    values = inner.run("v", values.transpose(1, 2)).transpose(1, 2)  # the point's layout: [batch, pos, head, d_head]
    weights = inner.run("pattern", weights)
    inner.calls += 1
    output = torch.matmul(weights.to(values.dtype), values).transpose(1, 2).contiguous()
    return output, None if rows is None else weights[:, :, -min(rows, query.shape[2]) :].float()


def register() -> None:
    """Register the attention function and its mask function with transformers (idempotent)."""
    from transformers import AttentionInterface, AttentionMaskInterface

    AttentionInterface.register(IMPLEMENTATION, span_rows_attention_forward)
    AttentionMaskInterface.register(IMPLEMENTATION, span_rows_mask)


def rows_for(on_pattern: PatternHook | None) -> int | None:
    """The query rows a pass computes patterns for: none without a pattern hook, the rows a `RowAwareHook`
    reads, else every row."""
    if on_pattern is None:
        return None
    return on_pattern.rows_read if isinstance(on_pattern, RowAwareHook) else ALL_ROWS


@contextlib.contextmanager
def span_rows_attention(
    hf_model: torch.nn.Module,
    rows: int | None,
    score_bias: dict[int, Float[Tensor, "batch head|1 query key"]] | None = None,
    *,
    eager: bool = False,
) -> Iterator[None]:
    """Run the model's attention layers as SDPA for the block, each returning its last `rows` query rows.

    `rows=None`: no rows (each layer returns None as its weights), only the fast output, biased where
    `score_bias` says (softcapping layers still run eager). `rows >= query length` (e.g. `ALL_ROWS`): the
    whole pattern, computed by eager attention beside the SDPA output (so capturing patterns never changes
    the logits). `eager=True`: the reference, every layer's output and pattern from the family's eager
    attention. The request reaches each layer as one attribute on its attention module; the block always
    restores `config._attn_implementation` and removes them.
    """
    if rows is not None and rows < 1:
        raise ValueError(f"rows must be a positive number of query rows or None, not {rows}")
    score_bias = score_bias or {}
    modules = [module for _, module in attention_modules(hf_model)]
    unknown = sorted(set(score_bias) - set(range(len(modules))))
    if unknown:
        raise ValueError(f"score_bias names layers {unknown}; the model has {len(modules)}")
    # A bias of zeros changes nothing, and leaving it out keeps SDPA on its boolean-mask path: alpha = 1
    # then reproduces the unhooked pass bit for bit (layers often share one bias tensor: test each once).
    zero = {id(bias): not bool(bias.any()) for bias in score_bias.values()}
    score_bias = {layer: bias for layer, bias in score_bias.items() if not zero[id(bias)]}
    register()
    config = hf_model.config
    previous = config._attn_implementation
    try:
        for layer, module in enumerate(modules):
            bias = score_bias.get(layer)
            if rows is not None or bias is not None or eager:
                setattr(module, _REQUEST_ATTR, _Request(rows, bias, eager))
        config._attn_implementation = IMPLEMENTATION
        yield
    finally:
        config._attn_implementation = previous
        for module in modules:
            if hasattr(module, _REQUEST_ATTR):
                delattr(module, _REQUEST_ATTR)
