"""Activation steering as data: an edit of the residual stream after one decoder block, along a direction.

`steer(direction, layer, coefficient, mode, positions)` returns an edit builder for
`interp.core.judge.judge_batch(..., edits=)` (per batch; a variant's interventions reach
`interp.run.judging.run_judging(..., edits_for=)` through the engine, `interp.engine.variants.judge_variant`):

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
from pathlib import Path
from typing import Any, ClassVar, Literal, Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

from interp.core.backends import Batch, Edits, ResidEdit
from interp.core.judge import EditBuilder
from interp.core.spans import TokenizedPrompt
from interp.errors import InterpError
from interp.hooks.base import EditContext, Intervention, register_kind
from interp.hooks.sites import hook_name

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
    """The first 16 hex digits of the SHA-256 of the vector's float32 values: a direction's part of a key."""
    return hashlib.sha256(vector.detach().float().cpu().contiguous().numpy().tobytes()).hexdigest()[:16]


def _identity(h: Tensor) -> Tensor:
    return h


def add_direction(h: Tensor, unit: Tensor, coefficient: float) -> Tensor:
    """h + coefficient * unit, in float64 and back to h's dtype: the one definition of adding a direction (the
    steering mode "add" and the node kind "add")."""
    return (h.double() + coefficient * unit.to(h.device, torch.float64)).to(h.dtype)


def remove_direction(h: Tensor, unit: Tensor, coefficient: float) -> Tensor:
    """h - coefficient * (h.u) u, in float64 and back to h's dtype (coefficient 1 removes the component): the one
    definition of projecting a direction out (the steering mode "project_out" and the node kind "project_out")."""
    u = unit.to(h.device, torch.float64)
    wide = h.double()
    return (wide - coefficient * (wide @ u)[..., None] * u).to(h.dtype)


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
            chosen = mask.to(h.device)[..., None].bool()
            moved = add_direction(h, unit, coefficient) if mode == "add" else remove_direction(h, unit, coefficient)
            return torch.where(chosen, moved, h)

        return {layer: edit}

    return build


@register_kind
@dataclass(frozen=True)
class ResidualSteering(Intervention):
    """`steer(direction, layer, coefficient, mode, positions)` as data: the kind "steering" of the intervention
    family (`interp.hooks.base`), at `blocks.{layer}.hook_resid_post`."""

    kind: ClassVar[str] = "steering"
    slot: ClassVar[str] = "steering"

    layer: int
    coefficient: float  # absolute, on the unit direction
    mode: Mode
    positions: EditPositions
    direction: Tensor = field(compare=False, repr=False)

    def identity(self) -> dict:
        """Layer, coefficient, mode, positions and `vector_sha` of the unit direction (never the tensor)."""
        return {
            "layer": self.layer,
            "coefficient": self.coefficient,
            "mode": self.mode,
            "positions": self.positions,
            "direction_sha": vector_sha(unit_vector(self.direction)),
        }

    def builder(self) -> EditBuilder:
        """The `judge_batch(..., edit=)` builder of this steering (`steer`)."""
        return steer(self.direction, self.layer, self.coefficient, self.mode, self.positions)

    def hook_sites(self, n_layers: int) -> list[str]:
        """The one site it edits: `blocks.{layer}.hook_resid_post`."""
        return [hook_name("hook_resid_post", self.layer)]

    def check_fits(self, n_layers: int, n_heads: int) -> None:
        """InterpError when `layer` is not a layer of a model of `n_layers` layers."""
        if not 0 <= self.layer < n_layers:
            raise InterpError(f"steering layer {self.layer} is out of range; the model has {n_layers} layers")

    def edits(self, context: EditContext) -> Edits:
        """The residual edit after block `layer` for the batch (position-wise: a shared prefix is still reused)."""
        return Edits(resid=self.builder()(context.batch, list(context.offsets), context.prompts))

    @property
    def label(self) -> str:
        """`steer-<mode>-L<layer>-<coefficient>-<positions>`."""
        return f"steer-{self.mode}-L{self.layer}-{self.coefficient:g}-{self.positions}"

    def to_dict(self) -> dict[str, Any]:
        """Its keys, JSON-ready, the direction as the list of its unit vector's values; `from_dict` reads them back."""
        return {
            "layer": self.layer,
            "coefficient": self.coefficient,
            "mode": self.mode,
            "positions": self.positions,
            "direction": unit_vector(self.direction).tolist(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "") -> "ResidualSteering":
        """Inverse of `to_dict` (the direction as a list of numbers); raises InterpError naming the key."""
        allowed = ("layer", "coefficient", "mode", "positions", "direction")
        unknown = sorted(set(data) - set(allowed))
        if unknown or "direction" not in data or "layer" not in data:
            raise InterpError(f"{where}a steering spec holds {', '.join(allowed)} (layer and direction required)")
        direction = torch.tensor(data["direction"], dtype=torch.float32)
        layer, coefficient = data["layer"], data.get("coefficient", 1.0)
        mode, positions = data.get("mode", "add"), data.get("positions", "all")
        steer(direction, layer, coefficient, mode, positions)  # its checks, each one line naming the key
        return cls(int(layer), float(coefficient), mode, positions, direction)


def direction_values(values, where: str) -> tuple[float, ...]:
    """A direction as a tuple of floats, from a list of numbers, a tensor or a .safetensors/.npy file of one vector
    (InterpError, one line naming it, otherwise)."""
    if isinstance(values, (str, Path)):
        values = _read_direction(Path(values), where)
    if isinstance(values, Tensor):
        values = _one_vector(values.detach().float(), "the tensor", where).tolist()
    if (
        not isinstance(values, (list, tuple))
        or not values
        or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values)
    ):
        raise InterpError(
            f"{where}'direction' must be a list of numbers, a tensor, or a .safetensors/.npy file of one vector"
        )
    vector = tuple(float(v) for v in values)
    norm = math.sqrt(sum(v * v for v in vector))
    if not math.isfinite(norm) or norm == 0:
        raise InterpError(f"{where}'direction' has zero or non-finite norm")
    return vector


def _one_vector(array, what: str, where: str):
    """`array` (a tensor or numpy array) when it is one vector, shape (d,); any other shape is one line (an 8x8
    array is not a 64-dimensional direction, nor a (1, d) one a row of a batch)."""
    shape = tuple(array.shape)
    if len(shape) != 1:
        raise InterpError(
            f"{where}'direction': {what} has shape {shape}; a direction is one vector of shape (d_model,)"
        )
    return array


def _read_direction(path: Path, where: str) -> list[float]:
    if not path.is_file():
        raise InterpError(f"{where}direction file not found: {path}")
    try:
        if path.suffix == ".npy":
            import numpy as np

            return _one_vector(np.load(path).astype(float), str(path), where).tolist()
        from safetensors.torch import load_file

        tensors = load_file(str(path))
        if len(tensors) != 1:
            raise InterpError(f"{where}{path} holds {len(tensors)} tensors; a direction file holds one")
        return _one_vector(next(iter(tensors.values())).float(), str(path), where).tolist()
    except InterpError:
        raise
    except Exception as exc:  # a corrupt file: one line naming it
        raise InterpError(f"{where}cannot read the direction in {path}: {type(exc).__name__}") from None
