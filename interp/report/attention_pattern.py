"""The figure of one judgment's attention pattern (`interp.core.attention_pattern`): an interactive plotly
heatmap per (layer, head), a menu to switch between them, and the prompt's spans boxed on the key axis."""

from __future__ import annotations

from interp.core.attention_pattern import AttentionPattern

SPAN_COLORS = {"query": "#2ca02c", "a": "#1f77b4", "b": "#d62728"}
SPAN_LABELS = {"query": "query", "a": "response A", "b": "response B"}


def pattern_figure(pattern: AttentionPattern, *, span_boxes: bool = True):
    """An interactive plotly figure: the [query, key] heatmap of each (layer, head), a menu to switch between
    them, token labels on both axes and in the hover, and each span boxed and named on the key axis."""
    import plotly.graph_objects as go

    labels = [f"{i}: {token!r}"[:40] for i, token in enumerate(pattern.tokens)]
    fig = go.Figure()
    pairs = [(layer, head) for layer in pattern.layers for head in pattern.heads]
    for index, (layer, head) in enumerate(pairs):
        values = pattern.of(layer, head).numpy()
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
        for name, (start, end) in pattern.spans.items():
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
        updatemenus=[dict(buttons=buttons, x=1.0, xanchor="right", y=1.12, yanchor="top")] if len(pairs) > 1 else [],
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
