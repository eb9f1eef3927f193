"""Running a batch whose rows share a prefix as one prefix pass plus a suffix pass over its cached keys."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from jaxtyping import Float
from torch import Tensor

from interp.core.backends.protocol import Batch, ResidEdit, ScoreBias


@dataclass(frozen=True)
class SharedPrefixLayout:
    """A left-padded batch whose rows all start with the same `prefix` tokens, run as prefix + suffix pass.

    Left-padded row r is [pad x off_r][prefix][suffix_r]. The suffix pass sees [prefix][pad x off_r][suffix_r]:
    the prefix's keys and values come from one batch-1 pass, repeated over the rows. Positions are equal in
    both layouts (pads take no position), and suffix tokens sit in the same columns, so only the first
    off_r + prefix columns are permuted; `key_index`, `batch_columns` and `bias_queries` map the suffix
    pass's columns and rows to and from the left-padded batch, so patterns and biases keep the batch's
    coordinates. A pattern hook with an `in_columns(batch_columns)` method (the span reducer) gets the suffix
    pass's own patterns instead and re-indexes its key masks once, saving a copy of every layer's pattern.
    """

    prefix: int
    offsets: Tensor  # [batch] left padding of each row
    suffix_ids: Tensor  # [batch, T - prefix]
    attention_mask: Tensor  # [batch, T] in the suffix pass's layout
    key_index: Tensor  # [batch, T]: left-padded column k <- suffix-pass column key_index[r, k]
    batch_columns: Tensor  # [batch, T]: suffix-pass column c <- left-padded column batch_columns[r, c]
    bias_queries: Tensor  # [batch, T - prefix]: suffix-pass row q <- left-padded row bias_queries[r, q]

    @classmethod
    def of(cls, batch: Batch, prefix: int) -> "SharedPrefixLayout":
        rows, width = batch.input_ids.shape
        offsets = (batch.attention_mask == 0).sum(-1)
        columns = torch.arange(width)
        off = offsets[:, None]
        in_pads, in_prefix = columns < off, (columns >= off) & (columns < off + prefix)
        key_index = torch.where(in_pads, prefix + columns, torch.where(in_prefix, columns - off, columns))
        batch_columns = torch.where(
            columns < prefix, off + columns, torch.where(columns < prefix + off, columns - prefix, columns)
        )
        suffix_columns = columns[prefix:].expand(rows, -1)
        bias_queries = torch.where(suffix_columns < prefix + off, suffix_columns - prefix, suffix_columns)
        suffix_ids = torch.gather(batch.input_ids, 1, batch_columns[:, prefix:])
        suffix_mask = torch.gather(batch.attention_mask, 1, batch_columns[:, prefix:])
        attention_mask = torch.cat([torch.ones(rows, prefix, dtype=suffix_mask.dtype), suffix_mask], dim=1)
        return cls(prefix, offsets, suffix_ids, attention_mask, key_index, batch_columns, bias_queries)

    def prefix_columns(self, row: int) -> slice:
        """Where the shared prefix sits in `row` of the left-padded batch."""
        first = int(self.offsets[row])
        return slice(first, first + self.prefix)

    def prefix_ids(self, batch: Batch) -> Tensor:
        return batch.input_ids[:1, self.prefix_columns(0)]

    def position_ids(self) -> Tensor:
        return (self.attention_mask.cumsum(-1) - 1).clamp(min=0)[:, self.prefix :]

    def pattern_to_batch(self, pattern: Float[Tensor, "batch head query key"]) -> Float[Tensor, "batch head query key"]:
        index = self.key_index.to(pattern.device)[:, None, None, :].expand(-1, pattern.shape[1], pattern.shape[2], -1)
        return torch.gather(pattern, -1, index)

    def edits_spare_prefix(self, resid_edit: ResidEdit | None, hf_model: torch.nn.Module) -> bool:
        """Whether every edit leaves the prefix positions alone (the prefix pass runs unedited).

        Checked by applying each edit to a random residual stream of the batch's shape: "final" and "spans"
        edits (and coefficient 0) pass, an edit at every position does not.
        """
        if not resid_edit:
            return True
        rows, width = self.attention_mask.shape
        generator = torch.Generator().manual_seed(0)
        probe = torch.randn(rows, width, hf_model.config.get_text_config().hidden_size, generator=generator)
        for edit in {id(e): e for e in resid_edit.values()}.values():
            edited = edit(probe.clone())
            for row in range(rows):
                columns = self.prefix_columns(row)
                if not torch.equal(edited[row, columns], probe[row, columns]):
                    return False
        return True

    def edit_on_suffix(self, edit: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
        """The edit, which expects the whole batch's positions, applied to the suffix pass's positions
        (per-position edits: the prefix columns it is given are placeholders it leaves alone)."""
        prefix = self.prefix

        def on_suffix(hidden: Tensor) -> Tensor:
            placeholder = hidden.new_zeros(hidden.shape[0], prefix, hidden.shape[2])
            return edit(torch.cat([placeholder, hidden], dim=1))[:, prefix:]

        return on_suffix

    def bias_for_suffix(self, bias: Tensor) -> Tensor | None:
        """The suffix pass's bias, or None when the bias touches the prefix (whose pass runs unbiased)."""
        heads = bias.shape[1]
        for row in range(bias.shape[0]):
            columns = self.prefix_columns(row)
            if torch.any(bias[row, :, columns, columns] != 0):
                return None
        bias = bias.expand(len(self.offsets), -1, -1, -1)
        query_index = self.bias_queries[:, None, :, None].expand(-1, heads, -1, bias.shape[-1])
        rows_picked = torch.gather(bias, 2, query_index)
        key_index = self.batch_columns[:, None, None, :].expand(-1, heads, rows_picked.shape[2], -1)
        return torch.gather(rows_picked, 3, key_index)


def window_covers(hf_model: torch.nn.Module, width: int) -> bool:
    """Sliding windows count cache columns, and the shared layout moves pads between prefix and suffix, so
    it equals the plain pass only when every window spans the whole batch."""
    window = getattr(hf_model.config.get_text_config(), "sliding_window", None)
    return window is None or width <= window


def suffix_biases(layout: SharedPrefixLayout, score_bias: ScoreBias | None) -> ScoreBias | None:
    """Each layer's bias remapped for the suffix pass ({} for none); None if any bias touches the prefix."""
    remapped: dict[int, Tensor] = {}
    by_tensor: dict[int, Tensor] = {}
    for layer, bias in (score_bias or {}).items():
        if id(bias) not in by_tensor:
            suffix = layout.bias_for_suffix(bias)
            if suffix is None:
                return None
            by_tensor[id(bias)] = suffix
        remapped[layer] = by_tensor[id(bias)]
    return remapped
