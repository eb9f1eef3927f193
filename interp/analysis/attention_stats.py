"""Views of a run's span attention: Figure 7 profiles, per-head own-minus-other maps and top heads,
per-layer differences with bootstrap intervals, and length control (docs/science.md, Span attention).

- `figure7_profiles(run_dir)`: per judge x response author, the per-layer profile (mean over heads, both
  orders and instructions; per-token mean by default, as Figure 7 reads it; `stat="mass"` for the mass),
  with the author difference per judge and the judge difference per author.
- `head_values` / `top_heads`: own-minus-other per (layer, head); the entry point for head exploration and
  for choosing heads to intervene on.
- `layer_differences`: per-layer own-minus-other with bootstrap intervals over instructions.
- `length_table` / `length_regression`: attention difference vs token-length difference (a longer
  response collects more mass by construction), with an OLS fit per judge.

Everything returns tensors or pandas DataFrames; nothing is cached between calls.
"""

from __future__ import annotations

import math
import warnings
from typing import Sequence

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float
from torch import Tensor

from interp.analysis.attention_store import (
    STATS,
    RunAttention,
    Stat,
    attention_judges,
    layer_axis,
    load_attention,
    nanmean,
    resolve_attention,
)
from interp.errors import InterpError
from interp.metrics.stats import bootstrap_draws, check_level, percentile_interval

__all__ = ["STATS", "RunAttention", "Stat", "attention_judges", "load_attention"]


# ---- Figure 7 --------------------------------------------------------------------------------------


def author_profiles(run: RunAttention, stat: Stat = "mean") -> Float[Tensor, "author layer"]:
    """Per author (models order), the per-layer attention: mean over heads, both orders and instructions."""
    return nanmean(run.by_author(stat), (0, 1, 3)).T.contiguous()


def _interp(x_from: np.ndarray, values: Tensor, x_to: np.ndarray) -> Tensor:
    return torch.from_numpy(np.interp(x_to, x_from, values.double().numpy())).float()


def figure7_profiles(
    run_dir, stat: Stat = "mean", *, relative_depth: bool = False, judges: Sequence[str] | None = None
) -> dict:
    """The Figure 7 grid as data; `run_dir` is a run directory, one RunAttention or a list of them.

    Returns a dict with
      - "judges", "authors" (the run's models), "stat", "axis" ("layer" or "relative depth")
      - "x": {judge: layer axis (np.ndarray)}
      - "cells": {judge: {author: Tensor[layer]}}  attention of that judge to that author's responses
      - "author_diff": {judge: Tensor[layer]}  `cells[judge][authors[0]] - cells[judge][authors[1]]`
      - "judge_diff": {author: Tensor}  `cells[judges[0]][author] - cells[judges[1]][author]` (two judges or
        more; the first two), on "judge_diff_x" ("judge_diff_axis"): the shared layer axis, or relative depth
        (linear interpolation onto the deeper model's grid) when the judges' depths differ
      - "own_minus_other": {judge: Tensor[layer]} for judges whose own model (`own_model`) is an author
      - "grid": DataFrame, index judges (+ judge-difference row), columns authors (+ author-difference
        column), each cell a per-layer Tensor
      - "long": the same numbers as a long DataFrame (kind, judge, author, layer, depth, x, value)
    """
    runs = _attention_runs(run_dir, judges)
    authors = runs[0].models
    cells, author_diff, own_other, xs = {}, {}, {}, {}
    for run in runs:
        profile = author_profiles(run, stat)
        cells[run.judge] = {author: profile[k] for k, author in enumerate(authors)}
        author_diff[run.judge] = profile[0] - profile[1]
        xs[run.judge] = run.depth(relative_depth)
        if run.has_own:  # an organism's own answers are its base model's
            own_other[run.judge] = profile[run.own_author] - profile[1 - run.own_author]
    judge_names = [run.judge for run in runs]
    judge_diff, diff_x, diff_axis = _judge_difference(runs, cells, authors, relative_depth)
    axis = "relative depth" if relative_depth else "layer"
    author_col = f"author difference ({authors[0]} - {authors[1]})"
    judge_row = f"judge difference ({judge_names[0]} - {judge_names[1]})" if judge_diff else None
    grid = pd.DataFrame(
        index=judge_names + ([judge_row] if judge_row else []), columns=list(authors) + [author_col], dtype=object
    )
    for judge in judge_names:
        for author in authors:
            grid.at[judge, author] = cells[judge][author]
        grid.at[judge, author_col] = author_diff[judge]
    if judge_row:
        for author in authors:
            grid.at[judge_row, author] = judge_diff[author]
    rows = []
    for run in runs:
        for author in authors:
            _add_long_rows(rows, ("cell", run.judge, author), xs[run.judge], cells[run.judge][author])
        pair = f"{authors[0]} - {authors[1]}"
        _add_long_rows(rows, ("author_diff", run.judge, pair), xs[run.judge], author_diff[run.judge])
        if run.judge in own_other:
            _add_long_rows(rows, ("own_minus_other", run.judge, "own - other"), xs[run.judge], own_other[run.judge])
    interpolated = len(runs) >= 2 and runs[0].n_layers != runs[1].n_layers
    for author, values in judge_diff.items():
        key = ("judge_diff", f"{judge_names[0]} - {judge_names[1]}", author)
        _add_long_rows(rows, key, diff_x, values, interpolated)
    return {
        "stat": stat,
        "axis": axis,
        "judges": judge_names,
        "authors": list(authors),
        "x": xs,
        "cells": cells,
        "author_diff": author_diff,
        "judge_diff": judge_diff,
        "judge_diff_x": diff_x,
        "judge_diff_axis": diff_axis,
        "own_minus_other": own_other,
        "grid": grid,
        "long": pd.DataFrame(rows, columns=["kind", "judge", "author", "layer", "depth", "x", "value"]),
    }


def _attention_runs(run_dir, judges: Sequence[str] | None) -> list[RunAttention]:
    """The judges' stored attention: `run_dir` is a run directory, one RunAttention or a list of them."""
    if isinstance(run_dir, RunAttention):
        runs = [run_dir]
    elif isinstance(run_dir, (list, tuple)):
        runs = [run for run in run_dir if judges is None or run.judge in judges]
    else:
        runs = [load_attention(run_dir, j) for j in (judges or attention_judges(run_dir))]
    if not runs:
        raise InterpError("no judge attention to draw")
    return runs


def _judge_difference(runs: list[RunAttention], cells: dict, authors, relative_depth: bool):
    """The first two judges' difference per author, its x axis and the axis' name (all empty/None for one judge):
    on the shared layer axis, or on relative depth (interpolated onto the deeper grid) when the depths differ."""
    judge_diff: dict[str, Tensor] = {}
    diff_x, diff_axis = None, None
    if len(runs) >= 2:
        first, second = runs[0], runs[1]
        if first.n_layers == second.n_layers:
            diff_x, diff_axis = first.depth(relative_depth), ("relative depth" if relative_depth else "layer")
            for author in authors:
                judge_diff[author] = cells[first.judge][author] - cells[second.judge][author]
        else:
            diff_x, diff_axis = layer_axis(max(first.n_layers, second.n_layers), True), "relative depth"
            for author in authors:
                judge_diff[author] = _interp(first.depth(True), cells[first.judge][author], diff_x) - _interp(
                    second.depth(True), cells[second.judge][author], diff_x
                )
    return judge_diff, diff_x, diff_axis


def _add_long_rows(rows: list, key: tuple[str, str, str], x, values, interpolated: bool = False) -> None:
    """Append one profile to the long table: `key` is (kind, judge, author), one row per layer."""
    kind, judge, author = key
    n = len(values)
    for position, value in enumerate(values.tolist()):
        depth = float(x[position]) if interpolated else position / max(n - 1, 1)
        layer = math.nan if interpolated else position
        rows.append(
            {
                "kind": kind,
                "judge": judge,
                "author": author,
                "layer": layer,
                "depth": depth,
                "x": float(x[position]),
                "value": value,
            }
        )


# ---- heads -----------------------------------------------------------------------------------------


def head_values(
    run_dir, judge: str | None = None, stat: Stat = "mean", items: Sequence[str] | None = None
) -> Float[Tensor, "layer head"]:
    """Own-minus-other attention per (layer, head): mean over both orders and instructions (empty spans
    skipped); over the given item ids only when `items` is given (e.g. a selection split)."""
    run = resolve_attention(run_dir, judge)
    values = run.own_minus_other(stat)
    if items is not None:
        wanted = set(items)
        values = values[[index for index, item_id in enumerate(run.item_ids) if item_id in wanted]]
    return nanmean(values, (0, 1))


def top_heads(
    run_dir, judge: str | None = None, k: int = 10, stat: Stat = "mean", items: Sequence[str] | None = None
) -> list[tuple[int, int, float]]:
    """The k heads with the largest own-minus-other attention: [(layer, head, value)], largest first."""
    values = head_values(run_dir, judge, stat, items)
    flat = values.flatten()
    finite = torch.nonzero(torch.isfinite(flat)).flatten()
    order = finite[torch.argsort(flat[finite], descending=True, stable=True)][: max(int(k), 0)]
    heads = values.shape[1]
    return [(int(i) // heads, int(i) % heads, float(flat[i])) for i in order]


def heads_table(heads: Sequence[tuple[int, int, float]]) -> dict[int, list[int]]:
    """`top_heads` output as a layer -> sorted heads table (the form an intervention spec takes)."""
    table: dict[int, list[int]] = {}
    for layer, head, _ in heads:
        table.setdefault(int(layer), []).append(int(head))
    return {layer: sorted(hs) for layer, hs in sorted(table.items())}


def head_table(run_dir, judge: str | None = None) -> pd.DataFrame:
    """Every (layer, head): own, other and own-minus-other, per-token mean and mass."""
    run = resolve_attention(run_dir, judge)
    rows = {"layer": [], "head": []}
    layers, heads = torch.meshgrid(torch.arange(run.n_layers), torch.arange(run.n_heads), indexing="ij")
    rows["layer"], rows["head"] = layers.flatten().tolist(), heads.flatten().tolist()
    frame = pd.DataFrame(rows)
    frame.insert(0, "judge", run.judge)
    for stat in STATS:
        frame[f"own_{stat}"] = nanmean(run.own(stat), (0, 1)).flatten().numpy()
        frame[f"other_{stat}"] = nanmean(run.other(stat), (0, 1)).flatten().numpy()
        frame[f"diff_{stat}"] = frame[f"own_{stat}"] - frame[f"other_{stat}"]
    return frame


# ---- per-layer differences with intervals ------------------------------------------------------------


def item_layer_differences(run: RunAttention, stat: Stat = "mean") -> Float[Tensor, "item layer"]:
    """Per instruction and layer, own minus other (mean over heads and both orders)."""
    return nanmean(run.own_minus_other(stat), (1, 3))


def layer_differences(
    run_dir, judge: str | None = None, n_boot: int = 1000, seed: int = 0, *, stat: Stat = "mean", level: float = 0.95
) -> pd.DataFrame:
    """Per layer: own, other, own-minus-other and its percentile bootstrap interval over instructions.

    Columns: judge, stat, layer, depth (layer / (L - 1)), own, other, diff, ci_low, ci_high, n_items.
    """
    run = resolve_attention(run_dir, judge)
    per_item = item_layer_differences(run, stat).double().numpy()
    own = nanmean(run.own(stat), (0, 1, 3)).numpy()
    other = nanmean(run.other(stat), (0, 1, 3)).numpy()
    depth = run.depth(True)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check_level(level)
        # every layer's resampled mean at once: the same draws (and numbers) as a `bootstrap_ci` per layer
        resampled = np.nanmean(per_item[bootstrap_draws(run.n_items, n_boot=n_boot, seed=seed)], axis=1)
        for layer in range(run.n_layers):
            column = per_item[:, layer]
            low, high = percentile_interval(resampled[:, layer], level)
            rows.append(
                {
                    "judge": run.judge,
                    "stat": stat,
                    "layer": layer,
                    "depth": float(depth[layer]),
                    "own": float(own[layer]),
                    "other": float(other[layer]),
                    "diff": float(np.nanmean(column)) if np.isfinite(column).any() else math.nan,
                    "ci_low": low,
                    "ci_high": high,
                    "n_items": int(np.isfinite(column).sum()),
                }
            )
    return pd.DataFrame(rows)


# ---- length control --------------------------------------------------------------------------------


def length_table(run_dir, judge: str | None = None) -> pd.DataFrame:
    """Per instruction: own/other token lengths and attention (mass and per-token mean), averaged over both
    orders, layers and heads, and the own-minus-other differences."""
    run = resolve_attention(run_dir, judge)
    own_tokens = run.own_tokens().mean(1).numpy()
    other_tokens = run.other_tokens().mean(1).numpy()
    frame = pd.DataFrame(
        {
            "judge": run.judge,
            "item_id": run.item_ids,
            "task": run.tasks,
            "own_tokens": own_tokens,
            "other_tokens": other_tokens,
        }
    )
    frame["length_diff"] = frame["own_tokens"] - frame["other_tokens"]
    for stat in ("mass", "mean"):
        frame[f"{stat}_own"] = nanmean(run.own(stat), (1, 2, 3)).numpy()
        frame[f"{stat}_other"] = nanmean(run.other(stat), (1, 2, 3)).numpy()
        frame[f"{stat}_diff"] = frame[f"{stat}_own"] - frame[f"{stat}_other"]
    return frame


def ols(x, y) -> dict:
    """Least squares y = intercept + slope * x over the finite pairs: slope, intercept, r, n.

    Fewer than two points, or no spread in x, gives NaN slope and r (intercept = mean of y); never raises.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = int(x.size)
    if n == 0:
        return {"slope": math.nan, "intercept": math.nan, "r": math.nan, "n": 0}
    dx, dy = x - x.mean(), y - y.mean()
    sxx, syy = float(dx @ dx), float(dy @ dy)
    if n < 2 or sxx == 0.0:
        return {"slope": math.nan, "intercept": float(y.mean()), "r": math.nan, "n": n}
    slope = float(dx @ dy) / sxx
    r = float(dx @ dy) / math.sqrt(sxx * syy) if syy > 0 else math.nan
    return {"slope": slope, "intercept": float(y.mean() - slope * x.mean()), "r": r, "n": n}


def length_regression(run_dir, judges: Sequence[str] | None = None) -> pd.DataFrame:
    """Per judge and statistic, the OLS fit of (own - other attention) on (own - other token length).

    The intercept is the attention difference expected at equal lengths: self-attention beyond length.
    """
    if isinstance(run_dir, RunAttention):
        tables = [length_table(run_dir)]
    else:
        tables = [length_table(run_dir, judge) for judge in (judges or attention_judges(run_dir))]
    rows = []
    for table in tables:
        for stat in ("mass", "mean"):
            fit = ols(table["length_diff"], table[f"{stat}_diff"])
            rows.append(
                {
                    "judge": table["judge"].iloc[0] if len(table) else "",
                    "stat": stat,
                    **fit,
                    "mean_diff": float(np.nanmean(table[f"{stat}_diff"]))
                    if np.isfinite(table[f"{stat}_diff"]).any()
                    else math.nan,
                    "mean_length_diff": float(table["length_diff"].mean()),
                }
            )
    return pd.DataFrame(
        rows, columns=["judge", "stat", "slope", "intercept", "r", "n", "mean_diff", "mean_length_diff"]
    )
