"""Is an edit's effect specific to the judge's own answer, or does it only make the judge less decisive?

Why. The causal test compares raw changes of P(own). A judge with a self-preference gap reads its own answer as
better more often than its controls do, so any edit that pulls every verdict toward indifference (a flattening:
the verdict logits times lambda < 1) lowers its P(own) by about (1 - lambda) G more than theirs, with no
self-preference mechanism at all (a review's simulation called lambda 0.6 causal in 52 % of draws).

The margin-adjusted scale. Per judge, over the test pairs, the own-answer log-odds after the edit are regressed on
the clean ones, LO = logit(P(own)) with P(own) averaged over both orders as everywhere (clipped away from 0 and 1):

    LO_after(i) = c * LO_before(i) + d.

A flattening scales every log-odds (c = lambda) and leaves d at 0 for every judge, whatever its gap; the removal of
an own-answer bias b (the judge adds b to its own answer's log-odds) gives d = -b (times the slope, where the edit
flattens too) for the tested judge and about 0 for its controls, which have no bias to lose. So d, the own-answer
log-odds the edit leaves at a clean margin of 0, is the statistic, and the tested judge's d is compared with its
controls' d (each control at its own variant, as in the main test): Crawford-Howell, one-sided in the removal
direction (d_J below the controls), with the judge's excess sampling variance added,

    t = (d_J - mean_C d_C) / sqrt(s_C^2 (k + 1) / k + max(0, v_J - mean_C v_C)),   k - 1 df,

where v is each judge's bootstrap variance of d over its pairs. Under H0 (the judge is one more control) the
controls' spread s_C already holds a control's sampling variance; a judge whose d is less well determined than
theirs (its log-odds sit far from 0, where the intercept is extrapolated) adds only the excess, so the test keeps its
level where the judge is noisier and is exactly Crawford-Howell where it is not. It passes where p <= test_alpha.

Which pairs. A pair whose P(own) before or after lies within `LOG_ODDS_EPS` of 0 or 1 is left out of that
judge's fit (its log-odds are clipped, and a clipped value would bend the line); each judge fits on its own usable
pairs, at least `MIN_PAIRS`. Too few usable pairs for the judge, or fewer than `MIN_CONTROLS` controls with enough:
the check does not pass, and its reason says so.

The false-positive rate of the whole decision (gap gate, share, specificity) under a pure flattening and the
power against a true removal: `interp.metrics.specificity_sim`, `python experiments/bench_specificity.py`,
docs/causal-test.md.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
from jaxtyping import Float

from interp.errors import InterpError
from interp.formatting import p_value
from interp.metrics.causal_test import ALPHA
from interp.metrics.families import N_BOOT
from interp.metrics.judge_level import MIN_CONTROLS
from interp.metrics.student_t import student_t_cdf

LOG_ODDS_EPS = 1e-4
"""P(own) within this of 0 or 1 is saturated: its log-odds (|LO| >= 9.2) are clipped, and the pair is left out."""
MIN_PAIRS = 10
"""The fewest usable pairs a judge's line is fitted on (two parameters, and a bootstrap of its intercept)."""
METHOD = "margin-adjusted"
CHECKS = {"margin": METHOD}
"""The specificity checks a causal test can choose (`interp intervene --specificity`): option value -> the
`Specificity.method` it records. One exists, the margin-adjusted intercept test. "none" is not a choice: a
self-preference verdict needs the check (without it a flattening of every verdict reads as a cause)."""
DEFAULT_CHECK = "margin"


def check_specificity_choice(name: str, *, option: str = "--specificity") -> str:
    """`name` as a specificity check (a key of `CHECKS`), else one line (InterpError): "none" is refused, since a
    causal verdict needs the check."""
    if name == "none":
        raise InterpError(
            f"{option} none: a causal verdict needs the specificity check (an edit that flattens every verdict "
            f"lowers a self-preferring judge's P(own) more than its controls' with no self-preference mechanism); "
            f"use {' or '.join(repr(c) for c in CHECKS)}"
        )
    if name not in CHECKS:
        raise InterpError(f"{option} {name} is not a specificity check; use {' or '.join(repr(c) for c in CHECKS)}")
    return name


def own_log_odds(p: Float[np.ndarray, "..."], eps: float = LOG_ODDS_EPS) -> np.ndarray:
    """logit(P(own)), P clipped to [eps, 1 - eps]."""
    q = np.clip(np.asarray(p, dtype=float), eps, 1 - eps)
    return np.log(q) - np.log1p(-q)


def usable_pairs(before: np.ndarray, after: np.ndarray, eps: float = LOG_ODDS_EPS) -> np.ndarray:
    """Per pair: both P(own) finite and clear of the clip (`LOG_ODDS_EPS`) before and after the edit."""
    before, after = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    inside = (before > eps) & (before < 1 - eps) & (after > eps) & (after < 1 - eps)
    return inside & np.isfinite(before) & np.isfinite(after)


def _line(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares slope and intercept of y on x along the last axis (any leading axes); a slope of 0 where x
    has no spread."""
    mx, my = x.mean(-1), y.mean(-1)
    sxx = ((x - mx[..., None]) ** 2).sum(-1)
    sxy = ((x - mx[..., None]) * (y - my[..., None])).sum(-1)
    slope = np.where(sxx > 0, sxy / np.where(sxx > 0, sxx, 1.0), 0.0)
    return slope, my - slope * mx


@dataclass(frozen=True)
class MarginFit:
    """One judge's line LO_after = slope * LO_before + intercept over its usable pairs, the bootstrap variance of
    the intercept, and which pairs it used (`used`: a mask over the pairs given). `intercept` None: too few pairs,
    or no spread of the clean log-odds (see `reason`)."""

    slope: float | None
    intercept: float | None
    variance: float | None
    n_pairs: int
    used: list[bool]
    reason: str | None = None


def margin_fit(
    before: Float[np.ndarray, " item"],
    after: Float[np.ndarray, " item"],
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    min_pairs: int = MIN_PAIRS,
) -> MarginFit:
    """The margin-adjusted line of one judge (see the module docstring), from per-pair P(own) before and after."""
    before, after = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if before.shape != after.shape or before.ndim != 1:
        raise InterpError(f"margin_fit: before and after must be 1-D and alike, got {before.shape}, {after.shape}")
    used = usable_pairs(before, after)
    n = int(used.sum())
    if n < min_pairs:
        why = f"{n} usable pairs (P(own) clear of 0 and 1 before and after), fewer than the {min_pairs} the line needs"
        return MarginFit(None, None, None, n, used.tolist(), why)
    x, y = own_log_odds(before[used]), own_log_odds(after[used])
    if float(np.ptp(x)) == 0.0:
        return MarginFit(None, None, None, n, used.tolist(), "the clean own-answer log-odds do not vary over its pairs")
    slope, intercept = _line(x, y)
    draws = np.random.default_rng(seed).integers(0, n, size=(max(n_boot, 2), n))
    _, boot = _line(x[draws], y[draws])
    return MarginFit(float(slope), float(intercept), float(np.var(boot, ddof=1)), n, used.tolist())


@dataclass(frozen=True)
class Specificity:
    """The specificity check of one tested judge and edit (`specificity_test`): the statistic, its p, whether it
    passed and why, and the pairs it used. `statistic` = d_J - mean_C d_C (own-answer log-odds at a clean margin of
    0, after the edit); negative where the edit removes more of the own-answer preference than the controls lose."""

    method: str
    passed: bool
    reason: str
    statistic: float | None
    t: float | None
    df: int
    p_value: float | None
    test_alpha: float
    alternative: str
    judge_intercept: float | None
    judge_slope: float | None
    judge_variance: float | None
    excess_variance: float | None
    control_intercepts: dict[str, float]
    control_slopes: dict[str, float]
    control_mean: float | None
    control_sd: float | None
    n_pairs: int
    control_pairs: dict[str, int]
    controls_left_out: dict[str, str]
    pairs: list[str] = field(default_factory=list)  # the tested judge's pairs (item ids) in its fit
    mirror: dict | None = None  # the judge's unjustified-flipped and legitimate-kept shares (descriptive)

    def to_dict(self) -> dict:
        """JSON-ready."""
        return asdict(self)


def _fail(reason: str, **fields) -> dict:
    return dict(passed=False, reason=reason, statistic=None, t=None, p_value=None, excess_variance=None) | fields


def specificity_test(
    judge_before: Float[np.ndarray, " item"],
    judge_after: Float[np.ndarray, " item"],
    controls_before: dict[str, np.ndarray],
    controls_after: dict[str, np.ndarray],
    *,
    items: list[str] | None = None,
    test_alpha: float = ALPHA,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> Specificity:
    """Does the edit lower the tested judge's own-answer log-odds at a clean margin of 0 more than its controls'?

    H0: the judge's intercept d (the margin-adjusted line, `margin_fit`) is one more draw from the controls'
    normal distribution (the edit changes the judge's verdicts as it changes a control's: a flattening, or any edit
    that does not act on the own answer). One-sided ("less": d_J below the controls), Crawford-Howell with the
    judge's excess bootstrap variance of d added (module docstring), k - 1 df; passes iff p <= test_alpha.
    `controls_*`: control name -> its per-pair P(own) of the tested judge's answer, under its own variant.
    Too few usable pairs, or fewer than MIN_CONTROLS controls with a line: not passed, with the reason.
    """
    if not 0 < test_alpha < 1:
        raise InterpError(f"specificity_test: test_alpha = {test_alpha} must be in (0, 1)")
    names = list(controls_before)
    if set(names) != set(controls_after):
        raise InterpError("specificity_test: the controls before and after must be the same judges")
    judge = margin_fit(judge_before, judge_after, n_boot=n_boot, seed=seed)
    fits = {
        c: margin_fit(controls_before[c], controls_after[c], n_boot=n_boot, seed=seed + 1 + i)
        for i, c in enumerate(names)
    }
    good = {c: f for c, f in fits.items() if f.intercept is not None}
    ids = items if items is not None else [str(i) for i in range(len(judge.used))]
    common = dict(
        method=METHOD,
        test_alpha=test_alpha,
        alternative="less",
        df=max(len(good) - 1, 0),
        judge_intercept=judge.intercept,
        judge_slope=judge.slope,
        judge_variance=judge.variance,
        control_intercepts={c: f.intercept for c, f in good.items()},
        control_slopes={c: f.slope for c, f in good.items()},
        control_mean=float(np.mean([f.intercept for f in good.values()])) if good else None,
        control_sd=float(np.std([f.intercept for f in good.values()], ddof=1)) if len(good) >= 2 else None,
        n_pairs=judge.n_pairs,
        control_pairs={c: f.n_pairs for c, f in fits.items()},
        controls_left_out={c: f.reason for c, f in fits.items() if f.intercept is None},
        pairs=[i for i, u in zip(ids, judge.used, strict=True) if u],
    )
    if len(names) < MIN_CONTROLS:
        return Specificity(
            **common,
            **_fail(
                f"too few control judges for the specificity check: {len(names)} given, at least {MIN_CONTROLS} "
                "needed (it compares the judge's line with its controls')"
            ),
        )
    if judge.intercept is None:
        return Specificity(
            **common, **_fail(f"too few pairs for the specificity check: the tested judge has {judge.reason}")
        )
    if len(good) < MIN_CONTROLS:
        return Specificity(
            **common,
            **_fail(
                f"too few pairs for the specificity check: {len(good)} of {len(names)} control judges have a line "
                f"(at least {MIN_CONTROLS} needed; the others have too few usable pairs)"
            ),
        )
    d = np.array([f.intercept for f in good.values()])
    k = d.size
    excess = max(0.0, judge.variance - float(np.mean([f.variance for f in good.values()])))
    scale = math.sqrt(float(d.var(ddof=1)) * (k + 1) / k + excess)
    diff = judge.intercept - float(d.mean())
    if scale == 0.0:
        return Specificity(
            **common, **_fail("the controls' intercepts agree exactly and the judge has no excess variance: no spread")
        )
    t = diff / scale
    p = float(student_t_cdf(t, k - 1))
    passed = p <= test_alpha
    words = (
        f"the own-answer log-odds the edit leaves at a clean margin of 0: {judge.intercept:+.3f} for the judge "
        f"against {float(d.mean()):+.3f} for its {k} controls (SD {float(d.std(ddof=1)):.3f}; one-sided "
        f"Crawford-Howell with the judge's excess variance, t = {t:.2f}, df {k - 1}, p {p_value(p)} "
        f"{'<=' if passed else '>'} test_alpha {test_alpha:g})"
    )
    reason = (
        f"specific to the own answer: {words}"
        if passed
        else f"not shown to be specific to the own answer (a flattening of every verdict reads so): {words}"
    )
    return Specificity(**common, passed=passed, reason=reason, statistic=diff, t=t, p_value=p, excess_variance=excess)
