"""Intervals and rank statistics, each defined once: the bootstrap over instructions (the one resampling scheme
behind the toolkit's bootstrap intervals), Fieller's interval for a ratio of two correlated estimates (the share of
a gap removed), Clopper-Pearson's exact binomial interval and AUROC (Mann-Whitney, ties half)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from interp.errors import InterpError
from interp.metrics.student_t import student_t_two_sided_quantile


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
    """Refuse a confidence level outside (0, 1), in one line."""
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
    """The central `level` interval of the finite values (NaN, NaN where none is finite)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return (math.nan, math.nan)
    tail = (1.0 - level) / 2.0
    low, high = np.percentile(finite, [100.0 * tail, 100.0 * (1.0 - tail)])
    return (float(low), float(high))


@dataclass(frozen=True)
class RatioInterval:
    """Fieller's confidence set for a ratio theta = num / den. `kind` says its shape: "bounded" ([low, high]),
    "two rays" ((-inf, low] and [high, inf): the denominator is not clear of 0), "whole line" (nothing is
    excluded). `low` / `high` are None where the set is unbounded on that side ("whole line": both None)."""

    estimate: float | None  # num / den; None when den = 0
    low: float | None
    high: float | None
    level: float
    kind: str
    df: float  # the t quantile's degrees of freedom
    t: float  # the two-sided t quantile used

    @property
    def bounded(self) -> bool:
        """Whether the interval is a finite range (Fieller's can be unbounded)."""
        return self.kind == "bounded"

    def to_dict(self) -> dict:
        """The interval as a JSON-ready dict, with `bounded`."""
        return asdict(self) | {"bounded": self.bounded}


def fieller_interval(
    num: float, den: float, covariance: np.ndarray, df: float, *, level: float = 0.95
) -> RatioInterval:
    """Fieller's (1954) interval for theta = num / den from two jointly normal estimates with `covariance`
    [[V_nn, V_nd], [V_nd, V_dd]] (estimated with `df` degrees of freedom).

    H0 at each theta: num - theta * den has mean 0; the set keeps every theta where
    (num - theta * den)^2 <= t^2 * (V_nn - 2 theta V_nd + theta^2 V_dd), t the two-sided (1 - level) quantile of
    Student's t with `df`. It is exact for normal estimates and needs no resampling, so no draw is dropped.
    Where the denominator is not clear of 0 at this level (den^2 < t^2 V_dd) the set is unbounded, and says so
    (`kind`), instead of a narrow interval that would mislead.
    """
    check_level(level)
    v = np.asarray(covariance, dtype=float)
    if v.shape != (2, 2) or not np.all(np.isfinite(v)) or not (math.isfinite(num) and math.isfinite(den)):
        raise InterpError("fieller_interval: need finite num, den and a finite 2 x 2 covariance")
    t = student_t_two_sided_quantile(1.0 - level, df)
    t2 = t * t
    a = den * den - t2 * v[1, 1]
    b = num * den - t2 * v[0, 1]  # the quadratic is a theta^2 - 2 b theta + c <= 0
    c = num * num - t2 * v[0, 0]
    disc = b * b - a * c
    estimate = num / den if den != 0 else None
    common = dict(estimate=estimate, level=level, df=float(df), t=float(t))
    if a > 0:
        root = math.sqrt(max(disc, 0.0))
        return RatioInterval(low=(b - root) / a, high=(b + root) / a, kind="bounded", **common)
    if a < 0 and disc > 0:
        root = math.sqrt(disc)
        low, high = sorted(((b + root) / a, (b - root) / a))
        return RatioInterval(low=low, high=high, kind="two rays", **common)
    return RatioInterval(low=None, high=None, kind="whole line", **common)


def ratio_interval_covers(interval: RatioInterval, value: float) -> bool:
    """Whether Fieller's set contains `value` (the two rays contain what lies outside (low, high))."""
    if interval.kind == "whole line":
        return True
    if interval.kind == "two rays":
        return value <= interval.low or value >= interval.high
    return interval.low <= value <= interval.high


def _binomial_cdf(k: int, n: int, p: float) -> float:
    if p <= 0:
        return 1.0
    if p >= 1:
        return 1.0 if k >= n else 0.0
    logs = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p)
        for i in range(k + 1)
    ]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


def _bisect(f, lo: float = 0.0, hi: float = 1.0) -> float:
    """The root of f on [lo, hi], where f > 0 left of the root and < 0 right of it."""
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return (lo + hi) / 2


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval for a binomial proportion k / n."""
    if n <= 0 or not 0 <= k <= n:
        raise InterpError(f"clopper_pearson: need 0 <= k <= n and n > 0, got k={k}, n={n}")
    tail = (1 - level) / 2
    # lower: P(X >= k | p) = tail, an increasing function of p; bisect its mirror image, which decreases
    lower = 0.0 if k == 0 else _bisect(lambda p: tail - (1 - _binomial_cdf(k - 1, n, p)))
    upper = 1.0 if k == n else _bisect(lambda p: _binomial_cdf(k, n, p) - tail)
    return (lower, upper)


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """P(a positive scores higher than a negative), ties counted half (Mann-Whitney)."""
    pos, neg = np.asarray(positives, dtype=float), np.asarray(negatives, dtype=float)
    if pos.size == 0 or neg.size == 0:
        raise InterpError("auroc: need at least one positive and one negative score")
    # Mann-Whitney U from midranks (tied scores share their mean rank: ties count half), in O(n log n) where a
    # pairwise count holds every (positive, negative) pair (token-level scores run to 10^4 a side). A pair with a
    # NaN in it is neither greater nor tied: it counts 0, as in the pairwise count.
    p, n = pos[~np.isnan(pos)], neg[~np.isnan(neg)]
    if p.size == 0 or n.size == 0:
        return 0.0
    _, group, counts = np.unique(np.concatenate([p, n]), return_inverse=True, return_counts=True)
    midranks = (np.cumsum(counts) - (counts - 1) / 2)[group]
    return float((midranks[: p.size].sum() - p.size * (p.size + 1) / 2) / (pos.size * neg.size))


@dataclass(frozen=True)
class Bootstrap:
    """How a bootstrap interval is drawn: `n_boot` resamples from `seed`, at confidence `level` (`bootstrap_ci`)."""

    n_boot: int = 1000
    seed: int = 0
    level: float = 0.95
