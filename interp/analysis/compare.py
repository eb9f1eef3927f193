"""Runs side by side (DBG paper, Figures 3-4): DBG per judge of several finished runs, with what sets them apart.

`compare_runs(paths)` reads each run through its typed readers (`check_finished`, `RunDir.read_config`,
`RunDir.read_summary`) and gives one `ComparisonRow` per (run, judge): DBG hard and soft with their bootstrap
intervals, the tie share and DBG without ties (Figure 8), the judge's size, and the values of the config keys
that differ between the runs (nested keys dotted: `gold.models`). A judge's size is its parameter count as
the run recorded it (`summary.json` `model_sizes`, local models), else read from its name (`8B`, `135m`,
`0.5B`), else unknown. `own_minus_other_profiles` gives the Figure 7 own-minus-other attention of every run
that stored attention, on relative depth, to draw runs of different depths on one axis.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interp.analysis.attention_stats import figure7_profiles
from interp.analysis.attention_store import attention_judges
from interp.core.models import own_model
from interp.errors import InterpError
from interp.run.store import RunDir, check_finished

SIZE_KEY = "n_parameters"
_SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)([mMbB])(?![A-Za-z0-9])")
_UNITS = {"m": 1e6, "b": 1e9}


def size_from_name(name: str) -> int | None:
    """A parameter count read from a model's name (`Qwen2.5-0.5B-Instruct` -> 500_000_000,
    `smollm2-135m-instruct` -> 135_000_000); None when the name holds no size. The last match wins (`-3.1-8B`)."""
    found = _SIZE.findall(name.replace("_", "-"))
    if not found:
        return None
    number, unit = found[-1]
    return round(float(number) * _UNITS[unit.lower()])


@dataclass(frozen=True)
class ComparisonRow:
    """One judge of one run."""

    run: str  # the run directory as given
    judge: str
    own_model: str | None  # the judge's own model when it is one of the run's authors
    models: tuple[str, str]  # the run's two authors
    n_items: int
    dbg_hard: float | None
    dbg_ci: tuple[float, float] | None
    dbg_soft: float | None
    dbg_soft_ci: tuple[float, float] | None
    tie_share: float | None
    dbg_no_ties: float | None
    reliable: bool
    n_parameters: int | None  # the judge's size (`size_source` says where it came from)
    size_source: str | None  # "recorded" (by the run), "name" (read from the judge's name), None
    config: dict[str, Any] = field(default_factory=dict)  # the values of the config keys that differ between the runs

    def record(self) -> dict:
        """The row as JSON-ready data."""
        data = asdict(self)
        data["models"] = list(self.models)
        for key in ("dbg_ci", "dbg_soft_ci"):
            data[key] = None if data[key] is None else list(data[key])
        return data


@dataclass(frozen=True)
class RunComparison:
    """DBG per judge across runs; `differing`: the config keys whose values differ between the runs."""

    runs: list[str]
    rows: list[ComparisonRow]
    differing: list[str]

    def records(self) -> list[dict]:
        """Every row as JSON-ready data (what `interp compare --json` prints)."""
        return [row.record() for row in self.rows]

    def frame(self) -> pd.DataFrame:
        """One row per (run, judge); the differing config keys as columns of their own."""
        rows = []
        for row in self.rows:
            data = row.record()
            config = data.pop("config")
            rows.append(data | {key if key not in data else f"config.{key}": value for key, value in config.items()})
        return pd.DataFrame(rows)

    def axis_values(self, by: str) -> list[Any]:
        """Each row's value of `by`: the judge's size (`n_parameters`) or a config key (dotted when nested)."""
        if by == SIZE_KEY:
            return [row.n_parameters for row in self.rows]
        if by not in self.differing and not all(by in row.config for row in self.rows):
            shown = ", ".join([SIZE_KEY, *self.differing])
            raise InterpError(f"{by!r} is not a key that differs between the runs; use one of: {shown}")
        return [row.config.get(by) for row in self.rows]


def flat_config(data: dict, prefix: str = "") -> dict[str, Any]:
    """A config's keys, nested tables dotted (`gold.models`); lists and values as they are."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and key != "imports":
            flat |= flat_config(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _pair(value) -> tuple[float, float] | None:
    return (float(value[0]), float(value[1])) if isinstance(value, (list, tuple)) and len(value) == 2 else None


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _size(judge: str, recorded: dict) -> tuple[int | None, str | None]:
    if isinstance(recorded.get(judge), int):
        return recorded[judge], "recorded"
    from_name = size_from_name(Path(judge).name)  # a folder's or a hub id's last part
    return (from_name, "name") if from_name is not None else (None, None)


def compare_runs(run_dirs: Sequence[str | Path]) -> RunComparison:
    """DBG per judge of each finished run in `run_dirs` (at least one), side by side."""
    if not run_dirs:
        raise InterpError("compare needs at least one run directory")
    loaded = []
    for run_dir in run_dirs:
        paths = check_finished(Path(run_dir))
        loaded.append((str(run_dir), paths.read_config(), paths.read_summary()))
    configs = [flat_config(config.model_dump(exclude_none=True, mode="json")) for _, config, _ in loaded]
    keys = sorted({key for config in configs for key in config})
    differing = [key for key in keys if len({repr(config.get(key)) for config in configs}) > 1]
    rows = []
    for (name, config, summary), flat in zip(loaded, configs, strict=False):
        recorded = summary.model_sizes or {}
        for judge, s in summary.judges.items():
            size, source = _size(judge, recorded)
            own = own_model(judge)
            if own in config.models and s.dbg_hard is None and config.mode != "pointwise":  # a pairwise DBG exists
                raise InterpError(
                    f"{name}/summary.json has no DBG for {judge}, which wrote one of the run's answers (a damaged "
                    "or hand-edited summary); rebuild it with `interp dbg` on the run's config"
                )
            rows.append(
                ComparisonRow(
                    run=name,
                    judge=judge,
                    own_model=own if own in config.models else None,
                    models=(config.models[0], config.models[1]),
                    n_items=summary.n_items,
                    dbg_hard=_number(s.dbg_hard),
                    dbg_ci=_pair(s.dbg_ci),
                    dbg_soft=_number(s.dbg_soft),
                    dbg_soft_ci=_pair(s.dbg_soft_ci),
                    tie_share=_number(s.tie_share),
                    dbg_no_ties=_number(s.dbg_no_ties),
                    reliable=not s.unreliable_because,
                    n_parameters=size,
                    size_source=source,
                    config={key: flat.get(key) for key in differing},
                )
            )
    return RunComparison([name for name, _, _ in loaded], rows, differing)


@dataclass(frozen=True)
class DepthProfile:
    """One judge's own-minus-other attention per layer (Figure 7's last column), on relative depth 0..1."""

    run: str
    judge: str
    depth: np.ndarray
    own_minus_other: np.ndarray


def own_minus_other_profiles(
    run_dirs: Sequence[str | Path], stat: str = "mean"
) -> tuple[list[DepthProfile], list[str]]:
    """The Figure 7 own-minus-other profile of every judge with stored attention whose own model is an author,
    per run, on relative depth; and the runs with none (run with `attention = "none"`, or no such judge)."""
    profiles: list[DepthProfile] = []
    without: list[str] = []
    for run_dir in run_dirs:
        paths = RunDir(Path(run_dir))
        judges = attention_judges(paths.root) if paths.read_config().attention != "none" else []
        grid = (
            figure7_profiles(run_dir, stat, relative_depth=True, judges=judges) if judges else {"own_minus_other": {}}
        )
        if not grid["own_minus_other"]:
            without.append(str(run_dir))
        for judge, values in grid["own_minus_other"].items():
            x = np.asarray(grid["x"][judge], dtype=float)
            profiles.append(DepthProfile(str(run_dir), judge, x, np.asarray(values, dtype=float)))
    return profiles, without
