"""Families of judges: a planted procedure's judges against a null procedure's, and the multi-bootstrap.

Seeds of one training procedure give a family of judges. A planted family differs from the null family only
if the difference between their judge-level statistics exceeds the spread between seeds:

- `two_family_test`: a permutation test over judge labels (exact under H0 for any distribution) and Welch's t,
  with the difference in between-seed SDs;
- `multi_bootstrap`: a percentile interval (with the count of dropped non-finite draws) that resamples judges
  within each family and items, jointly (Sellam et al. 2022, MultiBERTs), for any statistic of
  [judge, ..., item] arrays.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np
from jaxtyping import Float

from interp.errors import InterpError
from interp.metrics.causal_test import as_extreme
from interp.metrics.stats import percentile_interval
from interp.metrics.student_t import student_t_two_sided_p

N_PERMUTATIONS = 10_000
N_BOOT = 1000


def finite_array(values, name: str, ndim: int) -> np.ndarray:
    """`values` as a non-empty float array of `ndim` dimensions with finite entries, else one InterpError."""
    array = np.asarray(values, dtype=float)
    if array.ndim != ndim or array.size == 0:
        raise InterpError(f"{name}: need a non-empty {ndim}-D array, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InterpError(f"{name}: values must be finite numbers (found NaN or inf)")
    return array


FamilyStatistic = Callable[[list[np.ndarray]], np.ndarray]
"""Maps the families, each resampled to [draw, judge, *rest, item], to one value per draw ([draw])."""


@dataclass(frozen=True)
class Interval:
    """An estimate with its bootstrap interval, the confidence level and the draws it took."""

    estimate: float
    low: float
    high: float
    level: float
    n_boot: int
    n_dropped: int = 0  # resamples where the statistic was not finite (dropped from the percentiles)

    def to_dict(self) -> dict:
        """The interval as a JSON-ready dict."""
        return asdict(self)


def _families(families: Sequence, name: str) -> list[np.ndarray]:
    arrays = [np.asarray(f, dtype=float) for f in families]
    if not arrays:
        raise InterpError(f"{name}: need at least one family")
    for a in arrays:
        if a.ndim < 2 or a.shape[0] == 0 or a.shape[-1] == 0:
            raise InterpError(
                f"{name}: each family is a [judge, ..., item] array with at least one judge and item, got "
                f"shape {a.shape}"
            )
        if not np.all(np.isfinite(a)):
            raise InterpError(f"{name}: values must be finite numbers (found NaN or inf)")
    items = {a.shape[-1] for a in arrays}
    if len(items) != 1:
        raise InterpError(f"{name}: every judge must read the same items; the families have {sorted(items)} items")
    return arrays


def multi_bootstrap(
    families: Sequence[Float[np.ndarray, "judge *rest item"]],
    statistic: FamilyStatistic,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
    chunk: int = 100,
) -> Interval:
    """A percentile interval that resamples judges within each family and items, jointly (Sellam et al. 2022).

    `families[f]` holds family f's per-item values, judges on the first axis and the (shared) items on the
    last; axes in between (e.g. before / after an intervention) travel with their judge. Each draw resamples
    every family's judges with replacement (independently per family) and one set of items with replacement,
    shared by all judges of all families (they read the same items). `statistic` is vectorised: it gets the
    resampled families as [draw, judge, *rest, item] arrays and returns one value per draw; the estimate is
    the statistic on the data as observed. Resamples where the statistic is not finite are dropped and counted
    (`n_dropped`).
    """
    arrays = _families(families, "multi_bootstrap")
    if n_boot < 1:
        raise InterpError("multi_bootstrap: n_boot must be at least 1")
    if not 0 < level < 1:
        raise InterpError(f"multi_bootstrap: level must be in (0, 1), got {level}")
    n_items = arrays[0].shape[-1]
    estimate = float(np.asarray(statistic([a[None] for a in arrays])).reshape(-1)[0])
    rng = np.random.default_rng(seed)
    values = []
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        judges = [rng.integers(0, a.shape[0], size=(b, a.shape[0])) for a in arrays]
        items = rng.integers(0, n_items, size=(b, n_items))
        resampled = []
        for a, j in zip(arrays, judges, strict=False):
            picked = a[j]  # [draw, judge, *rest, item]
            index = items.reshape((b,) + (1,) * (picked.ndim - 2) + (n_items,))
            resampled.append(np.take_along_axis(picked, index, axis=-1))
        values.append(np.asarray(statistic(resampled), dtype=float).reshape(b))
    values = np.concatenate(values)
    low, high = percentile_interval(values, level)
    dropped = int(np.sum(~np.isfinite(values)))
    return Interval(estimate=estimate, low=low, high=high, level=level, n_boot=n_boot, n_dropped=dropped)


def mean_difference(families: list[np.ndarray]) -> np.ndarray:
    """Family 0's mean minus family 1's (over judges and items), per draw: a `FamilyStatistic`."""
    first, second = families
    return first.mean(axis=(-1, -2)) - second.mean(axis=(-1, -2))


@dataclass(frozen=True)
class TwoFamily:
    """A planted family of judges against a null family, on one judge-level statistic."""

    difference: float  # mean planted - mean null
    n_planted: int
    n_null: int
    p_permutation: float  # two-sided, over judge labels
    n_permutations: int  # label assignments counted (all of them when exact)
    exact: bool
    min_p_permutation: float  # the smallest p the design can give (3 against 3 judges: 0.1, never <= 0.05)
    welch_t: float | None
    welch_df: float | None
    p_welch: float | None
    effect_null_sd: float | None  # difference / SD of the null family: in between-seed SDs
    interval: Interval | None  # multi-bootstrap interval of the difference (per-item input only)
    reason: str | None = None

    def to_dict(self) -> dict:
        """The comparison as a JSON-ready dict."""
        return asdict(self)


def welch_t(
    a: Float[np.ndarray, " judge"], b: Float[np.ndarray, " judge"]
) -> tuple[float | None, float | None, float | None]:
    """Welch's t, its Welch-Satterthwaite df and two-sided p (None when both groups have zero variance)."""
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se2 = va + vb
    if se2 == 0:
        return None, None, None
    t = float((a.mean() - b.mean()) / math.sqrt(se2))
    df = float(se2**2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1)))
    return t, df, float(student_t_two_sided_p(t, df))


def permutation_pvalue(
    a: Float[np.ndarray, " judge"], b: Float[np.ndarray, " judge"], *, n_perm: int = N_PERMUTATIONS, seed: int = 0
) -> tuple[float, int, bool]:
    """Two-sided p of mean(a) - mean(b) over reassignments of the judge labels: (p, assignments, exact).

    Exact enumeration of all C(n, n_a) assignments when there are at most `n_perm` of them (the observed one
    included, p = #{|diff| >= |observed|} / C(n, n_a)); else `n_perm` seeded random assignments and
    p = (1 + #{as extreme}) / (1 + n_perm).
    """
    pooled = np.concatenate([a, b])
    n, m = pooled.size, a.size
    observed = abs(a.mean() - b.mean())
    total = pooled.sum()
    if math.comb(n, m) <= n_perm:
        chosen = np.array(list(combinations(range(n), m)))
        sums = pooled[chosen].sum(axis=1)
        diffs = sums / m - (total - sums) / (n - m)
        return float(np.mean(as_extreme(diffs, observed, "two-sided"))), int(chosen.shape[0]), True
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((n_perm, n)), axis=1)[:, :m]
    sums = pooled[order].sum(axis=1)
    diffs = sums / m - (total - sums) / (n - m)
    count = int(np.sum(as_extreme(diffs, observed, "two-sided")))
    return (1 + count) / (1 + n_perm), n_perm, False


def smallest_permutation_p(n_a: int, n_b: int, *, n_perm: int = N_PERMUTATIONS) -> float:
    """The smallest two-sided p `permutation_pvalue` can return for families of n_a and n_b judges: the
    observed labelling alone (1 / C(n, n_a)), or with its mirror image when the families are equally large
    (2 / C(n, n_a)); 1 / (1 + n_perm) when sampled."""
    total = math.comb(n_a + n_b, n_a)
    if total > n_perm:
        return 1 / (1 + n_perm)
    return (2 if n_a == n_b else 1) / total


def two_family_test(
    planted: Float[np.ndarray, " judge"] | Float[np.ndarray, "judge item"],
    null: Float[np.ndarray, " judge"] | Float[np.ndarray, "judge item"],
    *,
    n_perm: int = N_PERMUTATIONS,
    seed: int = 0,
    n_boot: int = N_BOOT,
    level: float = 0.95,
) -> TwoFamily:
    """Does a planted procedure give judges whose statistic differs from a null procedure's?

    H0: the judge labels are exchangeable: the planted and the null family's judge-level statistics come from
    one distribution (permutation test, exact under H0 for any distribution), or from normal distributions
    with one mean (Welch's t, unequal variances). Two-sided.

    `planted`, `null`: judge-level statistics ([judge]), or per-item values ([judge, item], all judges on the
    same items) whose item means are the statistics; the latter also gets a multi-bootstrap interval of the
    difference. Each family needs at least 2 judges. Small families limit the permutation p: 3 judges
    against 3 can give no p below 0.1 (`min_p_permutation`).
    """
    p_arr, n_arr = np.asarray(planted, dtype=float), np.asarray(null, dtype=float)
    if p_arr.ndim != n_arr.ndim or p_arr.ndim not in (1, 2):
        raise InterpError(
            "two_family_test: give both families as [judge] statistics or both as [judge, item] values, "
            f"got shapes {p_arr.shape} and {n_arr.shape}"
        )
    interval = None
    if p_arr.ndim == 2:
        _families([p_arr, n_arr], "two_family_test")
        interval = multi_bootstrap([p_arr, n_arr], mean_difference, n_boot=n_boot, seed=seed, level=level)
        p_arr, n_arr = p_arr.mean(axis=1), n_arr.mean(axis=1)
    a, b = finite_array(p_arr, "two_family_test (planted)", 1), finite_array(n_arr, "two_family_test (null)", 1)
    if a.size < 2 or b.size < 2:
        raise InterpError(f"two_family_test: each family needs at least 2 judges (planted {a.size}, null {b.size})")
    if n_perm < 1:
        raise InterpError("two_family_test: n_perm must be at least 1")
    p_perm, count, exact = permutation_pvalue(a, b, n_perm=n_perm, seed=seed)
    t, df, p_welch = welch_t(a, b)
    sd_null = float(b.std(ddof=1))
    return TwoFamily(
        difference=float(a.mean() - b.mean()),
        n_planted=int(a.size),
        n_null=int(b.size),
        p_permutation=p_perm,
        n_permutations=count,
        exact=exact,
        min_p_permutation=smallest_permutation_p(a.size, b.size, n_perm=n_perm),
        welch_t=t,
        welch_df=df,
        p_welch=p_welch,
        effect_null_sd=float((a.mean() - b.mean()) / sd_null) if sd_null > 0 else None,
        interval=interval,
        reason=None if t is not None else "both families are constant: Welch's t is undefined",
    )
