"""Figures of runs side by side (`interp compare`): DBG per judge against a size or a config key with its
bootstrap interval (DBG paper Figures 3-4), and Figure 7's own-minus-other profiles across runs on relative
depth. Series: a judge that appears in several runs is one line; judges named once (each run its own, as in
a sweep over sizes) are grouped by the author slot their own answers take (`own: 1st author`), so a size sweep
reads as one line per side of the pair."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from interp.analysis.compare import SIZE_KEY, ComparisonRow, DepthProfile, RunComparison
from interp.report.figures import Figure, save_figure, subplots
from interp.storage import claim_output_dir, path_label, write_csv


def _series(rows: Sequence[ComparisonRow]) -> list[str]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.judge] = counts.get(row.judge, 0) + 1
    names = []
    for row in rows:
        if counts[row.judge] > 1 or row.own_model is None:
            names.append(Path(row.judge).name or row.judge)  # a folder's or a hub id's last part
        else:
            names.append(f"own: {('1st', '2nd')[row.models.index(row.own_model)]} author")
    return names


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def dbg_by_figure(comparison: RunComparison, by: str = SIZE_KEY) -> Figure:
    """DBG (hard, points) per judge against `by` (the judge's size, or a key that differs between the runs),
    with its 95% bootstrap interval. A row with no DBG (the judge's own model is not an author) or no value of
    `by` is left out; a numeric axis spread over more than 10x is drawn on a log scale."""
    values = comparison.axis_values(by)
    kept = [
        (row, value, name)
        for row, value, name in zip(comparison.rows, values, _series(comparison.rows), strict=False)
        if row.dbg_hard is not None and value is not None
    ]
    fig, ax = subplots(figsize=(7.0, 4.2))
    xs = [value for _, value, _ in kept]
    numeric = bool(xs) and _numeric(xs)
    ticks = list(dict.fromkeys(str(x) for x in xs)) if not numeric else []
    for name in dict.fromkeys(name for _, _, name in kept):
        points = sorted(
            ((x if numeric else ticks.index(str(x)), row) for row, x, series in kept if series == name),
            key=lambda p: p[0],
        )
        x = [p[0] for p in points]
        y = [100 * p[1].dbg_hard for p in points]
        low = [100 * (p[1].dbg_hard - p[1].dbg_ci[0]) if p[1].dbg_ci else 0.0 for p in points]
        high = [100 * (p[1].dbg_ci[1] - p[1].dbg_hard) if p[1].dbg_ci else 0.0 for p in points]
        ax.errorbar(x, y, yerr=[low, high], marker="o", capsize=3, label=name)
    ax.axhline(0, color="grey", lw=0.8)
    if numeric and min(xs) > 0 and max(xs) / min(xs) > 10:
        ax.set_xscale("log")
    if not numeric:
        ax.set_xticks(range(len(ticks)), ticks, rotation=20, ha="right", fontsize=8)
    ax.set_xlabel("judge size (parameters)" if by == SIZE_KEY else by)
    ax.set_ylabel("DBG (pts, 95% CI)")
    ax.set_title(
        f"DBG per judge across {len(comparison.runs)} runs"
        + ("" if kept else f" (no judge with DBG and a known {by})"),
        fontsize=10,
    )
    if kept:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def depth_profiles_figure(profiles: Sequence[DepthProfile]) -> Figure:
    """Figure 7's own-minus-other attention per judge and run, on relative depth (0: first layer, 1: last)."""
    fig, ax = subplots(figsize=(7.0, 4.2))
    for profile in profiles:
        ax.plot(
            profile.depth,
            profile.own_minus_other,
            marker=".",
            label=f"{Path(profile.run).name}: {Path(profile.judge).name}",
        )
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("relative depth")
    ax.set_ylabel("attention to own - other answer")
    ax.set_title(
        "Figure 7 across runs: own minus other" + ("" if profiles else " (no run stored attention)"), fontsize=10
    )
    if profiles:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def write_comparison(
    comparison: RunComparison, out: Path, *, by: str, profiles: Sequence[DepthProfile]
) -> dict[str, Path]:
    """`compare.csv`, `dbg_by_<key>.png/.pdf` and `figure7_across_runs.png/.pdf` in `out` (checked by the
    caller: `interp.storage.check_output_dir`); their paths."""
    claim_output_dir(out)
    table = out / "compare.csv"
    frame = comparison.frame()
    write_csv(table, frame.astype(object).where(frame.notna(), None).to_dict("records"), list(frame.columns))
    files = {
        "table": table,
        "figure": save_figure(dbg_by_figure(comparison, by), out / f"dbg_by_{path_label(by)}")["png"],
    }
    files["figure7"] = save_figure(depth_profiles_figure(profiles), out / "figure7_across_runs")["png"]
    return files


def _size_text(row: ComparisonRow) -> str:
    if row.n_parameters is None:
        return "?"
    value = row.n_parameters
    text = f"{value / 1e9:.3g}B" if value >= 1e9 else f"{value / 1e6:.3g}M" if value >= 1e6 else f"{value:,}"
    return text if row.size_source == "recorded" else f"{text} (name)"


def run_labels(runs: Sequence[str]) -> tuple[str | None, dict[str, str]]:
    """(the runs' common folder, each run's path below it): a narrow table then cuts the folder all runs share,
    not the end of the path that tells them apart. One run, or runs with no common folder: their paths."""
    distinct = list(dict.fromkeys(runs))
    try:
        common = os.path.commonpath(distinct) if len(distinct) > 1 else None
    except ValueError:  # absolute and relative paths mixed
        common = None
    if not common or common in distinct or common == os.sep:
        return None, {run: run for run in distinct}
    return common, {run: os.path.relpath(run, common) for run in distinct}


def judge_labels(judges: Sequence[str]) -> tuple[str | None, dict[str, str]]:
    """(the judge folders' common folder, each judge's label): a judge given as a folder is named below the folder
    the folder judges share (one folder judge: by its last part), so a narrow table keeps the end that tells seeds
    apart. Hub ids and installed names stay as they are."""
    distinct = list(dict.fromkeys(judges))
    labels = {judge: judge for judge in distinct}
    folders = [judge for judge in distinct if os.path.isabs(judge) or os.path.isdir(judge)]  # not a hub id
    if len(folders) == 1 and os.path.isabs(folders[0]):
        common = os.path.dirname(folders[0])
        return common, {**labels, folders[0]: os.path.basename(folders[0])}
    common, below = run_labels(folders) if len(folders) > 1 else (None, {})
    return common, {**labels, **below}


def print_comparison(comparison: RunComparison, console=None) -> None:
    """The comparison as a rich table: one row per (run, judge), the differing config keys as columns."""
    from rich import box
    from rich.table import Table

    from interp.formatting import pct, pts, pts_ci
    from interp.report.terminal import results_console

    console = console or results_console()
    fold = "ellipsis" if not console.is_terminal else "fold"
    common, labels = run_labels([row.run for row in comparison.rows])
    judge_common, judges = judge_labels([row.judge for row in comparison.rows])
    caption = [f"runs under {common}"] if common else []
    caption += [f"judge folders under {judge_common}"] if judge_common else []
    table = Table(
        title="DBG per judge across runs (pts, 95% bootstrap interval)",
        title_justify="left",
        caption="; ".join(caption) or None,
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for name in ("run", "judge", *comparison.differing):
        table.add_column(name, overflow=fold, no_wrap=not console.is_terminal)
    for name in ("size", "n", "DBG", "95% CI", "soft", "ties", "w/o ties", "reliable"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in comparison.rows:
        config = [str(row.config.get(key)) for key in comparison.differing]
        table.add_row(
            labels[row.run],
            judges[row.judge],
            *config,
            _size_text(row),
            str(row.n_items),
            pts(row.dbg_hard),
            pts_ci(row.dbg_ci),
            pts(row.dbg_soft),
            pct(row.tie_share),
            pts(row.dbg_no_ties),
            "yes" if row.reliable else "[red]no[/red]",
        )
    console.print(table)
    if not comparison.differing and len(comparison.runs) > 1:
        console.print("The runs' configs are the same (no key differs).", highlight=False)
