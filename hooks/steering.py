"""Activation steering as data: an edit of the residual stream after one decoder block, along a direction.

`steer(direction, layer, coefficient, mode, positions)` returns an `edit` builder for
`judge_batch(..., edit=)` / `run_judging(..., edit_for=)` / `causal.rejudge(..., edit_for=)`:

- mode "add": h + coefficient * u at the chosen positions (u the unit direction; a negative coefficient is
  the reversal); coefficient 0 is an identity that returns the residual tensor itself (bit-identical logits);
- mode "project_out": h - coefficient * (h.u) u; coefficient 1 (the default use) removes the component, so
  h'.u = 0 up to float32 rounding (about 1e-7 relative to |h|).

Positions: "all" = every non-padding token, "spans" = the tokens of both response spans (A and B; the edit
is author-blind so it needs no authors), "final" = the last position.

`ResidualSteering` is the same edit as a small frozen spec (what the experiments log, sweep and key results
by); its identity holds a hash of the direction's values, never the tensor.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Literal, Sequence

import numpy as np
import torch
from torch import Tensor

from interp.core.backends import Batch, ResidEdit
from interp.core.judge import EditBuilder
from interp.core.spans import TokenizedPrompt
from interp.errors import InterpError

EDIT_POSITIONS = ("all", "spans", "final")
MODES = ("add", "project_out")
EditPositions = Literal["all", "spans", "final"]
Mode = Literal["add", "project_out"]


def unit_vector(direction) -> Tensor:
    """The direction (a tensor, or anything with a `.vector`) as a float32 unit vector."""
    vector = direction.vector if hasattr(direction, "vector") else torch.as_tensor(direction)
    vector = vector.detach().float().flatten()
    norm = vector.norm()
    if not torch.isfinite(norm) or norm == 0:
        raise InterpError("the steering direction has zero or non-finite norm")
    return vector / norm


def vector_sha(vector: Tensor) -> str:
    return hashlib.sha256(vector.detach().float().cpu().contiguous().numpy().tobytes()).hexdigest()[:16]


def _identity(h: Tensor) -> Tensor:
    return h


def position_mask(
    batch: Batch, offsets: Sequence[int], prompts: Sequence[TokenizedPrompt] | None, positions: str
) -> Tensor:
    """[batch, pos] 0/1 mask of the positions to edit (left-padded batch; padding is never edited)."""
    rows, width = batch.input_ids.shape
    if positions == "all":
        return batch.attention_mask.clone()
    mask = torch.zeros(rows, width, dtype=torch.long)
    if positions == "final":
        mask[:, -1] = 1
        return mask
    if positions == "spans":
        if prompts is None:
            raise InterpError("positions 'spans' needs the tokenized prompts (their response spans)")
        for row, (prompt, off) in enumerate(zip(prompts, offsets, strict=False)):
            for slot in ("a", "b"):
                start, end = prompt.spans[slot]
                mask[row, off + start : off + end] = 1
        return mask
    raise InterpError(f"positions must be one of {', '.join(EDIT_POSITIONS)}, not {positions!r}")


def steer(
    direction,
    layer: int,
    coefficient: float,
    mode: Mode = "add",
    positions: EditPositions = "all",
) -> EditBuilder:
    """An `edit` builder that steers the residual stream after block `layer` along `direction`.

    `direction`: a `SteeringDirection` or a [d_model] tensor (normalised here to the unit vector u).
    mode "add": h + coefficient * u (negative = reversal); "project_out": h - coefficient * (h.u) u
    (coefficient 1 = removal). Only the chosen `positions` ("all" non-padding tokens, both response "spans",
    or the "final" position) change. coefficient 0 returns the residual tensor itself: bit-identical logits.
    The returned builder has the signature `judge_batch(..., edit=)` expects.
    """
    if mode not in MODES:
        raise InterpError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if positions not in EDIT_POSITIONS:
        raise InterpError(f"positions must be one of {', '.join(EDIT_POSITIONS)}, not {positions!r}")
    if not (isinstance(coefficient, (int, float)) and math.isfinite(coefficient)):
        raise InterpError(f"coefficient must be a finite number, got {coefficient!r}")
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or layer < 0:
        raise InterpError(f"layer must be a non-negative integer, got {layer!r}")
    unit = unit_vector(direction)
    layer, coefficient = int(layer), float(coefficient)

    def build(batch: Batch, offsets: list[int], prompts: Sequence[TokenizedPrompt] | None) -> ResidEdit:
        if coefficient == 0:
            return {layer: _identity}
        mask = position_mask(batch, offsets, prompts, positions)

        def edit(h: Tensor) -> Tensor:
            if h.shape[-1] != unit.shape[0]:
                raise InterpError(
                    f"direction has {unit.shape[0]} dimensions but the residual stream at layer {layer} has "
                    f"{h.shape[-1]}"
                )
            m = mask.to(h.device)[..., None]
            if mode == "add":
                return h + (coefficient * m).to(h.dtype) * unit.to(h.device, h.dtype)
            u = unit.to(h.device, torch.float64)
            wide = h.double()
            component = (wide @ u)[..., None]
            return (wide - coefficient * m.double() * component * u).to(h.dtype)

        return {layer: edit}

    return build


@dataclass(frozen=True)
class ResidualSteering:
    """`steer(direction, layer, coefficient, mode, positions)` as data: the edit a variant applies."""

    layer: int
    coefficient: float  # absolute, on the unit direction
    mode: Mode
    positions: EditPositions
    direction: Tensor = field(compare=False, repr=False)

    def identity(self) -> dict:
        return {
            "layer": self.layer,
            "coefficient": self.coefficient,
            "mode": self.mode,
            "positions": self.positions,
            "direction_sha": vector_sha(unit_vector(self.direction)),
        }

    def builder(self) -> EditBuilder:
        return steer(self.direction, self.layer, self.coefficient, self.mode, self.positions)
