"""One judgment's full attention pattern: chosen layers and heads, every query and key token, with token
labels and the prompt's spans; as a tensor and as an interactive plotly figure with the spans marked.

    p = judge.attention_pattern(query, answer_1, answer_2, layers=[20, 21], heads=[0, 3])
    p.pattern            # Float[Tensor, "layer head query key"], rows sum to 1
    p.tokens, p.spans    # token labels; "query", "a", "b" -> (start, end), end exclusive
    p.figure()           # plotly: one heatmap per (layer, head), a menu to switch, spans boxed

The pattern comes from the backend's own forward pass (`Backend.forward`'s `on_pattern` hook, every query
row), so it is the pattern a run's span attention reduces, under whatever intervention is open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from jaxtyping import Float
from torch import Tensor

from interp.core.backends.protocol import Backend, left_pad
from interp.core.spans import TokenizedPrompt, token_labels
from interp.errors import InterpError

SPAN_COLORS = {"query": "#2ca02c", "a": "#1f77b4", "b": "#d62728"}
SPAN_LABELS = {"query": "query", "a": "response A", "b": "response B"}


@dataclass(frozen=True, eq=False)
class AttentionPattern:
    """Post-softmax attention of one prompt: `pattern[i, j, q, k]` is layer `layers[i]`, head `heads[j]`,
    from query token q to key token k (`tokens[q]`, `tokens[k]`)."""

    pattern: Float[Tensor, "layer head query key"]
    layers: tuple[int, ...]
    heads: tuple[int, ...]
    tokens: list[str]
    spans: dict[str, tuple[int, int]]
    prompt: TokenizedPrompt

    def of(self, layer: int, head: int) -> Float[Tensor, "query key"]:
        """The [query, key] pattern of one (layer, head) by its model numbers."""
        if layer not in self.layers or head not in self.heads:
            raise InterpError(
                f"layer {layer}, head {head} is not in this pattern (layers {list(self.layers)}, heads {list(self.heads)})"
            )
        return self.pattern[self.layers.index(layer), self.heads.index(head)]

    def figure(self, *, span_boxes: bool = True):
        """An interactive plotly figure: the [query, key] heatmap of each (layer, head), a menu to switch between
        them, token labels on both axes and in the hover, and each span boxed and named on the key axis."""
        import plotly.graph_objects as go

        labels = [f"{i}: {token!r}"[:40] for i, token in enumerate(self.tokens)]
        fig = go.Figure()
        pairs = [(layer, head) for layer in self.layers for head in self.heads]
        for index, (layer, head) in enumerate(pairs):
            values = self.of(layer, head).numpy()
            fig.add_trace(
                go.Heatmap(
                    z=values,
                    x=list(range(len(labels))),
                    y=list(range(len(labels))),
                    customdata=_hover(labels),
                    hovertemplate="query %{customdata[0]}<br>key %{customdata[1]}<br>weight %{z:.4f}<extra></extra>",
                    colorscale="Viridis",
                    zmin=0.0,
                    zmax=float(values.max()) if values.size else 1.0,
                    visible=index == 0,
                    name=f"layer {layer} head {head}",
                )
            )
        if span_boxes:
            for name, (start, end) in self.spans.items():
                if end <= start or name not in SPAN_COLORS:
                    continue
                color = SPAN_COLORS[name]
                fig.add_shape(
                    type="rect",
                    x0=start - 0.5,
                    x1=end - 0.5,
                    y0=-0.5,
                    y1=len(labels) - 0.5,
                    line=dict(color=color, width=2),
                )
                fig.add_annotation(
                    x=(start + end - 1) / 2,
                    y=-0.5,
                    yshift=12,
                    text=SPAN_LABELS[name],
                    showarrow=False,
                    font=dict(color=color),
                )
        buttons = [
            dict(
                label=f"layer {layer}, head {head}",
                method="update",
                args=[{"visible": [i == j for j in range(len(pairs))]}, {"title": _title(layer, head)}],
            )
            for i, (layer, head) in enumerate(pairs)
        ]
        step = max(1, len(labels) // 40)  # at most ~40 tick labels per axis; every token is in the hover
        ticks = list(range(0, len(labels), step))
        fig.update_layout(
            title=_title(*pairs[0]),
            height=720,
            width=820,
            updatemenus=[dict(buttons=buttons, x=1.0, xanchor="right", y=1.12, yanchor="top")]
            if len(pairs) > 1
            else [],
            xaxis=dict(title="key token", tickvals=ticks, ticktext=[labels[i] for i in ticks], tickfont=dict(size=8)),
            yaxis=dict(
                title="query token",
                tickvals=ticks,
                ticktext=[labels[i] for i in ticks],
                tickfont=dict(size=8),
                autorange="reversed",
            ),
        )
        return fig


def _title(layer: int, head: int) -> str:
    return f"Attention pattern, layer {layer}, head {head} (rows: query tokens; columns: key tokens)"


def _hover(labels: list[str]) -> list[list[list[str]]]:
    return [[[query, key] for key in labels] for query in labels]


def _is_int(value) -> bool:
    """A layer or head number: an int (numpy's too), never a bool."""
    import numbers

    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def chosen(values: Sequence[int] | int | None, count: int, what: str) -> tuple[int, ...]:
    """The layer (or head) numbers asked for: all of them for None, one int, or a list (tuple, range) of ints;
    each in 0..count-1. Any other type (a float, a string, a bool) is one `InterpError` naming the argument."""
    expected = f"{what}s= takes a {what} number (int), a list of them, or None for all {count}"
    if values is None:
        picked: tuple = tuple(range(count))
    elif _is_int(values):
        picked = (values,)
    elif isinstance(values, (list, tuple, range)) or (
        hasattr(values, "__iter__")
        and hasattr(values, "__len__")
        and not isinstance(values, (str, bytes, dict, set, frozenset))
    ):
        picked = tuple(values)
    else:
        raise InterpError(f"{expected}, not {type(values).__name__} {values!r}")
    if not picked:
        raise InterpError(f"no {what} asked for; pass at least one, or leave {what}s out for all {count}")
    wrong = [v for v in picked if not _is_int(v)]
    if wrong:
        raise InterpError(f"{expected}, not a list holding {type(wrong[0]).__name__} {wrong[0]!r}")
    bad = [v for v in picked if not 0 <= v < count]
    if bad:
        raise InterpError(f"{what} {bad[0]!r} is out of range: this model has {count} {what}s (0..{count - 1})")
    return tuple(dict.fromkeys(int(v) for v in picked))


def attention_pattern(
    backend: Backend,
    prompt: TokenizedPrompt,
    *,
    layers: Sequence[int] | int | None = None,
    heads: Sequence[int] | int | None = None,
    **forward,
) -> AttentionPattern:
    """The full attention pattern of `prompt` at the chosen layers and heads (default: all), from one forward
    pass of `backend` (`forward`: its `score_bias` / `resid_edit`, as `Backend.forward` takes them)."""
    model = backend.model
    layers = chosen(layers, model.n_layers, "layer")
    heads = chosen(heads, model.n_heads, "head")
    batch, _ = left_pad([list(prompt.input_ids)], model.tokenizer.pad_token_id)
    kept: dict[int, Tensor] = {}

    def keep(layer: int, pattern: Tensor) -> None:  # every query row (a plain hook asks the backend for all)
        if layer in layers:
            kept[layer] = pattern[0, list(heads)].detach().float().cpu().clone()

    backend.forward(batch, on_pattern=keep, **forward)
    missing = [layer for layer in layers if layer not in kept]
    if missing:
        raise InterpError(f"the {backend.name} backend gave no attention pattern for layer {missing[0]}")
    tokens = token_labels(model.tokenizer, prompt.input_ids)
    return AttentionPattern(
        torch.stack([kept[layer] for layer in layers]), layers, heads, tokens, dict(prompt.spans), prompt
    )
