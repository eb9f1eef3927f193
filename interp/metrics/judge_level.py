"""Tests with the judge as the unit of inference: items give each judge's estimate, the spread between judges
decides.

Why. Two null organisms that differ only in their training seed differ under the every-layer own-answer mask
by as much as the planted organism differs from the null (docs/causal-test.md). A test whose only error is
item noise, against one control judge, therefore finds that two judges differ, and calls half of the null
replicates causal. Seed-to-seed variance of fine-tuned models is large (Sellam et al. 2022; Dodge et al.
2020; McCoy et al. 2020), and ignoring between-group variance makes placebo treatments "significant"
(Bertrand, Duflo and Mullainathan 2004). Each test here compares a judge, or a family of judges, with the
spread between judges.

What is here (each states its null hypothesis H0 in its docstring):

- `within_judge_effect`: Delta_J = mean over items of P_J(own | I) - P_J(own), with its sign-flip p. Its
  claim is only that the intervention "changes this judge's verdicts", never "self-preference".
- `crawford_howell`: one judge against k >= 3 control judges (Crawford and Howell 1998), on any judge-level
  statistic (Delta_J(I), or DBG itself). Fewer controls give `p_value` None with a `reason`.
- `between_judge_test`: the causal decision for one judge and intervention: Crawford-Howell on Delta(I),
  optionally with the random head sets' rank p, and the within-judge effect beside it.
- `two_family_test`: a planted family against a null family (permutation over judge labels, and Welch's t),
  with a `multi_bootstrap` interval (Sellam et al. 2022: judges within each family and items, jointly).
- `share_removed`: how much of a judge's self-preference gap over its controls an intervention removes,
  1 - G_I / G, reported only where the gap before is itself significant.
- `min_random_sets` / `check_random_sets`: enough random head sets for the rank p-value to reach alpha
  after Holm over the command's tests.
- `crawford_howell_size`: the rejection rate of Crawford-Howell under null families drawn from normal,
  skewed and heavy-tailed distributions (what its normality assumption costs).
- `student_t_cdf` / `student_t_two_sided_p`: Student's t distribution through the regularised incomplete beta
  function (numpy only; scipy is not a dependency).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np
from jaxtyping import Float

from interp.errors import InterpError
from interp.metrics.causal_test import ALPHA, N_FLIPS, clopper_pearson, sign_flip_pvalue
from interp.metrics.stats import bootstrap_ci, percentile_interval

MIN_CONTROLS = 3
"""Crawford-Howell needs at least 3 control judges: with k controls the spread has k - 1 degrees of freedom."""

WITHIN_JUDGE_CLAIM = "changes this judge's verdicts"
N_PERMUTATIONS = 10_000
N_BOOT = 1000
_TOLERANCE = 1e-12  # permuted statistics equal to the observed one (up to float error) count as "as extreme"


# --- Student's t distribution -----------------------------------------------------------------------------

_BETA_ITERATIONS = 2000
_TINY = 1e-300


def _lgamma(values: np.ndarray) -> np.ndarray:
    return np.vectorize(math.lgamma, otypes=[float])(values)


def _beta_continued_fraction(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The continued fraction of I_x(a, b) (modified Lentz), elementwise; converges fast for x < (a+1)/(a+b+2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
    h = d.copy()
    for m in range(1, _BETA_ITERATIONS + 1):
        m2 = 2.0 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
            c = 1.0 + aa / c
            c = np.where(np.abs(c) < _TINY, _TINY, c)
            step = d * c
            h = h * step
        if np.all(np.abs(step - 1.0) < 1e-14):
            break
    return h


def regularized_beta(x, a, b) -> np.ndarray:
    """The regularised incomplete beta function I_x(a, b), elementwise (a, b > 0, 0 <= x <= 1)."""
    x, a, b = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    if np.any(a <= 0) or np.any(b <= 0) or np.any(~np.isfinite(a)) or np.any(~np.isfinite(b)):
        raise InterpError("regularized_beta: a and b must be positive finite numbers")
    if np.any(~((x >= 0) & (x <= 1))):
        raise InterpError("regularized_beta: x must be in [0, 1]")
    inner = np.clip(x, 1e-300, 1 - 1e-16)
    log_front = a * np.log(inner) + b * np.log1p(-inner) - (_lgamma(a) + _lgamma(b) - _lgamma(a + b))
    front = np.exp(log_front)
    direct = inner < (a + 1.0) / (a + b + 2.0)
    out = np.where(
        direct,
        front * _beta_continued_fraction(a, b, np.where(direct, inner, 0.0)) / a,
        1.0 - front * _beta_continued_fraction(b, a, np.where(direct, 0.0, 1.0 - inner)) / b,
    )
    out = np.where(x == 0, 0.0, np.where(x == 1, 1.0, out))
    return np.clip(out, 0.0, 1.0)


def student_t_two_sided_p(t, df) -> np.ndarray:
    """P(|T| >= |t|) for Student's t with `df` degrees of freedom (any positive real df), elementwise:
    I_{df / (df + t^2)}(df / 2, 1 / 2)."""
    t, df = np.broadcast_arrays(np.asarray(t, dtype=float), np.asarray(df, dtype=float))
    if np.any(~(df > 0)):
        raise InterpError("student_t: degrees of freedom must be positive")
    if np.any(np.isnan(t)):
        raise InterpError("student_t: t must be a number (got NaN)")
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.where(np.isinf(t), 0.0, df / (df + t * t))
    return regularized_beta(x, df / 2.0, 0.5)


def student_t_cdf(t, df) -> np.ndarray:
    """P(T <= t) for Student's t with `df` degrees of freedom, elementwise."""
    t = np.asarray(t, dtype=float)
    half = student_t_two_sided_p(t, df) / 2.0
    return np.where(t >= 0, 1.0 - half, half)


# --- one judge: the within-judge effect -------------------------------------------------------------------


def _finite(values, name: str, ndim: int) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != ndim or array.size == 0:
        raise InterpError(f"{name}: need a non-empty {ndim}-D array, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InterpError(f"{name}: values must be finite numbers (found NaN or inf)")
    return array


@dataclass(frozen=True)
class WithinJudge:
    """Delta_J(I): how much intervention I moves judge J's P(own), paired within the judge."""

    effect: float  # mean over items of P_J(own | I) - P_J(own)
    ci: tuple[float, float]  # percentile bootstrap over items
    p_value: float  # two-sided sign-flip p
    n_items: int
    claim: str = WITHIN_JUDGE_CLAIM

    def to_dict(self) -> dict:
        return asdict(self)


def within_judge_effect(
    delta: Float[np.ndarray, "item"], *, n_flips: int = N_FLIPS, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
) -> WithinJudge:
    """The within-judge effect of an intervention, `delta[i] = P_J(own | I)[i] - P_J(own)[i]`.

    H0: the intervention does not change this judge's verdicts: each `delta[i]` is as likely to be +x as -x.
    Sign-flip permutation p (`interp.metrics.causal_test.sign_flip_pvalue`, exact up to 15 items). A rejection
    says the intervention changes this judge's verdicts; it says nothing about self-preference, since any
    judge moves when an answer it reads is hidden.
    """
    d = _finite(delta, "within_judge_effect", 1)
    lo, hi = bootstrap_ci(lambda idx: float(d[idx].mean()), d.size, n_boot=n_boot, seed=seed, level=level)
    return WithinJudge(effect=float(d.mean()), ci=(lo, hi), p_value=float(sign_flip_pvalue(d, n_flips=n_flips, seed=seed)), n_items=int(d.size))


# --- one judge against k control judges: Crawford-Howell --------------------------------------------------


def too_few_controls(k: int) -> str | None:
    """Why k control judges cannot support the between-judge test (None when k >= MIN_CONTROLS)."""
    if k >= MIN_CONTROLS:
        return None
    if k == 0:
        return "no control judge: nothing to separate self-preference from judge-to-judge differences"
    if k == 1:
        return "a single control judge cannot separate self-preference from judge-to-judge differences"
    return (
        f"{k} control judges cannot separate self-preference from judge-to-judge differences: their spread has "
        f"{k - 1} degree of freedom; the test needs at least {MIN_CONTROLS} control judges"
    )


@dataclass(frozen=True)
class CrawfordHowell:
    """One judge's statistic against k control judges' (Crawford and Howell 1998). `p_value` None: see `reason`."""

    x: float  # the tested judge's statistic
    k: int  # number of control judges
    control_mean: float | None  # None without controls
    control_sd: float | None  # sample SD (ddof 1); None with fewer than 2 controls
    t: float | None
    df: int
    p_value: float | None  # two-sided
    effect_sd: float | None  # (x - mean_C) / s_C: the distance in control SDs
    reason: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def crawford_howell_t(x: Float[np.ndarray, "draw"], controls: Float[np.ndarray, "draw control"]) -> tuple[np.ndarray, np.ndarray]:
    """Crawford-Howell's t and two-sided p for many (judge, controls) draws at once; k = controls.shape[1] >= 2.

    t = (x - mean_C) / (s_C * sqrt((k + 1) / k)), k - 1 df. A draw whose controls agree exactly (s_C = 0)
    gets t = 0 and p = 1 when x equals them, else t = +-inf and p = 0.
    """
    x = np.asarray(x, dtype=float)
    controls = np.asarray(controls, dtype=float)
    k = controls.shape[1]
    if k < 2:
        raise InterpError(f"crawford_howell_t: need at least 2 controls per draw, got {k}")
    diff = x - controls.mean(axis=1)
    scale = controls.std(axis=1, ddof=1) * math.sqrt((k + 1) / k)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(scale > 0, diff / np.where(scale > 0, scale, 1.0), np.where(diff == 0, 0.0, np.sign(diff) * np.inf))
    return t, student_t_two_sided_p(t, k - 1)


def crawford_howell(x: float, controls: Float[np.ndarray, "control"]) -> CrawfordHowell:
    """Is this judge's statistic outside the spread of k control judges' statistics?

    H0: the tested judge's statistic x and the k controls' are independent draws from one normal
    distribution (the judge is one more control). Test: t = (x - mean_C) / (s_C * sqrt((k + 1) / k)) with
    k - 1 degrees of freedom, two-sided: exact under H0 (the sqrt((k + 1) / k) carries the uncertainty of
    mean_C). It assumes normality of the judge-level statistic across judges: skew and heavy tails inflate
    its size (`crawford_howell_size`, docs/causal-test.md).

    With fewer than MIN_CONTROLS controls the result has `p_value` None and a `reason`. When the controls
    agree exactly (s_C = 0): p = 1 if x equals them, else `p_value` None with a reason (the test has no
    spread to compare with).
    """
    if not math.isfinite(float(x)):
        raise InterpError("crawford_howell: the tested judge's statistic must be a finite number")
    c = np.asarray(controls, dtype=float)
    if c.ndim != 1:
        raise InterpError(f"crawford_howell: controls must be a 1-D array of the control judges' statistics, got shape {np.shape(controls)}")
    if not np.all(np.isfinite(c)):
        raise InterpError("crawford_howell: the control judges' statistics must be finite numbers")
    k = int(c.size)
    mean = float(c.mean()) if k else None
    sd = float(c.std(ddof=1)) if k >= 2 else None
    reason = too_few_controls(k)
    if reason is not None:
        return CrawfordHowell(x=float(x), k=k, control_mean=mean, control_sd=sd, t=None, df=max(k - 1, 0), p_value=None, effect_sd=None, reason=reason)
    t, p = crawford_howell_t(np.array([float(x)]), c[None, :])
    t, p = float(t[0]), float(p[0])
    if sd == 0 and math.isinf(t):
        return CrawfordHowell(
            x=float(x), k=k, control_mean=mean, control_sd=0.0, t=None, df=k - 1, p_value=None, effect_sd=None,
            reason=f"the {k} control judges agree exactly (SD 0): no spread to compare the judge with",
        )
    return CrawfordHowell(x=float(x), k=k, control_mean=mean, control_sd=sd, t=t, df=k - 1, p_value=p, effect_sd=(float(x) - mean) / sd if sd else 0.0)


@dataclass(frozen=True)
class BetweenJudge:
    """The causal decision for one judge and one intervention, with the judge as the unit."""

    causal: bool | None  # None: no between-judge test (see reason)
    p_value: float | None  # Crawford-Howell's p, or max(it, p_rank) with random head sets
    alpha: float
    reason: str | None
    test: CrawfordHowell  # on Delta(I): the judge's mean effect against its controls'
    within: WithinJudge  # the judge's own Delta(I), "changes this judge's verdicts"
    control_effects: list[float]  # each control's mean Delta(I)
    p_rank: float | None = None

    def to_dict(self) -> dict:
        """The record for result.json: causal, p_value, reason, test ("between-judge", n_controls, df, t, ...),
        within_judge (effect, ci, p_value, claim)."""
        test = {"design": "between-judge", "n_controls": self.test.k} | {key: value for key, value in self.test.to_dict().items() if key != "k"}
        test |= {"control_effects": self.control_effects, "p_rank": self.p_rank}
        return {"causal": self.causal, "p_value": self.p_value, "alpha": self.alpha, "reason": self.reason, "test": test, "within_judge": self.within.to_dict()}

    def verdict(self, judge: str) -> str:
        """One sentence that says which claim it makes: between judges (self-preference) or within the judge."""
        lo, hi = self.within.ci
        within = (
            f"the intervention {WITHIN_JUDGE_CLAIM} by {100 * self.within.effect:+.1f} pts [{100 * lo:+.1f}, {100 * hi:+.1f}] "
            f"(sign-flip p {self.within.p_value:.3g}, n = {self.within.n_items} items)"
        )
        if self.causal is None:
            return f"{judge}: no between-judge test ({self.reason}); {within}"
        head = "causal effect on self-preference" if self.causal else "no causal effect on self-preference shown"
        t = self.test
        spread = f"{100 * t.control_mean:+.1f} pts mean, SD {100 * t.control_sd:.1f}"
        rank = "" if self.p_rank is None else f", p_rank {self.p_rank:.3g}"
        stat = f"t = {t.t:.2f}, df {t.df}, " if t.t is not None else ""
        return f"{judge}: {head} (p = {self.p_value:.3g}, alpha {self.alpha:g}; Crawford-Howell against {t.k} control judges ({spread}), {stat}p {t.p_value:.3g}{rank}); {within}"


def between_judge_test(
    delta_judge: Float[np.ndarray, "item"],
    delta_controls: Float[np.ndarray, "control item"],
    *,
    p_rank: float | None = None,
    alpha: float = ALPHA,
    n_flips: int = N_FLIPS,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> BetweenJudge:
    """Does intervention I move this judge's P(own) differently from how it moves k control judges'?

    `delta_judge[i] = P_J(own | I) - P_J(own)`, `delta_controls[c, i]` the same for control c on the same item
    and the same answer (J's own, which c did not write). H0: the judge's mean Delta(I) is one more draw from
    the controls' normal distribution (Crawford-Howell, two-sided). With heads chosen from data, `p_rank`
    (the chosen heads against random head sets) joins as an intersection-union test: p = max(p_CH, p_rank).
    causal iff p <= alpha; None with a reason when there are fewer than MIN_CONTROLS controls (or they agree
    exactly). The within-judge effect is always reported beside it.
    """
    dj = _finite(delta_judge, "between_judge_test (delta_judge)", 1)
    dc = np.asarray(delta_controls, dtype=float)
    if dc.size == 0:
        dc = np.empty((0, dj.size))
    elif (dc.ndim != 2 or dc.shape[1] != dj.size) or not np.all(np.isfinite(dc)):
        raise InterpError(f"between_judge_test: need the controls' per-item effects as a finite [control, {dj.size}] array (the judge's items), got shape {dc.shape}")
    if not 0 < alpha < 1:
        raise InterpError(f"between_judge_test: alpha = {alpha} must be in (0, 1)")
    if p_rank is not None and not 0 <= p_rank <= 1:
        raise InterpError(f"between_judge_test: p_rank = {p_rank} must be in [0, 1]")
    within = within_judge_effect(dj, n_flips=n_flips, n_boot=n_boot, seed=seed)
    control_effects = dc.mean(axis=1)
    test = crawford_howell(float(dj.mean()), control_effects)
    common = dict(alpha=alpha, test=test, within=within, control_effects=control_effects.tolist(), p_rank=p_rank)
    if test.p_value is None:
        return BetweenJudge(causal=None, p_value=None, reason=test.reason, **common)
    p = test.p_value if p_rank is None else max(test.p_value, p_rank)
    return BetweenJudge(causal=bool(p <= alpha), p_value=float(p), reason=None, **common)


# --- the multi-bootstrap ----------------------------------------------------------------------------------

FamilyStatistic = Callable[[list[np.ndarray]], np.ndarray]
"""Maps the families, each resampled to [draw, judge, *rest, item], to one value per draw ([draw])."""


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    level: float
    n_boot: int

    def to_dict(self) -> dict:
        return asdict(self)


def _families(families: Sequence, name: str) -> list[np.ndarray]:
    arrays = [np.asarray(f, dtype=float) for f in families]
    if not arrays:
        raise InterpError(f"{name}: need at least one family")
    for a in arrays:
        if a.ndim < 2 or a.shape[0] == 0 or a.shape[-1] == 0:
            raise InterpError(f"{name}: each family is a [judge, ..., item] array with at least one judge and item, got shape {a.shape}")
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
    the statistic on the data as observed. Resamples where the statistic is not finite are dropped.
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
        for a, j in zip(arrays, judges):
            picked = a[j]  # [draw, judge, *rest, item]
            index = items.reshape((b,) + (1,) * (picked.ndim - 2) + (n_items,))
            resampled.append(np.take_along_axis(picked, index, axis=-1))
        values.append(np.asarray(statistic(resampled), dtype=float).reshape(b))
    low, high = percentile_interval(np.concatenate(values), level)
    return Interval(estimate=estimate, low=low, high=high, level=level, n_boot=n_boot)


def mean_difference(families: list[np.ndarray]) -> np.ndarray:
    """Family 0's mean minus family 1's (over judges and items), per draw: a `FamilyStatistic`."""
    first, second = families
    return first.mean(axis=(-1, -2)) - second.mean(axis=(-1, -2))


# --- two families -----------------------------------------------------------------------------------------


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
        return asdict(self)


def welch_t(a: Float[np.ndarray, "judge"], b: Float[np.ndarray, "judge"]) -> tuple[float | None, float | None, float | None]:
    """Welch's t, its Welch-Satterthwaite df and two-sided p (None when both groups have zero variance)."""
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se2 = va + vb
    if se2 == 0:
        return None, None, None
    t = float((a.mean() - b.mean()) / math.sqrt(se2))
    df = float(se2**2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1)))
    return t, df, float(student_t_two_sided_p(t, df))


def permutation_pvalue(a: Float[np.ndarray, "judge"], b: Float[np.ndarray, "judge"], *, n_perm: int = N_PERMUTATIONS, seed: int = 0) -> tuple[float, int, bool]:
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
        return float(np.mean(np.abs(diffs) >= observed - _TOLERANCE)), int(chosen.shape[0]), True
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((n_perm, n)), axis=1)[:, :m]
    sums = pooled[order].sum(axis=1)
    diffs = sums / m - (total - sums) / (n - m)
    count = int(np.sum(np.abs(diffs) >= observed - _TOLERANCE))
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
    planted: Float[np.ndarray, "judge"] | Float[np.ndarray, "judge item"],
    null: Float[np.ndarray, "judge"] | Float[np.ndarray, "judge item"],
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
        raise InterpError(f"two_family_test: give both families as [judge] statistics or both as [judge, item] values, got shapes {p_arr.shape} and {n_arr.shape}")
    interval = None
    if p_arr.ndim == 2:
        _families([p_arr, n_arr], "two_family_test")
        interval = multi_bootstrap([p_arr, n_arr], mean_difference, n_boot=n_boot, seed=seed, level=level)
        p_arr, n_arr = p_arr.mean(axis=1), n_arr.mean(axis=1)
    a, b = _finite(p_arr, "two_family_test (planted)", 1), _finite(n_arr, "two_family_test (null)", 1)
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


# --- how much of the self-preference gap an intervention removes ------------------------------------------


@dataclass(frozen=True)
class ShareRemoved:
    """G = DBG_J - mean DBG_C before intervention I, G_I after it, and the share removed 1 - G_I / G."""

    gap_before: Interval
    gap_after: Interval
    test_before: CrawfordHowell  # is the gap before significant (Crawford-Howell on DBG)?
    test_after: CrawfordHowell
    share_removed: Interval | None  # None: see reason
    alpha: float
    reason: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _gap(families: list[np.ndarray], stage: int) -> np.ndarray:
    judge, controls = families  # [draw, 1, stage, item], [draw, control, stage, item]
    return judge[:, 0, stage].mean(axis=-1) - controls[:, :, stage].mean(axis=(-1, -2))


def _share(families: list[np.ndarray]) -> np.ndarray:
    before, after = _gap(families, 0), _gap(families, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 - after / before


def share_removed(
    judge_before: Float[np.ndarray, "item"],
    judge_after: Float[np.ndarray, "item"],
    controls_before: Float[np.ndarray, "control item"],
    controls_after: Float[np.ndarray, "control item"],
    *,
    alpha: float = ALPHA,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
) -> ShareRemoved:
    """The share of judge J's self-preference gap over its control judges that intervention I removes.

    Inputs are per-item DBG contributions (e.g. P(own)[i] - P_gold(own)[i], "own" always meaning J's answer,
    which the controls read without having written it), before and after I, for J and for each control.
    G = mean_i DBG_J - mean_C mean_i DBG_C before I, G_I the same after; share = 1 - G_I / G.

    H0 of the gate: J's DBG is one more draw from the controls' (normal) distribution (Crawford-Howell on the
    judges' mean DBG before I). Only where it is rejected at `alpha` is the share reported, with a
    multi-bootstrap interval (controls resampled, before and after together, and items, jointly; J fixed);
    otherwise `share_removed` is None with a reason and both gaps are reported. The gaps always carry their
    intervals.
    """
    jb, ja = _finite(judge_before, "share_removed (judge_before)", 1), _finite(judge_after, "share_removed (judge_after)", 1)
    cb, ca = _finite(controls_before, "share_removed (controls_before)", 2), _finite(controls_after, "share_removed (controls_after)", 2)
    if not (jb.shape == ja.shape and cb.shape == ca.shape and cb.shape[1] == jb.size):
        raise InterpError(f"share_removed: the judge and every control must read the same items before and after (shapes {jb.shape}, {ja.shape}, {cb.shape}, {ca.shape})")
    if not 0 < alpha < 1:
        raise InterpError(f"share_removed: alpha = {alpha} must be in (0, 1)")
    families = [np.stack([jb, ja])[None], np.stack([cb, ca], axis=1)]  # [1, stage, item], [control, stage, item]
    common = dict(n_boot=n_boot, seed=seed, level=level)
    gap_before = multi_bootstrap(families, lambda f: _gap(f, 0), **common)
    gap_after = multi_bootstrap(families, lambda f: _gap(f, 1), **common)
    test_before = crawford_howell(float(jb.mean()), cb.mean(axis=1))
    test_after = crawford_howell(float(ja.mean()), ca.mean(axis=1))
    out = dict(gap_before=gap_before, gap_after=gap_after, test_before=test_before, test_after=test_after, alpha=alpha)
    if test_before.p_value is None:
        return ShareRemoved(share_removed=None, reason=f"no test of the gap before the intervention: {test_before.reason}", **out)
    if test_before.p_value > alpha:
        return ShareRemoved(
            share_removed=None,
            reason=f"the gap before the intervention is not significant (Crawford-Howell p {test_before.p_value:.3g} > alpha {alpha:g}): both gaps reported, no share",
            **out,
        )
    return ShareRemoved(share_removed=multi_bootstrap(families, _share, **common), **out)


# --- random head sets -------------------------------------------------------------------------------------


def min_random_sets(alpha: float = ALPHA, n_tests: int = 1) -> int:
    """The fewest random head sets R whose smallest rank p, 1 / (R + 1), survives Holm over `n_tests` tests at
    `alpha`: 1 / (R + 1) <= alpha / n_tests, i.e. R = ceil(n_tests / alpha) - 1 (19 for one test at 0.05,
    39 for two)."""
    if not 0 < alpha < 1:
        raise InterpError(f"alpha = {alpha} must be in (0, 1)")
    if n_tests < 1:
        raise InterpError(f"n_tests = {n_tests} must be at least 1")
    return math.ceil(n_tests / alpha - 1e-9) - 1


def check_random_sets(n_sets: int, *, alpha: float = ALPHA, n_tests: int = 1, top_heads: bool = True) -> None:
    """Refuse a design whose head-choice null cannot reject: one InterpError line, else None.

    With heads chosen from data (`top_heads`) the random head sets are the localisation null, so R >= 1 is
    required, and R must be at least `min_random_sets(alpha, n_tests)`: below it the decision p (at least
    p_rank >= 1 / (R + 1)) can never reach alpha after Holm over the command's `n_tests` tests.
    """
    if not top_heads:
        return
    need = min_random_sets(alpha, n_tests)
    over = f" after Holm over {n_tests} tests" if n_tests > 1 else ""
    if n_sets < 1:
        raise InterpError(f"--top-heads needs random head sets (the null for the heads' choice): use --random-head-sets {need} or more (alpha {alpha:g}{over})")
    if n_sets < need:
        raise InterpError(
            f"--random-head-sets {n_sets} can never reach alpha {alpha:g}{over}: the smallest rank p is 1/{n_sets + 1}; "
            f"use --random-head-sets {need} or more"
        )


# --- what skew and heavy tails do to Crawford-Howell ------------------------------------------------------


def _draw(name: str, rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
    if name == "normal":
        return rng.standard_normal(size)
    if name == "lognormal":  # sigma 1: skewness 6.2
        return rng.lognormal(0.0, 1.0, size)
    if name == "chi2-1":  # skewness 2.8
        return rng.chisquare(1, size)
    if name == "chi2-4":  # skewness 1.4
        return rng.chisquare(4, size)
    if name == "t3":  # heavy tails, symmetric
        return rng.standard_t(3, size)
    raise InterpError(f"distribution {name!r}: use one of {', '.join(SIZE_DISTRIBUTIONS)}")


SIZE_DISTRIBUTIONS = ("normal", "chi2-4", "chi2-1", "lognormal", "t3")


@dataclass(frozen=True)
class SizeEstimate:
    distribution: str
    k: int
    alpha: float
    rate: float  # share of null families rejected
    n_families: int
    ci: tuple[float, float]  # Clopper-Pearson 95 %

    def to_dict(self) -> dict:
        return asdict(self)


def crawford_howell_size(k: int, distribution: str = "normal", *, alpha: float = ALPHA, n_families: int = 2000, seed: int = 0) -> SizeEstimate:
    """The rejection rate of Crawford-Howell at `alpha` over `n_families` simulated null families: the tested
    judge and its k controls are k + 1 independent draws from one `distribution` (H0 true), so any rate above
    alpha is what the distribution's departure from normality costs."""
    if k < 2:
        raise InterpError(f"crawford_howell_size: k = {k}: need at least 2 controls")
    if n_families < 1:
        raise InterpError("crawford_howell_size: n_families must be at least 1")
    draws = _draw(distribution, np.random.default_rng(seed), (n_families, k + 1))
    _, p = crawford_howell_t(draws[:, 0], draws[:, 1:])
    rejected = int(np.sum(p <= alpha))
    return SizeEstimate(distribution=distribution, k=k, alpha=alpha, rate=rejected / n_families, n_families=n_families, ci=clopper_pearson(rejected, n_families))
