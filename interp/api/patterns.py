"""What `Judge.attention_pattern` returns: one pass's attention pattern (`interp.core.attention_pattern`)
that also draws itself (`interp.report.attention_pattern`), so a notebook writes `p.figure()`."""

from __future__ import annotations

from dataclasses import dataclass, fields

from interp.core.attention_pattern import AttentionPattern
from interp.report.attention_pattern import pattern_figure


@dataclass(frozen=True, eq=False)
class AttentionPatternView(AttentionPattern):
    """An `AttentionPattern` with its figure."""

    def figure(self, *, span_boxes: bool = True):
        """An interactive plotly figure: the [query, key] heatmap of each (layer, head), a menu to switch
        between them, token labels on both axes and in the hover, and each span boxed and named."""
        return pattern_figure(self, span_boxes=span_boxes)


def viewed(pattern: AttentionPattern) -> AttentionPatternView:
    """The same pattern (the same tensors, not copied), with its figure."""
    return AttentionPatternView(**{field.name: getattr(pattern, field.name) for field in fields(pattern)})
