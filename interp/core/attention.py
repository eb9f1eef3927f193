"""Attention over response spans, reduced inside the hook (docs/science.md, Span attention).

For layer l, head h, query set Q and span S: `mass = mean_{q in Q} sum_{k in S} A[l, h, q, k]` and
`mean = mass / |S|`. The full T x T pattern of a layer lives only while its hook runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, Sequence

import torch
from jaxtyping import Float
from torch import Tensor

from interp.core.placement import to_host

Readout = Literal["final", "after"]
SPAN_NAMES = ("a", "b")


@dataclass
class SpanReducer:
    """Called once per layer with that layer's pattern; keeps only [batch, head, span] masses.

    `key_masks[b, s, k]` is 1 where key k belongs to span s of row b; `query_weights[b, q]` sums to 1 over
    the query set of row b ("final": the last position; "after": every position after both responses).
    A pattern may hold only the last rows of the queries (a pass that reuses a shared prefix's keys and
    values computes no prefix queries); those rows are the ones the query set reads.
    The output is allocated once, before the pass, and each layer's result is written into it, so the
    reduction makes no allocation between the large per-layer patterns (no heap fragmentation).
    """

    key_masks: Float[Tensor, "batch span key"]
    query_weights: Float[Tensor, "batch query"] | None  # None = final position only
    out: Float[Tensor, "layer batch head span"]
    seen: set[int] = field(default_factory=set)
    # A layer on another device (a GPU, a shard of a sharded model) is reduced there, into that device's
    # output; `stacked` brings each device's output to the CPU once. Masses are float32 whatever the dtype.
    device_out: dict = field(default_factory=dict)  # device -> Float[Tensor, "layer batch head span"]
    layer_device: dict = field(default_factory=dict)  # layer -> device, for layers reduced off the CPU
    placed: dict = field(default_factory=dict)  # device -> (key_masks, query_weights) on that device

    def _on(self, device: torch.device):
        """key masks, query weights and output buffer on `device` (copied there once per batch)."""
        if device == self.key_masks.device:
            return self.key_masks, self.query_weights, self.out
        if device not in self.placed:
            weights = self.query_weights.to(device) if self.query_weights is not None else None
            self.placed[device] = (self.key_masks.to(device), weights)
        if device not in self.device_out:
            self.device_out[device] = torch.zeros(self.out.shape, dtype=self.out.dtype, device=device)
        return (*self.placed[device], self.device_out[device])

    def __call__(self, layer: int, pattern: Float[Tensor, "batch head query key"]) -> None:
        pattern = pattern.detach().float()  # a no-op for float32 patterns
        key_masks, query_weights, out = self._on(pattern.device)
        if query_weights is None:
            rows = pattern[:, :, -1, :]
        else:
            rows = torch.einsum("bhqk,bq->bhk", pattern, query_weights[:, -pattern.shape[2] :])
        torch.matmul(rows, key_masks.transpose(1, 2), out=out[layer])
        if out is not self.out:
            self.layer_device[layer] = pattern.device
        self.seen.add(layer)

    @property
    def rows_read(self) -> int:
        """How many of the last query rows the query set reads: a pattern needs to hold no more."""
        if self.query_weights is None:
            return 1
        return max(int((self.query_weights != 0).sum(-1).max()), 1)

    def in_columns(self, columns: Tensor) -> "SpanReducer":
        """This reducer for patterns whose key c is the batch's key `columns[b, c]` (writing the same output)."""
        index = columns[:, None, :].expand(-1, self.key_masks.shape[1], -1)
        return replace(self, key_masks=torch.gather(self.key_masks, 2, index), placed={})

    def stacked(self) -> Float[Tensor, "batch layer head span"]:
        """The span attention of every layer, `[batch, layer, head, span]`; a layer no pattern reached is an error."""
        missing = sorted(set(range(self.out.shape[0])) - self.seen)
        if missing:
            raise RuntimeError(f"no attention pattern reached the reducer for layers {missing}")
        for device, out in self.device_out.items():
            layers = [layer for layer, where in self.layer_device.items() if where == device]
            self.out[layers] = to_host(out)[layers]
        return self.out.transpose(0, 1)


def span_reducer(
    spans: Sequence[dict[str, tuple[int, int]]],
    seq_len: int,
    n_layers: int,
    n_heads: int,
    *,
    readout: Readout = "final",
    span_names=SPAN_NAMES,
) -> SpanReducer:
    """Build the reducer for a (left-padded) batch; spans are already in padded coordinates."""
    batch = len(spans)
    out = torch.zeros(n_layers, batch, n_heads, len(span_names))
    key_masks = torch.zeros(batch, len(span_names), seq_len)
    for row, row_spans in enumerate(spans):
        for index, name in enumerate(span_names):
            start, end = row_spans[name]
            key_masks[row, index, start:end] = 1.0
    if readout == "final":
        return SpanReducer(key_masks, None, out)
    if readout != "after":
        raise ValueError(f"unknown readout {readout!r}; use 'final' or 'after'")
    query_weights = torch.zeros(batch, seq_len)
    for row, row_spans in enumerate(spans):
        first = max(end for _, end in (row_spans[name] for name in span_names))
        query_weights[row, first:] = 1.0 / (seq_len - first)
    return SpanReducer(key_masks, query_weights, out)


def span_token_counts(spans: Sequence[dict[str, tuple[int, int]]], span_names=SPAN_NAMES) -> Tensor:
    """Tokens in each named span of each row, `[row, span]`."""
    return torch.tensor([[row[name][1] - row[name][0] for name in span_names] for row in spans], dtype=torch.float32)


def per_token_mean(
    mass: Float[Tensor, "batch layer head span"], counts: Float[Tensor, "batch span"]
) -> Float[Tensor, "batch layer head span"]:
    """mass / |S|; an empty span (empty response) gives NaN, recorded as such, never a division by zero."""
    safe = torch.where(counts > 0, counts, torch.ones_like(counts))
    mean = mass / safe[:, None, None, :]
    return torch.where(counts[:, None, None, :] > 0, mean, torch.full_like(mean, float("nan")))
