"""The causal test of self-preference: a paired permutation test, a control judge, random head sets, Holm.

Its sign-flip test stays as the within-judge test ("changes this judge's verdicts"). Against one control
judge it cannot isolate self-preference: two null organisms of different seeds already differ (the measured
false-positive rate is 0.50). The between-judge tests, with the judge as the unit (Crawford-Howell against
k >= 3 control judges, the share of the gap removed) are in `interp.metrics.judge_level`, two families and
the multi-bootstrap in `interp.metrics.families`. The number R of random head sets follows from alpha and
Holm here (`min_random_sets`, `check_random_sets`).

Question. Does removing a judge's attention to its own answer lower its preference for that answer more than
the same removal lowers the preference of a judge that reads the same two answers without having written
one of them? Only that contrast isolates *self*-preference: any competent judge relies on an answer it can
read, and a judge whose own answers are better (or worse) than the other model's moves under a mask for
that reason alone.

Data, per test item i (P = probability that the judge's own answer wins, mean over both orders):

- ``delta_judge[i]   = P_J(own | mask) - P_J(own)``: the tested judge J, the mask on J's own answer;
- ``delta_control[i] = P_C(own | mask) - P_C(own)``: a control judge C on the same pair, the same mask on
  the same answer (J's), where C did not write it (for an organism: its counterpart of the same base that
  read the same answers);
- the paired contrast ``d[i] = delta_judge[i] - delta_control[i]`` (a difference in differences), or
  ``d[i] = delta_judge[i]`` when no control judge is available.

Null hypothesis H0: within each item the tested judge and the control judge are exchangeable under the
mask, so each ``d[i]`` is as likely to be +x as -x. Alternative H1: ``E[d] != 0``. Two-sided, because
self-preference does not fix the sign: a preference that runs through reading the own answer makes the mask
lower the judge's P(own) more than the control's (d < 0); one that runs through recognising the other
model's answer survives the mask while the control, which compares contents, loses the answer it was
comparing (d > 0). Measured on the planted organism, the second happens.

Statistic and tests:

1. ``mean(d)``, with a two-sided sign-flip permutation p-value ``p_flip`` (exact enumeration up to 15
   items, else ``n_flips`` seeded random sign vectors, p = (1 + #{|flipped mean| >= |observed|}) /
   (1 + n_flips)). It is exact under H0 whatever the distribution of the ``|d[i]|``.
2. When the masked heads were chosen from data (top-k by own-minus-other attention), the head-choice null:
   the same ``mean(d)`` for R random head sets of the same size (layer-matched by default), and the rank
   p-value ``p_rank = (1 + #{|random mean| >= |chosen mean|}) / (R + 1)``. It asks whether the chosen heads are
   unusual among heads of the same number, not only whether masking them does anything.
3. One decision: ``p = max(p_flip, p_rank)`` (an intersection-union test: it rejects only when both reject,
   so its false-positive rate is at most alpha without a correction); causal iff ``p <= alpha``
   (default 0.05). When ``p_flip > alpha`` the random head sets cannot change the decision and may be
   skipped (the result says so).
4. Several judges in one command, or many sweep points: Holm's step-down adjustment of their p-values,
   stated in the report.

The effect size is ``mean(d)`` in probability points with a percentile bootstrap interval over items (the
toolkit's one resampling scheme, `interp.metrics.stats.bootstrap_ci`). Error rates of the whole procedure,
measured on model organisms whose truth is known, are printed by ``experiments/bench_causal.py``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from itertools import product
from typing import Sequence

import numpy as np
from jaxtyping import Float

from interp.errors import InterpError
from interp.formatting import pts, pts_ci
from interp.metrics.stats import bootstrap_ci

ALPHA = 0.05
N_FLIPS = 10_000
EXACT_UP_TO = 15  # 2**15 sign vectors: enumerate rather than sample
EXTREME_TOLERANCE = 1e-12  # flipped means equal to the observed one (up to float error) count as "as extreme"


def _as_effects(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise InterpError(f"{name}: need a non-empty 1-D array of per-item effects, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InterpError(f"{name}: per-item effects must be finite numbers (found NaN or inf)")
    return array


def as_extreme(means: np.ndarray, observed, alternative: str) -> np.ndarray:
    """Which permuted means are at least as extreme as the observed one (float ties count)."""
    if alternative == "two-sided":
        return np.abs(means) >= np.abs(observed) - EXTREME_TOLERANCE
    if alternative == "less":
        return means <= observed + EXTREME_TOLERANCE
    raise InterpError(f"alternative {alternative!r}: use 'two-sided' or 'less'")


def sign_flip_pvalue(d: Float[np.ndarray, "item"], *, n_flips: int = N_FLIPS, seed: int = 0, alternative: str = "two-sided") -> float:
    """p-value of mean(d) != 0 (or < 0 with alternative="less") under sign symmetry (exact up to 15 items)."""
    d = _as_effects(d, "sign_flip_pvalue")
    observed = d.mean()
    if d.size <= EXACT_UP_TO:
        signs = np.array(list(product((1.0, -1.0), repeat=d.size)))
        means = signs @ d / d.size
        return float(np.mean(as_extreme(means, observed, alternative)))
    if n_flips < 1:
        raise InterpError("sign_flip_pvalue: n_flips must be at least 1")
    rng = np.random.default_rng(seed)
    count = 0
    for start in range(0, n_flips, 2048):  # chunks keep memory at ~2048 x n floats
        signs = rng.integers(0, 2, size=(min(2048, n_flips - start), d.size)) * 2.0 - 1.0
        count += int(np.sum(as_extreme(signs @ d / d.size, observed, alternative)))
    return (1 + count) / (1 + n_flips)


def smallest_flip_p(n: int, n_flips: int = N_FLIPS) -> float:
    """The smallest two-sided sign-flip p-value `n` items can give: 2 / 2^n when enumerated exactly (the
    observed signs and their mirror are always as extreme), 1 / (1 + n_flips) when sampled."""
    return min(1.0, 2.0 / 2**n) if n <= EXACT_UP_TO else 1 / (1 + n_flips)


def sign_flip_pvalues(draws: Float[np.ndarray, "draw item"], *, n_flips: int = 2000, seed: int = 0, alternative: str = "two-sided") -> np.ndarray:
    """`sign_flip_pvalue` for many equally long rows at once (simulations and power draws); one shared set of
    random sign vectors, which is valid for each row."""
    draws = np.asarray(draws, dtype=float)
    if draws.ndim != 2 or draws.shape[1] == 0:
        raise InterpError(f"sign_flip_pvalues: need a 2-D array (draws x items), got shape {draws.shape}")
    n = draws.shape[1]
    observed = draws.mean(axis=1)
    if n <= EXACT_UP_TO:
        signs = np.array(list(product((1.0, -1.0), repeat=n)))
        return np.mean(as_extreme(draws @ signs.T / n, observed[:, None], alternative), axis=1)
    rng = np.random.default_rng(seed)
    signs = rng.integers(0, 2, size=(n_flips, n)) * 2.0 - 1.0
    counts = np.sum(as_extreme(draws @ signs.T / n, observed[:, None], alternative), axis=1)
    return (1 + counts) / (1 + n_flips)


def rank_pvalue(observed: float, null_values: Sequence[float], alternative: str = "two-sided") -> float:
    """How unusual `observed` is among values under the null: (1 + #{null at least as extreme}) / (R + 1),
    extreme meaning farther from 0 (two-sided) or lower (alternative="less")."""
    values = np.asarray(null_values, dtype=float)
    if values.size == 0:
        raise InterpError("rank_pvalue: need at least one null value (a random head set)")
    return float((1 + np.sum(as_extreme(values, observed, alternative))) / (values.size + 1))



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


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given; reject where adjusted <= alpha)."""
    p = np.asarray(p_values, dtype=float)
    if p.size == 0:
        return []
    if np.any((p < 0) | (p > 1) | ~np.isfinite(p)):
        raise InterpError("holm: p-values must be numbers in [0, 1]")
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted_sorted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(adjusted_sorted, 1.0)
    return adjusted.tolist()


def _binomial_cdf(k: int, n: int, p: float) -> float:
    if p <= 0:
        return 1.0
    if p >= 1:
        return 1.0 if k >= n else 0.0
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p) for i in range(k + 1)]
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
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (pos.size * neg.size))


@dataclass(frozen=True)
class CausalTest:
    """One decision of the causal test, with everything needed to read and reproduce it."""

    causal: bool
    p_value: float  # the decision's p: max(p_flip, p_rank), or p_flip when no heads were chosen
    alpha: float
    effect: dict  # {"mean": mean(d), "ci": [low, high]} in probability units
    n_test: int
    p_flip: float
    p_rank: float | None
    n_random_sets: int
    control_judge: str | None
    design: str  # "difference in differences" | "within the judge"
    random_sets_skipped: bool = False
    judge_effect: float = 0.0  # mean Delta_J
    control_effect: float | None = None  # mean Delta_C
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    def verdict(self, judge: str, *, p_holm: float | None = None, n_family: int = 1) -> str:
        """One sentence: the decision, its p-value and alpha, the effect with its interval, n, the design.

        `p_holm`: this test's p Holm-adjusted over `n_family` tests; then the decision is `p_holm <= alpha`, and
        the sentence shows the raw p beside the adjusted one."""
        lo, hi = self.effect["ci"]
        rank = "" if self.p_rank is None else f", p_rank {self.p_rank:.3f} over {self.n_random_sets} random head sets"
        if self.random_sets_skipped:
            rank = " (random head sets not judged: p_flip already exceeds alpha)"
        causal = self.causal if p_holm is None else p_holm <= self.alpha
        head = "causal effect on self-preference" if causal else "no causal effect shown"
        p_text = f"p = {self.p_value:.3f}" if p_holm is None else f"p = {self.p_value:.3f}, {p_holm:.3f} Holm-adjusted over {n_family} tests"
        if self.control_judge:
            change = f"the mask changes P(own) by {pts(self.effect['mean'])} pts {pts_ci((lo, hi))} relative to control judge {self.control_judge}"
            if self.control_effect is not None:
                change += f" ({pts(self.judge_effect)} vs {pts(self.control_effect)} pts"
                change += ": the judge relies on its own answer more than the control does)" if self.effect["mean"] < 0 else ": the judge relies on its own answer less than the control does)"
        else:
            change = f"the mask changes P(own) by {pts(self.effect['mean'])} pts {pts_ci((lo, hi))} (no control judge: not isolated from answer quality)"
        text = f"{judge}: {head} ({p_text}, alpha {self.alpha:g}): {change}; n = {self.n_test} test items; sign-flip p {self.p_flip:.3f}{rank}"
        if smallest_flip_p(self.n_test) > self.alpha:
            text += f"; {too_few_items(self.n_test, N_FLIPS, self.alpha)}"
        return text


def causal_test(
    delta_judge: Float[np.ndarray, "item"],
    delta_control: Float[np.ndarray, "item"] | None = None,
    *,
    random_contrasts: Float[np.ndarray, "set item"] | None = None,
    control_judge: str | None = None,
    alpha: float = ALPHA,
    n_flips: int = N_FLIPS,
    n_boot: int = 1000,
    seed: int = 0,
    random_sets_skipped: bool = False,
) -> CausalTest:
    """The decision described in the module docstring.

    `random_contrasts[r]` is the contrast d of random head set r, computed exactly as d is (minus the
    control's effect under the same random set when there is a control). `random_sets_skipped` says the
    caller did not judge them because `p_flip` already exceeds alpha (pass `random_contrasts=None`).
    """
    if not 0 < alpha < 1:
        raise InterpError(f"alpha = {alpha} must be in (0, 1)")
    dj = _as_effects(delta_judge, "delta_judge")
    if delta_control is not None:
        dc = _as_effects(delta_control, "delta_control")
        if dc.shape != dj.shape:
            raise InterpError(f"the control judge has {dc.size} per-item effects, the judge {dj.size}: they must read the same items")
        d = dj - dc
    else:
        d = dj
    p_flip = sign_flip_pvalue(d, n_flips=n_flips, seed=seed)
    p_rank, n_sets = None, 0
    if random_contrasts is not None:
        random_contrasts = np.asarray(random_contrasts, dtype=float)
        if random_contrasts.ndim != 2 or random_contrasts.shape[1] != d.size:
            raise InterpError(f"random head sets: need a (sets x {d.size}) array of contrasts, got shape {random_contrasts.shape}")
        p_rank, n_sets = rank_pvalue(float(d.mean()), random_contrasts.mean(axis=1)), random_contrasts.shape[0]
    p = p_flip if p_rank is None else max(p_flip, p_rank)
    notes = []
    if delta_control is not None:
        notes.append(
            "one control judge: a rejection says the two judges depend on the masked answer differently; two null "
            "organisms of different seeds already do (docs/causal-test.md, measured error rates)"
        )
    if smallest_flip_p(d.size, n_flips) > alpha:
        notes.append(too_few_items(d.size, n_flips, alpha))
    if p_rank is not None and n_sets < min_random_sets(alpha):
        notes.append(f"{n_sets} random head sets cannot give p_rank <= {alpha:g}: use at least {min_random_sets(alpha)}")
    lo, hi = bootstrap_ci(lambda idx: float(d[idx].mean()), d.size, n_boot=n_boot, seed=seed)
    return CausalTest(
        causal=bool(p <= alpha),
        p_value=float(p),
        alpha=alpha,
        effect={"mean": float(d.mean()), "ci": [lo, hi]},
        n_test=int(d.size),
        p_flip=float(p_flip),
        p_rank=p_rank,
        n_random_sets=n_sets,
        control_judge=control_judge if delta_control is not None else None,
        design="difference in differences" if delta_control is not None else "within the judge",
        random_sets_skipped=random_sets_skipped,
        judge_effect=float(dj.mean()),
        control_effect=None if delta_control is None else float(np.mean(delta_control)),
        notes=notes,
    )


def too_few_items(n: int, n_flips: int, alpha: float) -> str:
    needed = next(k for k in range(1, EXACT_UP_TO + 2) if smallest_flip_p(k, n_flips) <= alpha)
    return f"{n} test items cannot give p <= {alpha:g} (smallest attainable p {smallest_flip_p(n, n_flips):.3g}): this test cannot reject; use at least {needed}"


def holm_adjust(tests: dict[str, CausalTest]) -> dict[str, dict]:
    """Holm over several judges' (or points') decisions: {name: {"p_holm", "causal_holm"}}."""
    names = list(tests)
    adjusted = holm([tests[name].p_value for name in names])
    return {name: {"p_holm": p, "causal_holm": bool(p <= tests[name].alpha)} for name, p in zip(names, adjusted)}
