"""The attention figures of a run, drawn from its Figure 7 profiles, head values and length tables: the paper
figures (the Figure 7 grid, a judge's head map, the length control) with matplotlib, and the same as
interactive plotly sections in one offline HTML file. `interp.report.attention` decides what is drawn and
where it is written.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from interp.analysis.attention_stats import head_values
from interp.report.figures import subplots
from interp.storage import atomic_write_text
from interp.templating import Markup, render

JUDGE_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b")
DIFF_COLOR = "#444444"


def _short(name: str, width: int = 24) -> str:
    return name if len(name) <= width else name[: width - 1] + "\u2026"


# ---- the Figure 7 grid -------------------------------------------------------------------------------


def _panels(profiles: dict) -> list[list[dict | None]]:
    """Panel specs in the judge-rows layout: rows judges (+ judge difference), columns authors (+ author difference)."""
    judges, authors = profiles["judges"], profiles["authors"]
    colors = {judge: JUDGE_COLORS[i % len(JUDGE_COLORS)] for i, judge in enumerate(judges)}
    axis = profiles["axis"]
    grid: list[list[dict | None]] = []
    for judge in judges:
        row = []
        for author in authors:
            row.append(
                {
                    "title": f"judge {_short(judge)}\nresponses of {_short(author)}",
                    "lines": [(profiles["x"][judge], profiles["cells"][judge][author], judge, colors[judge])],
                    "diff": False,
                    "xlabel": axis,
                }
            )
        row.append(
            {
                "title": f"judge {_short(judge)}\nauthor diff: {_short(authors[0], 16)} \u2212 "
                f"{_short(authors[1], 16)}",
                "lines": [(profiles["x"][judge], profiles["author_diff"][judge], judge, colors[judge])],
                "diff": True,
                "xlabel": axis,
            }
        )
        grid.append(row)
    if profiles["judge_diff"]:
        row = []
        for author in authors:
            row.append(
                {
                    "title": f"judge diff: {_short(judges[0], 16)} \u2212 {_short(judges[1], 16)}\nresponses of "
                    f"{_short(author)}",
                    "lines": [
                        (profiles["judge_diff_x"], profiles["judge_diff"][author], "judge difference", DIFF_COLOR)
                    ],
                    "diff": True,
                    "xlabel": profiles["judge_diff_axis"],
                }
            )
        own_other = profiles["own_minus_other"]
        if own_other:
            mixed = len({len(v) for v in own_other.values()}) > 1
            lines = []
            for judge, values in own_other.items():
                x = np.linspace(0, 1, len(values)) if mixed and axis == "layer" else profiles["x"][judge]
                lines.append((x, values, judge, colors[judge]))
            row.append(
                {
                    "title": "own \u2212 other response\n(per judge)",
                    "lines": lines,
                    "diff": True,
                    "xlabel": "relative depth" if mixed else axis,
                    "legend": True,
                }
            )
        else:
            row.append(None)
        grid.append(row)
    return grid


def figure7_grid(profiles: dict, *, transpose: bool = False):
    """The Figure 7 grid as a matplotlib figure.

    Default layout: rows = judges, columns = response authors, an extra column with each judge's author
    difference and an extra row with each author's judge difference. `transpose=True` draws the paper's
    own layout (rows = authors, columns = judges).
    """
    panels = _panels(profiles)
    if transpose:
        panels = [list(row) for row in zip(*panels, strict=False)]
    nrows, ncols = len(panels), len(panels[0])
    fig, axes = subplots(nrows, ncols, figsize=(3.3 * ncols, 2.5 * nrows), squeeze=False)
    main = [p for row in panels for p in row if p is not None and not p["diff"]]
    values = (
        np.concatenate([np.asarray(line[1], dtype=float) for p in main for line in p["lines"]]) if main else np.zeros(1)
    )
    finite = values[np.isfinite(values)]
    ylim = (0.0, float(finite.max()) * 1.08 if finite.size and finite.max() > 0 else 1.0)
    for r, row in enumerate(panels):
        for c, panel in enumerate(row):
            ax = axes[r][c]
            if panel is None:
                ax.axis("off")
                continue
            for x, y, label, color in panel["lines"]:
                ax.plot(
                    np.asarray(x),
                    np.asarray(y, dtype=float),
                    color=color,
                    lw=1.4,
                    marker="o",
                    ms=2.2,
                    label=_short(label, 20),
                )
            if panel["diff"]:
                ax.axhline(0.0, color="#999", lw=0.8, ls="--")
                ax.set_facecolor("#f7f7f7")
            else:
                ax.set_ylim(*ylim)
            if panel.get("legend"):
                ax.legend(fontsize=6, frameon=False)
            ax.set_title(panel["title"], fontsize=7.5)
            ax.tick_params(labelsize=7)
            ax.set_xlabel(panel["xlabel"], fontsize=7)
            ax.yaxis.get_offset_text().set_fontsize(6)
            ax.grid(alpha=0.25, lw=0.5)
    stat = "per-token mean attention" if profiles["stat"] == "mean" else "attention mass"
    fig.suptitle(
        f"Attention to response spans per layer ({stat}; mean over heads, both orders, instructions)", fontsize=9
    )
    fig.tight_layout()
    return fig


# ---- head maps ---------------------------------------------------------------------------------------


def head_map_figure(
    values, judge: str, heads: Sequence[tuple[int, int, float]], *, stat: str = "mean", quantity: str | None = None
):
    """Own-minus-other per (layer, head) with the top heads boxed and listed; `quantity` names another per-head
    value drawn the same way (e.g. a localisation method's effect)."""
    from matplotlib.patches import Rectangle

    array = np.asarray(values, dtype=float)
    n_layers, n_heads = array.shape
    finite = np.abs(array[np.isfinite(array)])
    bound = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    fig, (ax, text_ax) = subplots(
        1,
        2,
        figsize=(2.2 + 0.42 * n_heads + 2.6, 1.4 + 0.2 * n_layers),
        gridspec_kw={"width_ratios": [1.0 + 0.42 * n_heads, 2.6]},
    )
    image = ax.imshow(
        array, cmap="RdBu_r", vmin=-bound, vmax=bound, aspect="auto", origin="lower", interpolation="nearest"
    )
    for rank, (layer, head, _) in enumerate(heads, start=1):
        ax.add_patch(Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, ec="black", lw=1.2))
        ax.text(head, layer, str(rank), ha="center", va="center", fontsize=6)
    ax.set_xlabel("head", fontsize=8)
    ax.set_ylabel("layer", fontsize=8)
    ax.set_xticks(range(n_heads))
    ax.tick_params(labelsize=7)
    label = "per-token mean" if stat == "mean" else "mass"
    fig.colorbar(image, ax=ax, fraction=0.08, pad=0.03).set_label(quantity or f"own \u2212 other ({label})", fontsize=7)
    quantity = quantity or "own \u2212 other"
    ax.set_title(f"{_short(judge, 30)}: {_short(quantity, 40)}", fontsize=9)
    text_ax.axis("off")
    lines = [f"top heads ({_short(quantity, 28)})"] + [
        f"{rank:>2}. L{layer:<2} H{head:<2} {value:+.3g}" for rank, (layer, head, value) in enumerate(heads, 1)
    ]
    text_ax.text(
        0.0, 1.0, "\n".join(lines), va="top", ha="left", family="monospace", fontsize=7, transform=text_ax.transAxes
    )
    fig.tight_layout()
    return fig


# ---- length control ----------------------------------------------------------------------------------


def length_figure(tables: Sequence[pd.DataFrame], regression: pd.DataFrame):
    """Per judge (a row of panels), the own-minus-other attention (mass, per-token mean) against the length
    difference of the two answers, each item a point, with the fitted line of `regression` where it is finite."""
    fig, axes = subplots(len(tables), 2, figsize=(8.0, 2.9 * len(tables)), squeeze=False)
    for r, table in enumerate(tables):
        judge = table["judge"].iloc[0]
        for c, stat in enumerate(("mass", "mean")):
            ax = axes[r][c]
            x, y = table["length_diff"].to_numpy(float), table[f"{stat}_diff"].to_numpy(float)
            ax.scatter(x, y, s=14, color=JUDGE_COLORS[r % len(JUDGE_COLORS)], alpha=0.8)
            fit = regression[(regression["judge"] == judge) & (regression["stat"] == stat)].iloc[0]
            if np.isfinite(fit["slope"]) and np.isfinite(x).any():
                grid = np.linspace(np.nanmin(x), np.nanmax(x), 20)
                ax.plot(grid, fit["intercept"] + fit["slope"] * grid, color="black", lw=1)
            ax.axhline(0, color="#999", lw=0.7, ls="--")
            ax.axvline(0, color="#999", lw=0.7, ls="--")
            ax.set_xlabel("own \u2212 other length (tokens)", fontsize=8)
            ax.set_ylabel(f"own \u2212 other {'mass' if stat == 'mass' else 'per-token mean'}", fontsize=8)
            ax.set_title(
                f"{_short(judge, 28)}: slope {fit['slope']:.3g}, intercept {fit['intercept']:.3g}, r "
                f"{fit['r']:.2f}, n {int(fit['n'])}",
                fontsize=7.5,
            )
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.25, lw=0.5)
    fig.tight_layout()
    return fig


# ---- interactive HTML --------------------------------------------------------------------------------


def interactive_sections(
    profiles: dict, runs: dict, heads: dict, layer_table: pd.DataFrame, length_tables: list
) -> list[tuple[str, object]]:
    """The interactive page's sections, (heading, plotly figure): the Figure 7 grid, each judge's head map, the
    per-layer differences and the length control."""
    sections = [("Figure 7 grid", _interactive_grid(profiles))]
    sections += [(f"Heads of {judge}", _interactive_heads(judge, run, heads[judge])) for judge, run in runs.items()]
    if len(layer_table):
        sections.append(("Per-layer differences", _interactive_layers(layer_table)))
    if length_tables:
        sections.append(("Length control", _interactive_length(length_tables)))
    return sections


def _interactive_grid(profiles: dict):
    """The Figure 7 grid as one plotly figure."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    panels = _panels(profiles)
    nrows, ncols = len(panels), len(panels[0])
    titles = [(p["title"].replace("\n", "<br>") if p else "") for row in panels for p in row]
    # plotly refuses a spacing above 1 / (rows - 1): ten judges and more (eleven rows) need a smaller one
    fig = make_subplots(
        rows=nrows,
        cols=ncols,
        subplot_titles=titles,
        vertical_spacing=min(0.12, 0.6 / max(nrows - 1, 1)),
        horizontal_spacing=min(0.07, 0.6 / max(ncols - 1, 1)),
    )
    for r, row in enumerate(panels, start=1):
        for c, panel in enumerate(row, start=1):
            if panel is None:
                continue
            for x, y, label, color in panel["lines"]:
                fig.add_trace(
                    go.Scatter(
                        x=np.asarray(x).tolist(),
                        y=np.asarray(y, dtype=float).tolist(),
                        mode="lines+markers",
                        name=label,
                        line={"color": color},
                        marker={"size": 4},
                        showlegend=False,
                        hovertemplate=f"{html.escape(label)}<br>{panel['xlabel']} %{{x}}<br>%{{y:.4g}}<extra></extra>",
                    ),
                    row=r,
                    col=c,
                )
            if panel["diff"]:
                fig.add_hline(y=0, line={"color": "#999", "dash": "dash", "width": 1}, row=r, col=c)
    for annotation in fig.layout.annotations:
        annotation.font.size = 10
    fig.update_layout(
        height=300 * nrows, width=340 * ncols, margin={"t": 60}, title="Figure 7: per-layer attention to response spans"
    )
    return fig


def _interactive_heads(judge: str, run, judge_heads: list):
    """A judge's head map (own - other per-token mean attention per head), its top heads numbered."""
    import plotly.graph_objects as go

    values = head_values(run, stat="mean").numpy()
    own = np.nanmean(run.own("mean").numpy(), axis=(0, 1))
    other = np.nanmean(run.other("mean").numpy(), axis=(0, 1))
    bound = float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 1.0
    heat = go.Figure(
        go.Heatmap(
            z=values.tolist(),
            x=list(range(run.n_heads)),
            y=list(range(run.n_layers)),
            customdata=np.stack([own, other], -1).tolist(),
            colorscale="RdBu",
            reversescale=True,
            zmid=0,
            zmin=-bound,
            zmax=bound,
            colorbar={"title": "own \u2212 other"},
            hovertemplate="layer %{y}, head %{x}<br>own \u2212 other %{z:.4g}<br>own %{customdata[0]:.4g}<br>other "
            "%{customdata[1]:.4g}<extra></extra>",
        )
    )
    for rank, (layer, head, _) in enumerate(judge_heads, 1):
        heat.add_annotation(x=head, y=layer, text=str(rank), showarrow=False, font={"size": 9})
    heat.update_layout(
        title=f"{judge}: own \u2212 other per-token mean attention per head",
        xaxis_title="head",
        yaxis_title="layer",
        height=max(360, 22 * run.n_layers + 140),
        width=max(420, 50 * run.n_heads + 260),
    )
    return heat


def _interactive_layers(layer_table: pd.DataFrame):
    """Own - other per layer with its bootstrap band, per judge (per-token mean and mass)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    band = make_subplots(rows=1, cols=2, subplot_titles=["per-token mean", "mass"])
    for i, (judge, group) in enumerate(layer_table.groupby("judge", sort=False)):
        color = JUDGE_COLORS[i % len(JUDGE_COLORS)]
        for c, stat in enumerate(("mean", "mass"), start=1):
            part = group[group["stat"] == stat]
            x = part["layer"].tolist()
            interval = go.Scatter(
                x=x + x[::-1],
                y=part["ci_high"].tolist() + part["ci_low"].tolist()[::-1],
                fill="toself",
                fillcolor=color,
                opacity=0.15,
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
            )
            line = go.Scatter(
                x=x,
                y=part["diff"].tolist(),
                mode="lines+markers",
                name=judge,
                line={"color": color},
                showlegend=c == 1,
                customdata=part[["ci_low", "ci_high"]].to_numpy().tolist(),
                hovertemplate=f"{html.escape(judge)}<br>layer %{{x}}: %{{y:.4g}} "
                "[%{customdata[0]:.4g}, %{customdata[1]:.4g}]<extra></extra>",
            )
            band.add_trace(interval, row=1, col=c)
            band.add_trace(line, row=1, col=c)
        band.add_hline(y=0, line={"color": "#999", "dash": "dash", "width": 1})
    band.update_layout(
        title="own \u2212 other per layer, 95% bootstrap interval over instructions", height=420, width=1000
    )
    return band


def _interactive_length(length_tables: list):
    """The length control: attention difference against length difference, per judge."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    scatter = make_subplots(rows=1, cols=2, subplot_titles=["mass", "per-token mean"])
    for i, table in enumerate(length_tables):
        color = JUDGE_COLORS[i % len(JUDGE_COLORS)]
        judge = table["judge"].iloc[0]
        for c, stat in enumerate(("mass", "mean"), start=1):
            points = go.Scatter(
                x=table["length_diff"].tolist(),
                y=table[f"{stat}_diff"].tolist(),
                mode="markers",
                name=judge,
                marker={"color": color},
                text=table["item_id"].tolist(),
                showlegend=c == 1,
                hovertemplate="%{text}<br>length diff %{x}<br>attention diff %{y:.4g}<extra></extra>",
            )
            scatter.add_trace(points, row=1, col=c)
    scatter.update_xaxes(title_text="own \u2212 other length (tokens)")
    scatter.update_layout(title="Length control: attention difference vs length difference", height=420, width=1000)
    return scatter


def write_interactive(
    path: Path, title: str, sections: list[tuple[str, object]], tables_html: Markup = Markup()
) -> None:
    """One offline HTML file: plotly.js inlined once (no script fetched from anywhere)."""
    import plotly.io as pio

    divs = [
        # plotly's own div (toolkit-generated markup, trusted); the heading is escaped by the template
        (
            heading,
            Markup(
                pio.to_html(
                    fig,
                    include_plotlyjs=position == 0,
                    full_html=False,
                    include_mathjax=False,
                    config={"displaylogo": False},
                )
            ),
        )
        for position, (heading, fig) in enumerate(sections)
    ]
    atomic_write_text(path, render(_INTERACTIVE, title=title, divs=divs, tables=tables_html))


_INTERACTIVE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>{{ title }}</title><style>"
    "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f3f3f3}"
    "</style></head><body><h1>{{ title }}</h1>{% for heading, div in divs %}<h2>{{ heading }}</h2>{{ div "
    "}}{% endfor %}{{ tables }}</body></html>"
)
