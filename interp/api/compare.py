"""Runs side by side in a notebook (DBG paper Figures 3-4, and Figure 7 across runs):

    table = interp.compare(["runs/qwen0.5b", "runs/qwen7b"])      # RunComparison: .rows, .frame(), .differing
    interp.compare_figure(table, by="n_parameters")               # DBG per judge against judge size, with CIs
    interp.figure7_across_runs(["runs/qwen0.5b", "runs/qwen7b"])  # own-minus-other attention on relative depth

The same code as `interp compare RUN... [--by KEY] [--out DIR] [--json]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interp.analysis.compare import (
    SIZE_KEY,
    RunComparison,
    compare_runs,
    own_minus_other_profiles,
)
from interp.api.runs import run_root
from interp.errors import InterpError
from interp.report.compare import dbg_by_figure, depth_profiles_figure
from interp.report.figures import Figure


def _roots(runs: Any) -> list:
    if isinstance(runs, (str, bytes)) or not isinstance(runs, Sequence):
        raise InterpError(f"runs must be a list of run directories (or loaded runs), not {type(runs).__name__}")
    return [run_root(run) for run in runs]


def compare(runs: Sequence[Any]) -> RunComparison:
    """DBG per judge of several finished runs, side by side.

    >>> comparison = interp.compare([run_dir, run_dir])
    >>> len(comparison.runs)
    2

    Args:
        runs: run directories (or `RunResult`s, `RunDir`s), at least one.

    Returns:
        One row per (run, judge): DBG hard and soft with intervals, ties, the judge's size where known, and
        the values of the config keys that differ between the runs; `.frame()` gives a DataFrame.

    Raises:
        InterpError: no run, or a folder that is not a finished run.
    """
    return compare_runs(_roots(runs))


def compare_figure(comparison: RunComparison | Sequence[Any], *, by: str = SIZE_KEY) -> Figure:
    """DBG per judge against `by` (the judge's size, `n_parameters`, or a config key that differs between the
    runs), with 95% intervals (Figures 3-4). `comparison`: a `RunComparison` or the runs themselves.

    >>> interp.compare_figure([run_dir, run_dir]).savefig("compare.png")
    """
    table = comparison if isinstance(comparison, RunComparison) else compare(comparison)
    return dbg_by_figure(table, by)


def figure7_across_runs(runs: Sequence[Any], *, stat: str = "mean") -> Figure:
    """Each run's Figure 7 own-minus-other attention profile per judge, on relative depth (runs without stored
    attention are left out).

    >>> interp.figure7_across_runs([run_dir, run_dir]).savefig("figure7_across_runs.png")
    """
    profiles, _ = own_minus_other_profiles(_roots(runs), stat)
    return depth_profiles_figure(profiles)
