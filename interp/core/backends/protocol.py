"""The contract every backend fulfils: a left-padded batch in, final-position logits out, with hooks.

`Backend.forward(batch, on_pattern=..., score_bias=..., resid_edit=..., shared_prefix=...)` returns the
final-position logits (`Float[Tensor, "batch vocab"]`, float32) and calls `on_pattern(layer, pattern)` once
per layer with that layer's post-softmax pattern (`Float[Tensor, "batch head query key"]`), so callers
reduce it at once and never keep it. `score_bias` maps a layer to an additive pre-softmax bias
(`Float[Tensor, "batch head|1 query key"]`), the one mechanism every intervention compiles to. `resid_edit`
maps a layer to a function applied to that layer's residual-stream output (`Float[Tensor, "batch pos
d_model"]` -> same shape): activation steering. `shared_prefix=n` says every row starts with the same n
tokens; a backend whose `shares_prefix` is True computes their keys and values once (others ignore it).
`site_edit` maps a named hook point (`interp.core.sites`: `blocks.{l}.attn.hook_z`, `blocks.{l}.hook_mlp_out`, ...)
to a function of its activation (the node interventions and `Judge.hooks`); a pass with site edits is a plain
pass (no shared prefix, no shared trunk).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Protocol, runtime_checkable

import torch
from jaxtyping import Float, Int
from torch import Tensor

from interp.config import BACKENDS, BackendName
from interp.core.models import LoadedModel
from interp.core.sites import SiteEdit

__all__ = [
    "BACKENDS",
    "AttnImplementation",
    "BackendName",
    "Backend",
    "Batch",
    "ColumnAwareHook",
    "PatternHook",
    "ResidEdit",
    "RowAwareHook",
    "ScoreBias",
    "SiteEdit",
    "left_pad",
]

PatternHook = Callable[[int, Tensor], None]
AttnImplementation = Literal["sdpa", "eager"]  # sdpa: fast kernels + the rows a hook reads; eager: the reference
ScoreBias = dict[int, Tensor]
ResidEdit = dict[int, Callable[[Tensor], Tensor]]


@dataclass(frozen=True)
class Batch:
    """A left-padded batch: the final position of every row is the last column."""

    input_ids: Int[Tensor, "batch pos"]
    attention_mask: Int[Tensor, "batch pos"]

    @property
    def position_ids(self) -> Int[Tensor, "batch pos"]:
        return (self.attention_mask.cumsum(-1) - 1).clamp(min=0)

    def to(self, device: torch.device) -> "Batch":
        """The batch on `device` (itself when it is there already)."""
        if self.input_ids.device == device:
            return self
        return Batch(self.input_ids.to(device), self.attention_mask.to(device))


def left_pad(sequences: list[list[int]], pad_id: int) -> tuple[Batch, list[int]]:
    """Pad on the left; return the batch and each row's offset (add it to token indices of that row)."""
    width = max(len(s) for s in sequences)
    offsets = [width - len(s) for s in sequences]
    ids = torch.tensor([[pad_id] * off + s for s, off in zip(sequences, offsets, strict=False)], dtype=torch.long)
    mask = torch.tensor(
        [[0] * off + [1] * len(s) for s, off in zip(sequences, offsets, strict=False)], dtype=torch.long
    )
    return Batch(ids, mask), offsets


@runtime_checkable
class ColumnAwareHook(Protocol):
    """A pattern hook that can take patterns whose key columns are permuted (the shared-prefix pass).

    `in_columns(columns)` returns the hook for patterns whose key c is the batch's key `columns[b, c]`;
    a backend then passes its own patterns instead of copying each layer's pattern back to the batch's
    columns. Hooks without it get patterns in the batch's columns.
    """

    def __call__(self, layer: int, pattern: Tensor) -> None: ...

    def in_columns(self, columns: Tensor) -> "ColumnAwareHook": ...


@runtime_checkable
class RowAwareHook(Protocol):
    """A pattern hook that reads only the last `rows_read` query rows of each pattern (the span reducer): an
    SDPA pass then computes just those rows exactly, instead of the whole T x T pattern."""

    rows_read: int

    def __call__(self, layer: int, pattern: Tensor) -> None: ...


class Backend(Protocol):
    name: str
    model: LoadedModel
    shares_prefix: bool

    def forward(
        self,
        batch: Batch,
        *,
        on_pattern: PatternHook | None = None,
        score_bias: ScoreBias | None = None,
        resid_edit: ResidEdit | None = None,
        shared_prefix: int = 0,
        site_edit: SiteEdit | None = None,
    ) -> Float[Tensor, "batch vocab"]: ...
