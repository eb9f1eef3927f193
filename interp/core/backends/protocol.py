"""The contract every backend fulfils: a left-padded batch in, final-position logits out, with hooks.

`Backend.forward(batch, edits=..., on_pattern=..., shared_prefix=...)` returns the final-position logits
(`Float[Tensor, "batch vocab"]`, float32) and calls `on_pattern(layer, pattern)` (an observation, never an edit)
once per layer with that layer's post-softmax pattern (`Float[Tensor, "batch head query key"]`), so callers
reduce it at once and never keep it. `edits` is the one edit channel: an `Edits`, what every intervention
(`interp.hooks.base`) compiles to. Its `score_bias` maps a layer to an additive pre-softmax bias
(`Float[Tensor, "batch head|1 query key"]`); its `resid` maps a layer to a function applied to that layer's
residual-stream output (`Float[Tensor, "batch pos d_model"]` -> same shape): activation steering. Its `sites`
maps a named hook point (`interp.hooks.sites`: `blocks.{l}.attn.hook_z`, `blocks.{l}.hook_mlp_out`, ...) to a
function of its activation (the node interventions and `Judge.hooks`); a pass with site edits is a plain pass
(no shared prefix, no shared trunk). `shared_prefix=n` says every row starts with the same n tokens; a backend
whose `shares_prefix` is True computes their keys and values once (others ignore it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Literal, Protocol, runtime_checkable

import torch
from jaxtyping import Float, Int
from torch import Tensor

from interp.config import BACKENDS, BackendName
from interp.core.models import LoadedModel
from interp.hooks.sites import SiteEdit

__all__ = [
    "BACKENDS",
    "AttnImplementation",
    "BackendName",
    "Backend",
    "Batch",
    "ColumnAwareHook",
    "EditHandle",
    "EditHooks",
    "Edits",
    "PatternHook",
    "ResidEdit",
    "RowAwareHook",
    "ScoreBias",
    "SiteEdit",
    "edit_hooks",
    "left_pad",
]

PatternHook = Callable[[int, Tensor], None]
AttnImplementation = Literal["sdpa", "eager"]  # sdpa: fast kernels + the rows a hook reads; eager: the reference
ScoreBias = dict[int, Tensor]
ResidEdit = dict[int, Callable[[Tensor], Tensor]]


def _chained(first: Callable[[Tensor], Tensor], second: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    def both(activation: Tensor) -> Tensor:
        edited = first(activation)
        activation = activation if edited is None else edited
        edited = second(activation)
        return activation if edited is None else edited

    return both


@dataclass(frozen=True)
class Edits:
    """One pass's compiled edit set: what every intervention (`interp.hooks.base.Intervention`) compiles to, the
    one edit channel of `Backend.forward`. By mechanism: `score_bias` (layer -> additive pre-softmax bias),
    `resid` (layer -> function of that layer's residual-stream output: position-wise, so a shared prefix may
    still be reused) and `sites` (named hook point of `interp.hooks.sites` -> function of its activation).

    >>> Edits() or "nothing to edit"
    'nothing to edit'
    """

    score_bias: ScoreBias = field(default_factory=dict)
    resid: ResidEdit = field(default_factory=dict)
    sites: SiteEdit = field(default_factory=dict)
    # the verdict logits (the final position's next-token logits) times this before the labels are read
    # (`interp.hooks.verdict.VerdictTemperature`); applied by `interp.core.judge.judge_batch`, so every backend has it
    logit_scale: float | None = None

    def __bool__(self) -> bool:
        return bool(self.score_bias or self.resid or self.sites) or self.logit_scale is not None

    def merged(self, other: "Edits | None") -> "Edits":
        """Both edit sets in one: biases of a layer add, functions at one layer or point run in order (self's
        first)."""
        if not other:
            return self
        bias = dict(self.score_bias)
        for layer, tensor in other.score_bias.items():
            bias[layer] = bias[layer] + tensor if layer in bias else tensor
        resid = dict(self.resid)
        for layer, fn in other.resid.items():
            resid[layer] = _chained(resid[layer], fn) if layer in resid else fn
        sites = dict(self.sites)
        for name, fn in other.sites.items():
            sites[name] = _chained(sites[name], fn) if name in sites else fn
        scales = [scale for scale in (self.logit_scale, other.logit_scale) if scale is not None]
        return Edits(bias, resid, sites, math.prod(scales) if scales else None)


class EditHooks:
    """A backend's standing edit builders, added and removed through handles (PyTorch's hook handles, one level
    up): `register(build)` returns a handle whose `remove()` takes `build` away again; every `forward` of the
    backend merges `build(batch)` (an `Edits`) with the edits it is given, first. What `interp.hooks.context`'s
    `dampen` and `emphasise` use on a backend, so a backend's `forward` is never replaced.

    >>> hooks = EditHooks()
    >>> handle = hooks.register(lambda batch: Edits())
    >>> handle.remove(); hooks.builders
    []
    """

    def __init__(self) -> None:
        self.builders: list[Callable[["Batch"], "Edits"]] = []

    def register(self, build: Callable[["Batch"], "Edits"]) -> "EditHandle":
        """Add `build`; the handle removes it (idempotent)."""
        self.builders.append(build)
        return EditHandle(self, build)

    def applied(self, batch: "Batch", edits: "Edits | None") -> "Edits | None":
        """`edits` after every standing builder's edits for `batch` (itself when none stands)."""
        if not self.builders:
            return edits
        merged = Edits()
        for build in self.builders:
            merged = merged.merged(build(batch))
        return merged.merged(edits)


@dataclass
class EditHandle:
    """What `EditHooks.register` returns: `remove()` takes its builder away."""

    hooks: EditHooks
    build: Callable

    def remove(self) -> None:
        """Take the builder away (a second call does nothing)."""
        self.hooks.builders = [b for b in self.hooks.builders if b is not self.build]


def edit_hooks(backend) -> EditHooks:
    """The backend's `EditHooks` (made on first use: a backend is any object with `model` and `forward`)."""
    hooks = getattr(backend, "edit_hooks", None)
    if hooks is None:
        hooks = EditHooks()
        object.__setattr__(backend, "edit_hooks", hooks)
    return hooks


@dataclass(frozen=True)
class Batch:
    """A left-padded batch: the final position of every row is the last column."""

    input_ids: Int[Tensor, "batch pos"]
    attention_mask: Int[Tensor, "batch pos"]

    @property
    def position_ids(self) -> Int[Tensor, "batch pos"]:
        """Each token's position counted from its row's first real token (0 on the padding)."""
        return (self.attention_mask.cumsum(-1) - 1).clamp(min=0)

    def to(self, device: torch.device) -> "Batch":
        """The batch on `device` (itself when it is there already)."""
        if self.input_ids.device == device:
            return self
        return Batch(self.input_ids.to(device), self.attention_mask.to(device))


def left_pad(sequences: list[list[int]], pad_id: int) -> tuple[Batch, list[int]]:
    """Pad on the left; return the batch and each row's offset (add it to token indices of that row).

    >>> batch, offsets = interp.left_pad([[1, 2, 3], [4, 5]], pad_id=0)
    >>> batch.input_ids.tolist(), batch.attention_mask.tolist(), offsets
    ([[1, 2, 3], [0, 4, 5]], [[1, 1, 1], [0, 1, 1]], [0, 1])
    """
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

    def in_columns(self, columns: Tensor) -> "ColumnAwareHook":
        """The hook for patterns whose key c is the batch's key `columns[b, c]`."""


@runtime_checkable
class RowAwareHook(Protocol):
    """A pattern hook that reads only the last `rows_read` query rows of each pattern (the span reducer): an
    SDPA pass then computes just those rows exactly, instead of the whole T x T pattern."""

    rows_read: int

    def __call__(self, layer: int, pattern: Tensor) -> None: ...


class Backend(Protocol):
    """A judge model run through one library (hf, transformer_lens, nnsight): a batch in, final-position logits out,
    with the edits and pattern hook the module describes; `shares_prefix` says whether it uses `shared_prefix`."""

    name: str
    model: LoadedModel
    shares_prefix: bool

    def forward(
        self,
        batch: Batch,
        *,
        edits: Edits | None = None,
        on_pattern: PatternHook | None = None,
        shared_prefix: int = 0,
    ) -> Float[Tensor, "batch vocab"]:
        """The batch's final-position logits (float32), `edits` applied and each layer's pattern handed to
        `on_pattern`."""
