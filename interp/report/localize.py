"""Figures of a head localisation (`interp.locate.heads`): per method, the signed effect per (layer,
head) with the top heads by |effect| boxed, and the whole ranking as CSV."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from interp.errors import InterpError
from interp.report.attention_figures import head_map_figure
from interp.report.figures import save_figure
from interp.storage import atomic_write_text, keyed_label

QUANTITIES = {
    "attention": "own \u2212 other attention",
    "atp": "AtP: own-span mask (log-odds)",
    "atp-output": "AtP: head output (log-odds)",
    "mask": "mask scan: \u0394P(own)",
}


def check_finite_table(table: pd.DataFrame, judge: str) -> None:
    """Every method's rows must hold finite scores and effects: a ranking of NaN (or -inf) would box "top
    heads" that are no such thing. One `InterpError` line naming the judge and the method, before any file."""
    for method in dict.fromkeys(table["method"]):
        rows = table[table["method"] == method]
        values = rows[["score", "effect"]].to_numpy(float)
        if not np.isfinite(values).all():
            n_bad = int((~np.isfinite(values)).any(axis=1).sum())
            raise InterpError(
                f"localize: judge {judge!r}, method {method!r}: {n_bad} of {len(rows)} heads have a "
                "non-finite score or effect "
                "(NaN or infinity), so no ranking is drawn; are some of the run's answers empty, or does "
                "the judge compute NaN?"
            )


def localize_figure(table: pd.DataFrame, judge: str, method: str, top_k: int = 10):
    """The layer x head heatmap of one localisation `method`'s effects for `judge`, its `top_k` heads marked."""
    check_finite_table(table[table["method"] == method], judge)
    rows = table[table["method"] == method]
    grid = np.full((int(rows["layer"].max()) + 1, int(rows["head"].max()) + 1), np.nan)
    grid[rows["layer"].to_numpy(int), rows["head"].to_numpy(int)] = rows["effect"].to_numpy(float)
    top = [(int(r.layer), int(r.head), float(r.effect)) for r in rows.head(top_k).itertuples()]
    return head_map_figure(grid, judge, top, quantity=QUANTITIES.get(method, method))


def write_localize_figures(table: pd.DataFrame, folder: Path, judge: str, top_k: int = 10) -> dict[str, Path]:
    """One heatmap per method and the ranking CSV in `folder`; returns {name: path}."""
    check_finite_table(table, judge)  # before the folder or any file is written
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"localize_{keyed_label(judge)}"
    written = {}
    for method in dict.fromkeys(table["method"]):
        written[f"{method}_png"] = save_figure(
            localize_figure(table, judge, method, top_k), folder / f"{stem}_{method}"
        )["png"]
    written["csv"] = folder / f"{stem}.csv"
    atomic_write_text(written["csv"], table.to_csv(index=False))
    return written
