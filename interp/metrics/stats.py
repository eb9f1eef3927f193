"""Bootstrap intervals over instructions: the one resampling scheme behind every interval the toolkit reports."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from interp.errors import InterpError


def bootstrap_ci(
    stat: Callable[[np.ndarray], float],
    n: int,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval over instructions.

    Draws ``n_boot`` index arrays of length ``n`` from 0..n-1 with replacement (seeded
    ``numpy.random.default_rng(seed)``), evaluates ``stat(indices)`` on each and returns the
    ``(1-level)/2`` and ``(1+level)/2`` percentiles. Resamples where ``stat`` is NaN are ignored;
    if all are NaN the interval is ``(nan, nan)``. Used for every rate in this module (DBG paper
    section 3: "a bootstrap confidence interval over instructions").
    """
    check_level(level)
    draws = bootstrap_draws(n, n_boot=n_boot, seed=seed)
    values = np.array([stat(draws[b]) for b in range(n_boot)], dtype=float)
    return percentile_interval(values, level)


def check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise InterpError(f"bootstrap_ci: level must be in (0, 1), got {level}")


def bootstrap_draws(n: int, *, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """The resampled instruction indices of `bootstrap_ci`, `[n_boot, n]`: a statistic vectorised over them
    (e.g. a mean of every column at once, `values[draws].mean(1)`) gives `bootstrap_ci`'s numbers exactly."""
    if n <= 0:
        raise InterpError("bootstrap_ci: need at least one instruction")
    if n_boot <= 0:
        raise InterpError("bootstrap_ci: n_boot must be positive")
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def percentile_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return (math.nan, math.nan)
    tail = (1.0 - level) / 2.0
    low, high = np.percentile(finite, [100.0 * tail, 100.0 * (1.0 - tail)])
    return (float(low), float(high))
