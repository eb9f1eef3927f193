"""The attention section: Figure 7 and the head maps of a run, as paper figures and interactive HTML (drawn by
`interp.report.attention_figures`; this module computes the tables and writes the files).

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

import math
from pathlib import Path

import pandas as pd

from interp.analysis.attention_stats import (
    attention_judges,
    figure7_profiles,
    head_table,
    head_values,
    layer_differences,
    length_regression,
    length_table,
    load_attention,
    top_heads,
)
from interp.formatting import number
from interp.report.attention_figures import (
    figure7_grid,
    head_map_figure,
    interactive_sections,
    length_figure,
    write_interactive,
)
from interp.report.figures import png_data_uri, save_figure
from interp.report.html import table_html
from interp.results.codec import write_attention_summary
from interp.results.studies import AttentionSummary, LengthFit, TopHeadMass, TopHeadMean
from interp.run.store import RunDir
from interp.storage import atomic_write_text, figure_label
from interp.templating import Markup, render

SECTION_TITLE = "Attention over response spans (Figure 7)"


def _finite_or_none(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


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
    profiles = _write_profiles(runs, figures, written, relative_depth=relative_depth, transpose=transpose)
    own_runs = {judge: run for judge, run in runs.items() if run.has_own}  # organisms too (own = their base)
    heads, heads_mass, layer_table, length_tables, regression = _write_head_tables(
        own_runs, figures, written, top_k=top_k, n_boot=n_boot, seed=seed
    )
    summary = AttentionSummary(
        judges=judges,
        authors=list(first.models),
        readout=first.readout,
        n_items=first.n_items,
        empty_spans={judge: int((run.span_tokens == 0).sum()) for judge, run in runs.items()},
        **_top_heads_summary(heads, heads_mass),
        length_regression=[
            LengthFit(**{k: _finite_or_none(v) for k, v in row.items()}) for row in regression.to_dict("records")
        ]
        if regression is not None
        else [],
        n_boot=n_boot,
        seed=seed,
    )
    written["summary_json"] = figures / "attention_summary.json"

    written["html"] = figures / "attention.html"
    write_interactive(
        written["html"],
        f"Attention over response spans: {' vs '.join(first.models)}",
        interactive_sections(profiles, own_runs, heads, layer_table, length_tables),
        _tables_html(heads, layer_table, regression),
    )
    written["section"] = figures / "attention_section.html"
    atomic_write_text(
        written["section"],
        SECTION_TITLE + "\n" + _section_body(run_dir, written, runs, heads, layer_table, regression, profiles),
    )
    summary.files = {name: str(path.relative_to(run_dir)) for name, path in written.items()}
    write_attention_summary(written["summary_json"], summary)
    return written


def _write_profiles(runs: dict, figures: Path, written: dict, *, relative_depth: bool, transpose: bool) -> dict:
    """The Figure 7 grids (per-token mean and mass) and their profiles as CSV; the per-token mean profiles."""
    profiles = figure7_profiles(list(runs.values()), "mean", relative_depth=relative_depth)
    profiles_mass = figure7_profiles(list(runs.values()), "mass", relative_depth=relative_depth)
    paths = save_figure(figure7_grid(profiles, transpose=transpose), figures / "attention_figure7")
    written["figure7_png"], written["figure7_pdf"] = paths["png"], paths["pdf"]
    paths = save_figure(figure7_grid(profiles_mass, transpose=transpose), figures / "attention_figure7_mass")
    written["figure7_mass_png"], written["figure7_mass_pdf"] = paths["png"], paths["pdf"]
    long = pd.concat(
        [profiles["long"].assign(stat="mean"), profiles_mass["long"].assign(stat="mass")], ignore_index=True
    )
    written["profiles_csv"] = figures / "attention_profiles.csv"
    atomic_write_text(written["profiles_csv"], long.to_csv(index=False))
    return profiles


def _write_head_tables(own_runs: dict, figures: Path, written: dict, *, top_k: int, n_boot: int, seed: int) -> tuple:
    """Per judge with an own answer: its head map, top heads (mean and mass), per-layer differences and length
    table, written with the length regression. Returns (heads, heads_mass, layer_table, length_tables,
    regression); regression is None where no judge has an own answer."""
    heads: dict[str, list] = {}
    heads_mass: dict[str, list] = {}
    head_tables, layer_tables, length_tables = [], [], []
    for judge, run in own_runs.items():
        k = min(top_k, run.n_layers * run.n_heads)
        heads[judge] = top_heads(run, k=k, stat="mean")
        heads_mass[judge] = top_heads(run, k=k, stat="mass")
        paths = save_figure(
            head_map_figure(head_values(run, stat="mean").numpy(), judge, heads[judge]),
            figures / f"attention_heads_{figure_label(judge)}",
        )
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
    return heads, heads_mass, layer_table, length_tables, regression


def _top_heads_summary(heads: dict, heads_mass: dict) -> dict:
    """The summary's top heads per judge, by per-token mean and by mass."""
    return {
        "top_heads": {
            judge: [TopHeadMean(layer=l, head=h, own_minus_other_mean=_finite_or_none(v)) for l, h, v in hs]
            for judge, hs in heads.items()
        },
        "top_heads_mass": {
            judge: [TopHeadMass(layer=l, head=h, own_minus_other_mass=_finite_or_none(v)) for l, h, v in hs]
            for judge, hs in heads_mass.items()
        },
    }


def _heads_table(heads: list) -> str:
    return table_html(
        ["rank", "layer", "head", "own \u2212 other (per-token mean)"],
        [[i, l, h, number(v, 4, signed=True)] for i, (l, h, v) in enumerate(heads, 1)],
    )


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
                f"{number(m['diff'], 3, signed=True)} [{number(m['ci_low'], 3, signed=True)}, "
                f"{number(m['ci_high'], 3, signed=True)}]",
                f"{number(s['diff'], 3, signed=True)} [{number(s['ci_low'], 3, signed=True)}, "
                f"{number(s['ci_high'], 3, signed=True)}]",
            ]
        )
    return rows


_LAYER_HEADER = [
    "layer",
    "own (mean)",
    "other (mean)",
    "own \u2212 other, per-token mean [95% CI]",
    "own \u2212 other, mass [95% CI]",
]
_REGRESSION_HEADER = [
    "judge",
    "statistic",
    "slope (per token of length)",
    "intercept (at equal length)",
    "r",
    "n",
    "mean difference",
    "mean length difference",
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
    judges = [
        (judge, _heads_table(hs), table_html(_LAYER_HEADER, _layer_rows(layer_table, judge)))
        for judge, hs in heads.items()
    ]
    length = table_html(_REGRESSION_HEADER, _regression_rows(regression)) if regression is not None else None
    return render(_TABLES, judges=judges, length=length)


_TABLES = (
    "{% for judge, heads, layers in judges %}<h2>Top own \u2212 other heads: {{ judge }}</h2>{{ heads }}"
    "<h3>Per layer: {{ judge }}</h3>{{ layers }}{% endfor %}"
    "{% if length is not none %}<h2>Length control</h2>{{ length }}{% endif %}"
)


def _section_body(
    run_dir: Path, written: dict, runs: dict, heads: dict, layer_table: pd.DataFrame, regression, profiles: dict
) -> str:
    first = next(iter(runs.values()))
    readout = (
        "the final prompt position (the verdict position)"
        if first.readout == "final"
        else "every position after both responses"
    )
    empty = sum(int((run.span_tokens == 0).sum()) for run in runs.values())
    depth_note = (
        " The judges have different depths: each is drawn on its own layer axis; the judge difference is "
        "taken on relative depth."
        if profiles["judge_diff_axis"] == "relative depth" and profiles["axis"] == "layer"
        else ""
    )
    return render(
        _SECTION,
        figure7=png_data_uri(written["figure7_png"]),
        readout=readout,
        n_items=first.n_items,
        depth_note=depth_note,
        empty=empty,
        judges=[(judge, png_data_uri(written[f"heads_{judge}_png"]), _heads_table(hs)) for judge, hs in heads.items()],
        layers=[(judge, table_html(_LAYER_HEADER, _layer_rows(layer_table, judge))) for judge in heads],
        length=table_html(_REGRESSION_HEADER, _regression_rows(regression)) if regression is not None else None,
    )


_SECTION = (
    "<p><img src='{{ figure7 }}' alt='Figure 7 grid'></p>"
    "<p class='note'>Attention from {{ readout }} onto each response's tokens, per layer; per-token mean "
    "(mass / tokens), "
    "mean over heads, both orders and {{ n_items }} instructions. Rows: judges; columns: response authors; "
    "right column: "
    "author difference per judge; bottom row: judge difference per author; bottom right: own minus other "
    "response per judge."
    "{{ depth_note }} Files: figures/attention_figure7.png, .pdf (mass: attention_figure7_mass.*), "
    "attention_profiles.csv."
    "{% if empty %} {{ empty }} empty response span(s) are recorded with 0 tokens and no per-token mean.{% endif %}</p>"
    "<p><a href='figures/attention.html'>Interactive attention maps (figures/attention.html)</a> \u00b7 "
    "per-layer table: figures/attention_layer_differences.csv</p>"
    "{% for judge, image, table in judges %}<details><summary>Own \u2212 other heads: {{ judge }} (head "
    "map, top heads)</summary>"
    "<p><img src='{{ image }}' alt='head map {{ judge }}'></p>{{ table }}</details>{% endfor %}"
    "{% for judge, table in layers %}<details><summary>Per-layer own \u2212 other: {{ judge }} (table; "
    "figures/attention_layer_differences.csv)</summary>{{ table }}</details>{% endfor %}"
    "{% if length is not none %}<details><summary>Length control (regression of attention on length)</summary>"
    "<p class='note'>A longer response collects more attention mass by construction. Per instruction, the "
    "own \u2212 other "
    "attention difference (mean over layers, heads and orders) is regressed on the own \u2212 other length difference "
    "(tokens); the intercept is the difference expected at equal lengths. Files: attention_length_items.csv, "
    "attention_length_regression.csv, attention_length_control.png.</p>{{ length }}</details>{% endif %}"
)
