"""The attention section: Figure 7 and the head maps of a run, as paper figures and interactive HTML.

Writes into RUN_DIR/figures/:
  attention_figure7.png/.pdf        the Figure 7 grid (rows: judges + judge-difference row; columns:
                                    response authors + author-difference column; each cell a per-layer
                                    profile of the per-token mean; bottom-right: own minus other per judge)
  attention_heads_<judge>-<hash>.png/.pdf  own-minus-other per (layer, head), top heads boxed and listed
  attention_layer_differences.csv   per judge, statistic and layer: own, other, difference, bootstrap CI
  attention_heads.csv               per judge, layer and head: own, other, difference (mean and mass)
  attention_length_items.csv        per judge and instruction: length and attention differences
  attention_length_regression.csv   OLS of attention difference on length difference, per judge
  attention_length_control.png/.pdf the same as scatter plots with the fitted lines
  attention_summary.json            top heads, regression numbers and file names (machine-readable)
  attention.html                    interactive (plotly, inlined: works offline), heatmaps with hover
  attention_section.html            the report section (first line: title), read by interp.report.build
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from interp.analysis.attention_stats import (
    attention_judges,
    figure7_profiles,
    head_values,
    head_table,
    layer_differences,
    length_regression,
    length_table,
    load_attention,
    top_heads,
)
from interp.formatting import number
from interp.report.figures import png_data_uri, save_figure, subplots
from interp.report.html import table_html
from interp.run.store import RunDir
from interp.storage import atomic_write_text, keyed_label
from interp.templating import Markup, render

SECTION_TITLE = "Attention over response spans (Figure 7)"
JUDGE_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b")
DIFF_COLOR = "#444444"


def _short(name: str, width: int = 24) -> str:
    return name if len(name) <= width else name[: width - 1] + "\u2026"


def _finite_or_none(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


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
                "title": f"judge {_short(judge)}\nauthor diff: {_short(authors[0], 16)} \u2212 {_short(authors[1], 16)}",
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
                    "title": f"judge diff: {_short(judges[0], 16)} \u2212 {_short(judges[1], 16)}\nresponses of {_short(author)}",
                    "lines": [(profiles["judge_diff_x"], profiles["judge_diff"][author], "judge difference", DIFF_COLOR)],
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
        panels = [list(row) for row in zip(*panels)]
    nrows, ncols = len(panels), len(panels[0])
    fig, axes = subplots(nrows, ncols, figsize=(3.3 * ncols, 2.5 * nrows), squeeze=False)
    main = [p for row in panels for p in row if p is not None and not p["diff"]]
    values = np.concatenate([np.asarray(line[1], dtype=float) for p in main for line in p["lines"]]) if main else np.zeros(1)
    finite = values[np.isfinite(values)]
    ylim = (0.0, float(finite.max()) * 1.08 if finite.size and finite.max() > 0 else 1.0)
    for r, row in enumerate(panels):
        for c, panel in enumerate(row):
            ax = axes[r][c]
            if panel is None:
                ax.axis("off")
                continue
            for x, y, label, color in panel["lines"]:
                ax.plot(np.asarray(x), np.asarray(y, dtype=float), color=color, lw=1.4, marker="o", ms=2.2, label=_short(label, 20))
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
    fig.suptitle(f"Attention to response spans per layer ({stat}; mean over heads, both orders, instructions)", fontsize=9)
    fig.tight_layout()
    return fig


# ---- head maps ---------------------------------------------------------------------------------------


def head_map_figure(values, judge: str, heads: Sequence[tuple[int, int, float]], *, stat: str = "mean", quantity: str | None = None):
    """Own-minus-other per (layer, head) with the top heads boxed and listed; `quantity` names another per-head
    value drawn the same way (e.g. a localisation method's effect)."""
    from matplotlib.patches import Rectangle

    array = np.asarray(values, dtype=float)
    n_layers, n_heads = array.shape
    finite = np.abs(array[np.isfinite(array)])
    bound = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    fig, (ax, text_ax) = subplots(
        1, 2, figsize=(2.2 + 0.42 * n_heads + 2.6, 1.4 + 0.2 * n_layers), gridspec_kw={"width_ratios": [1.0 + 0.42 * n_heads, 2.6]}
    )
    image = ax.imshow(array, cmap="RdBu_r", vmin=-bound, vmax=bound, aspect="auto", origin="lower", interpolation="nearest")
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
    lines = [f"top heads ({_short(quantity, 28)})"] + [f"{rank:>2}. L{layer:<2} H{head:<2} {value:+.3g}" for rank, (layer, head, value) in enumerate(heads, 1)]
    text_ax.text(0.0, 1.0, "\n".join(lines), va="top", ha="left", family="monospace", fontsize=7, transform=text_ax.transAxes)
    fig.tight_layout()
    return fig


# ---- length control ----------------------------------------------------------------------------------


def length_figure(tables: Sequence[pd.DataFrame], regression: pd.DataFrame):
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
                f"{_short(judge, 28)}: slope {fit['slope']:.3g}, intercept {fit['intercept']:.3g}, r {fit['r']:.2f}, n {int(fit['n'])}",
                fontsize=7.5,
            )
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.25, lw=0.5)
    fig.tight_layout()
    return fig


# ---- interactive HTML --------------------------------------------------------------------------------


def _plotly_sections(profiles: dict, runs: dict, heads: dict, layer_table: pd.DataFrame, length_tables: list) -> list[tuple[str, object]]:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    sections = []
    panels = _panels(profiles)
    nrows, ncols = len(panels), len(panels[0])
    titles = [(p["title"].replace("\n", "<br>") if p else "") for row in panels for p in row]
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=titles, vertical_spacing=0.12, horizontal_spacing=0.07)
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
    fig.update_layout(height=300 * nrows, width=340 * ncols, margin={"t": 60}, title="Figure 7: per-layer attention to response spans")
    sections.append(("Figure 7 grid", fig))

    for judge, run in runs.items():
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
                hovertemplate="layer %{y}, head %{x}<br>own \u2212 other %{z:.4g}<br>own %{customdata[0]:.4g}<br>other %{customdata[1]:.4g}<extra></extra>",
            )
        )
        for rank, (layer, head, _) in enumerate(heads[judge], 1):
            heat.add_annotation(x=head, y=layer, text=str(rank), showarrow=False, font={"size": 9})
        heat.update_layout(
            title=f"{judge}: own \u2212 other per-token mean attention per head",
            xaxis_title="head",
            yaxis_title="layer",
            height=max(360, 22 * run.n_layers + 140),
            width=max(420, 50 * run.n_heads + 260),
        )
        sections.append((f"Heads of {judge}", heat))

    if len(layer_table):
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
        band.update_layout(title="own \u2212 other per layer, 95% bootstrap interval over instructions", height=420, width=1000)
        sections.append(("Per-layer differences", band))

    if length_tables:
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
        sections.append(("Length control", scatter))
    return sections


def write_interactive(path: Path, title: str, sections: list[tuple[str, object]], tables_html: Markup = Markup()) -> None:
    """One offline HTML file: plotly.js inlined once (no script fetched from anywhere)."""
    import plotly.io as pio

    divs = [
        # plotly's own div (toolkit-generated markup, trusted); the heading is escaped by the template
        (heading, Markup(pio.to_html(fig, include_plotlyjs=position == 0, full_html=False, include_mathjax=False, config={"displaylogo": False})))
        for position, (heading, fig) in enumerate(sections)
    ]
    atomic_write_text(path, render(_INTERACTIVE, title=title, divs=divs, tables=tables_html))


_INTERACTIVE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>{{ title }}</title><style>"
    "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f3f3f3}"
    "</style></head><body><h1>{{ title }}</h1>{% for heading, div in divs %}<h2>{{ heading }}</h2>{{ div }}{% endfor %}{{ tables }}</body></html>"
)


# ---- everything ----------------------------------------------------------------------------------


def write_attention_figures(
    run_dir: Path,
    *,
    relative_depth: bool = False,
    top_k: int = 10,
    n_boot: int | None = None,
    seed: int | None = None,
    transpose: bool = False,
    tokenizers: dict | None = None,
) -> dict[str, Path]:
    """Write the attention figures, tables and report section of a run into RUN_DIR/figures/.

    `tokenizers` ({judge: tokenizer}) additionally checks each judge's attention against its tokenizer.
    Returns {name: path} of everything written.
    """
    run_dir = Path(run_dir)
    judges = attention_judges(run_dir)
    runs = {judge: load_attention(run_dir, judge, tokenizer=(tokenizers or {}).get(judge)) for judge in judges}
    paths = RunDir(run_dir)
    config = paths.read_config() if paths.config.is_file() else None
    n_boot = n_boot if n_boot is not None else (config.n_boot if config else 1000)
    seed = (config.seed if config else 0) if seed is None else seed
    figures = paths.figures
    figures.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}

    first = next(iter(runs.values()))
    profiles = figure7_profiles(list(runs.values()), "mean", relative_depth=relative_depth)
    profiles_mass = figure7_profiles(list(runs.values()), "mass", relative_depth=relative_depth)
    paths = save_figure(figure7_grid(profiles, transpose=transpose), figures / "attention_figure7")
    written["figure7_png"], written["figure7_pdf"] = paths["png"], paths["pdf"]
    paths = save_figure(figure7_grid(profiles_mass, transpose=transpose), figures / "attention_figure7_mass")
    written["figure7_mass_png"], written["figure7_mass_pdf"] = paths["png"], paths["pdf"]
    long = pd.concat([profiles["long"].assign(stat="mean"), profiles_mass["long"].assign(stat="mass")], ignore_index=True)
    written["profiles_csv"] = figures / "attention_profiles.csv"
    atomic_write_text(written["profiles_csv"], long.to_csv(index=False))

    own_runs = {judge: run for judge, run in runs.items() if run.has_own}  # organisms too (own = their base)
    heads: dict[str, list] = {}
    heads_mass: dict[str, list] = {}
    head_tables, layer_tables, length_tables = [], [], []
    for judge, run in own_runs.items():
        k = min(top_k, run.n_layers * run.n_heads)
        heads[judge] = top_heads(run, k=k, stat="mean")
        heads_mass[judge] = top_heads(run, k=k, stat="mass")
        paths = save_figure(head_map_figure(head_values(run, stat="mean").numpy(), judge, heads[judge]), figures / f"attention_heads_{keyed_label(judge)}")
        written[f"heads_{judge}_png"], written[f"heads_{judge}_pdf"] = paths["png"], paths["pdf"]
        head_tables.append(head_table(run))
        for stat in ("mean", "mass"):
            layer_tables.append(layer_differences(run, n_boot=n_boot, seed=seed, stat=stat))
        length_tables.append(length_table(run))
    layer_table = pd.concat(layer_tables, ignore_index=True) if layer_tables else pd.DataFrame()
    regression = None
    if own_runs:
        regression = pd.concat([length_regression(run) for run in own_runs.values()], ignore_index=True)
        written["layer_csv"] = figures / "attention_layer_differences.csv"
        atomic_write_text(written["layer_csv"], layer_table.to_csv(index=False))
        written["heads_csv"] = figures / "attention_heads.csv"
        atomic_write_text(written["heads_csv"], pd.concat(head_tables, ignore_index=True).to_csv(index=False))
        written["length_items_csv"] = figures / "attention_length_items.csv"
        atomic_write_text(written["length_items_csv"], pd.concat(length_tables, ignore_index=True).to_csv(index=False))
        written["length_regression_csv"] = figures / "attention_length_regression.csv"
        atomic_write_text(written["length_regression_csv"], regression.to_csv(index=False))
        paths = save_figure(length_figure(length_tables, regression), figures / "attention_length_control")
        written["length_png"], written["length_pdf"] = paths["png"], paths["pdf"]

    summary = {
        "judges": judges,
        "authors": list(first.models),
        "queries": first.queries,
        "n_items": first.n_items,
        "empty_spans": {judge: int((run.span_tokens == 0).sum()) for judge, run in runs.items()},
        "top_heads": {judge: [{"layer": l, "head": h, "own_minus_other_mean": _finite_or_none(v)} for l, h, v in hs] for judge, hs in heads.items()},
        "top_heads_mass": {judge: [{"layer": l, "head": h, "own_minus_other_mass": _finite_or_none(v)} for l, h, v in hs] for judge, hs in heads_mass.items()},
        "length_regression": [{k: _finite_or_none(v) for k, v in row.items()} for row in regression.to_dict("records")] if regression is not None else [],
        "n_boot": n_boot,
        "seed": seed,
    }
    written["summary_json"] = figures / "attention_summary.json"

    written["html"] = figures / "attention.html"
    write_interactive(
        written["html"],
        f"Attention over response spans: {' vs '.join(first.models)}",
        _plotly_sections(profiles, own_runs, heads, layer_table, length_tables),
        _tables_html(heads, layer_table, regression),
    )
    written["section"] = figures / "attention_section.html"
    atomic_write_text(written["section"], SECTION_TITLE + "\n" + _section_body(run_dir, written, runs, heads, layer_table, regression, profiles))
    summary["files"] = {name: str(path.relative_to(run_dir)) for name, path in written.items()}
    atomic_write_text(written["summary_json"], json.dumps(summary, indent=2, allow_nan=False))
    return written


def _heads_table(heads: list) -> str:
    return table_html(["rank", "layer", "head", "own \u2212 other (per-token mean)"], [[i, l, h, number(v, 4, signed=True)] for i, (l, h, v) in enumerate(heads, 1)])


def _layer_rows(layer_table: pd.DataFrame, judge: str) -> list[list]:
    part = layer_table[layer_table["judge"] == judge]
    mean, mass = part[part["stat"] == "mean"].set_index("layer"), part[part["stat"] == "mass"].set_index("layer")
    rows = []
    for layer in mean.index:
        m, s = mean.loc[layer], mass.loc[layer]
        rows.append(
            [
                int(layer),
                f"{m['own']:.4g}",
                f"{m['other']:.4g}",
                f"{number(m['diff'], 3, signed=True)} [{number(m['ci_low'], 3, signed=True)}, {number(m['ci_high'], 3, signed=True)}]",
                f"{number(s['diff'], 3, signed=True)} [{number(s['ci_low'], 3, signed=True)}, {number(s['ci_high'], 3, signed=True)}]",
            ]
        )
    return rows


_LAYER_HEADER = ["layer", "own (mean)", "other (mean)", "own \u2212 other, per-token mean [95% CI]", "own \u2212 other, mass [95% CI]"]
_REGRESSION_HEADER = [
    "judge", "statistic", "slope (per token of length)", "intercept (at equal length)", "r", "n", "mean difference", "mean length difference"
]


def _regression_rows(regression: pd.DataFrame | None) -> list[list]:
    if regression is None:
        return []
    return [
        [
            r["judge"],
            "per-token mean" if r["stat"] == "mean" else "mass",
            number(r["slope"], 3, signed=True),
            number(r["intercept"], 3, signed=True),
            number(r["r"], 3, signed=True),
            int(r["n"]),
            number(r["mean_diff"], 3, signed=True),
            f"{r['mean_length_diff']:+.1f}",
        ]
        for r in regression.to_dict("records")
    ]


def _tables_html(heads: dict, layer_table: pd.DataFrame, regression) -> Markup:
    judges = [(judge, _heads_table(hs), table_html(_LAYER_HEADER, _layer_rows(layer_table, judge))) for judge, hs in heads.items()]
    length = table_html(_REGRESSION_HEADER, _regression_rows(regression)) if regression is not None else None
    return render(_TABLES, judges=judges, length=length)


_TABLES = (
    "{% for judge, heads, layers in judges %}<h2>Top own \u2212 other heads: {{ judge }}</h2>{{ heads }}"
    "<h3>Per layer: {{ judge }}</h3>{{ layers }}{% endfor %}"
    "{% if length is not none %}<h2>Length control</h2>{{ length }}{% endif %}"
)


def _section_body(run_dir: Path, written: dict, runs: dict, heads: dict, layer_table: pd.DataFrame, regression, profiles: dict) -> str:
    first = next(iter(runs.values()))
    queries = "the final prompt position (the verdict position)" if first.queries == "final" else "every position after both responses"
    empty = sum(int((run.span_tokens == 0).sum()) for run in runs.values())
    depth_note = (
        " The judges have different depths: each is drawn on its own layer axis; the judge difference is taken on relative depth."
        if profiles["judge_diff_axis"] == "relative depth" and profiles["axis"] == "layer"
        else ""
    )
    return render(
        _SECTION,
        figure7=png_data_uri(written["figure7_png"]),
        queries=queries,
        n_items=first.n_items,
        depth_note=depth_note,
        empty=empty,
        judges=[(judge, png_data_uri(written[f"heads_{judge}_png"]), _heads_table(hs)) for judge, hs in heads.items()],
        layers=[(judge, table_html(_LAYER_HEADER, _layer_rows(layer_table, judge))) for judge in heads],
        length=table_html(_REGRESSION_HEADER, _regression_rows(regression)) if regression is not None else None,
    )


_SECTION = (
    "<p><img src='{{ figure7 }}' alt='Figure 7 grid'></p>"
    "<p class='note'>Attention from {{ queries }} onto each response's tokens, per layer; per-token mean (mass / tokens), "
    "mean over heads, both orders and {{ n_items }} instructions. Rows: judges; columns: response authors; right column: "
    "author difference per judge; bottom row: judge difference per author; bottom right: own minus other response per judge."
    "{{ depth_note }} Files: figures/attention_figure7.png, .pdf (mass: attention_figure7_mass.*), attention_profiles.csv."
    "{% if empty %} {{ empty }} empty response span(s) are recorded with 0 tokens and no per-token mean.{% endif %}</p>"
    "<p><a href='figures/attention.html'>Interactive attention maps (figures/attention.html)</a> \u00b7 "
    "per-layer table: figures/attention_layer_differences.csv</p>"
    "{% for judge, image, table in judges %}<details><summary>Own \u2212 other heads: {{ judge }} (head map, top heads)</summary>"
    "<p><img src='{{ image }}' alt='head map {{ judge }}'></p>{{ table }}</details>{% endfor %}"
    "{% for judge, table in layers %}<details><summary>Per-layer own \u2212 other: {{ judge }} (table; "
    "figures/attention_layer_differences.csv)</summary>{{ table }}</details>{% endfor %}"
    "{% if length is not none %}<details><summary>Length control (regression of attention on length)</summary>"
    "<p class='note'>A longer response collects more attention mass by construction. Per instruction, the own \u2212 other "
    "attention difference (mean over layers, heads and orders) is regressed on the own \u2212 other length difference "
    "(tokens); the intercept is the difference expected at equal lengths. Files: attention_length_items.csv, "
    "attention_length_regression.csv, attention_length_control.png.</p>{{ length }}</details>{% endif %}"
)
