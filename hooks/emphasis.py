"""PASTA-style attention emphasis as an intervention spec: raise the judge's attention to the other response.

`emphasis_spec(k)` is an `AttentionIntervention` with target "other",
alpha = k > 1 and `emphasis = True`: the post-softmax weights on the other response's keys are multiplied by
k and every query row renormalised. PASTA states the same edit the other way round: multiply the weights on
every key *except* the other response by c < 1 and renormalise. The two are the same intervention when
c = 1/k: scaling the non-target keys by c and renormalising gives p'_j = c p_j / (c S_rest + S_T) for j not
in T and p_j / (c S_rest + S_T) on T; dividing numerator and denominator by c gives p_j / (S_rest + k S_T)
and k p_j / (S_rest + k S_T), i.e. exactly "target times k, renormalised". So `pasta_spec(c)` returns the
emphasis spec with alpha = 1/c and both compile (`interp.hooks.compile.compile_bias`) to the same bias, +log k on the
other span. `complement_bias` writes the PASTA form literally (-log k on every other key of the same query
rows); it differs from the compiled bias by a constant per row, which the softmax ignores (the tests show
equal logits).
"""

from __future__ import annotations

import math
from typing import Literal, Sequence

import torch
from torch import Tensor

from interp.errors import InterpError
from interp.hooks.spec import AttentionIntervention


def emphasis_spec(
    alpha: float = 4.0,
    *,
    heads: Sequence[int] | dict[int, Sequence[int]] | None = None,
    layers: Sequence[int] | None = None,
    queries: Literal["outside", "final"] = "outside",
    name: str | None = "other-emphasis",
) -> AttentionIntervention:
    """Raise attention to the other response: its post-softmax weights times `alpha` (> 1), renormalised.

    `heads`: None = every head, a list = those heads in every chosen layer, or a layer -> heads table (e.g.
    from `emphasis_heads`). Validated like every spec (InterpError); alpha must be > 0.
    """
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
        raise InterpError(f"emphasis alpha must be a finite number > 0, got {alpha!r}")
    return AttentionIntervention(
        target="other",
        alpha=float(alpha),
        layers=tuple(layers) if layers is not None else None,
        heads=heads if heads is None or isinstance(heads, dict) else tuple(heads),
        queries=queries,
        name=name,
        emphasis=True,
    )


def pasta_spec(scale: float = 0.25, **kwargs) -> AttentionIntervention:
    """PASTA form: multiply attention on every key *except* the other response by `scale` (< 1), renormalise.

    Equal to multiplying the other response's weights by 1/scale and renormalising (see the module
    docstring), so this is `emphasis_spec(1 / scale)`: the same spec, the same compiled bias.
    """
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and 0 < scale):
        raise InterpError(f"PASTA scale must be a finite number > 0, got {scale!r}")
    return emphasis_spec(1.0 / scale, **kwargs)


def complement_bias(bias: dict[int, Tensor]) -> dict[int, Tensor]:
    """The PASTA form of a compiled emphasis bias, written literally.

    For every query row the emphasis bias touches (+log k on the target keys), put -log k on every key
    *outside* the target and 0 on it. Per row this is the emphasis bias minus the constant log k; keys the
    causal or padding mask hides stay hidden; rows the bias does not touch stay 0. The softmax is invariant
    to a per-row constant, so both give the same patterns and logits (up to float rounding).
    """
    out = {}
    for layer, b in bias.items():
        if not torch.isfinite(b).all():
            raise InterpError("complement_bias needs a finite bias (alpha > 0); a mask has no complement form")
        target = b != 0
        rows = target.any(-1, keepdim=True)
        value = torch.where(target, b, torch.zeros_like(b)).sum(-1, keepdim=True) / target.sum(
            -1, keepdim=True
        ).clamp_min(1)
        out[layer] = torch.where(rows & ~target, -value, torch.zeros_like(b))
    return out
