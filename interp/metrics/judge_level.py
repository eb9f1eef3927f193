"""One judge against its control judges, with the judge as the unit of inference: items give each judge's
estimate, the spread between judges decides.

Why. Two null organisms that differ only in their training seed differ under the every-layer own-answer mask
by as much as the planted organism differs from the null (docs/causal-test.md). A test whose only error is
item noise, against one control judge, therefore finds that two judges differ, and calls half of the null
replicates causal. Seed-to-seed variance of fine-tuned models is large (Sellam et al. 2022; Dodge et al.
2020; McCoy et al. 2020), and ignoring between-group variance makes placebo treatments "significant"
(Bertrand, Duflo and Mullainathan 2004).

What is here (each states its null hypothesis H0 in its docstring):

- `within_judge_effect`: Delta_J = mean over items of P_J(own | I) - P_J(own), with its sign-flip p. Its
  claim is only that the intervention "changes this judge's verdicts", never "self-preference".
- `crawford_howell`: one judge against k >= 3 control judges (Crawford and Howell 1998), on any judge-level
  statistic (Delta_J(I), or DBG itself). Fewer controls give `p_value` None with a `reason`.
- `leave_one_out`: each judge of a null family against the others (the bench's false-positive replicates).
- `between_judge_test`: the causal decision for one judge and intervention: Crawford-Howell on Delta(I),
  optionally with the random head sets' rank p, and the within-judge effect beside it.
- `controls_rank_pvalue`: the rank-based check beside Crawford-Howell's parametric p.
- `share_removed`: how much of a judge's self-preference gap over its controls an intervention removes,
  1 - G_I / G, reported only where J is above its controls (G > 0 and the one-sided gap gate rejects), with
  Fieller's interval (`interp.metrics.share`).
- `crawford_howell_size`: the rejection rate of Crawford-Howell under null families drawn from normal,
  skewed and heavy-tailed distributions (what its normality assumption costs).

Elsewhere: the share's interval and the decision (`causal_call`) in `interp.metrics.share`, its coverage in
`interp.metrics.share_coverage`; two families and the multi-bootstrap in `interp.metrics.families`; the
random head sets' R (`min_random_sets`, `check_random_sets`) and Holm in `interp.metrics.causal_test`;
Student's t in `interp.metrics.student_t`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from jaxtyping import Float
from pydantic import ConfigDict, with_config

from interp.errors import InterpError
from interp.formatting import fixed, p_value, pts, pts_ci
from interp.metrics.causal_test import ALPHA, N_FLIPS, rank_pvalue, sign_flip_pvalue
from interp.metrics.families import N_BOOT, Interval, finite_array, multi_bootstrap
from interp.metrics.share import share_fieller
from interp.metrics.stats import RatioInterval, bootstrap_ci, clopper_pearson
from interp.metrics.student_t import student_t_two_sided_p, student_t_two_sided_quantile

MIN_CONTROLS = 3
"""Crawford-Howell needs at least 3 control judges: with k controls the spread has k - 1 degrees of freedom."""

WITHIN_JUDGE_CLAIM = "changes this judge's verdicts"


# --- one judge: the within-judge effect -------------------------------------------------------------------


@with_config(ConfigDict(extra="forbid"))
@dataclass(frozen=True)
class WithinJudge:
    """Delta_J(I): how much intervention I moves judge J's P(own), paired within the judge. The one definition:
    computed here, and read back from result.json as this type (`interp.results.causal.JudgeTest.within_judge`)."""

    # None only in a result.json written without the figure (a record read back, never one computed here)
    effect: float | None = None  # mean over items of P_J(own | I) - P_J(own)
    ci: tuple[float | None, float | None] | None = None  # percentile bootstrap over items
    p_value: float | None = None  # two-sided sign-flip p
    n_items: int | None = None
    claim: str | None = WITHIN_JUDGE_CLAIM

    def to_dict(self) -> dict:
        """The test as a JSON-ready dict."""
        return asdict(self)


def within_judge_effect(
    delta: Float[np.ndarray, " item"],
    *,
    n_flips: int = N_FLIPS,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
) -> WithinJudge:
    """The within-judge effect of an intervention, `delta[i] = P_J(own | I)[i] - P_J(own)[i]`.

    H0: the intervention does not change this judge's verdicts: each `delta[i]` is as likely to be +x as -x.
    Sign-flip permutation p (`interp.metrics.causal_test.sign_flip_pvalue`, exact up to 15 items). A rejection
    says the intervention changes this judge's verdicts; it says nothing about self-preference, since any
    judge moves when an answer it reads is hidden.
    """
    d = finite_array(delta, "within_judge_effect", 1)
    lo, hi = bootstrap_ci(lambda idx: float(d[idx].mean()), d.size, n_boot=n_boot, seed=seed, level=level)
    return WithinJudge(
        effect=float(d.mean()),
        ci=(lo, hi),
        p_value=float(sign_flip_pvalue(d, n_flips=n_flips, seed=seed)),
        n_items=int(d.size),
    )


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
    p_value: float | None  # for `alternative` (two-sided unless asked)
    effect_sd: float | None  # (x - mean_C) / s_C: the distance in control SDs
    reason: str | None = None
    alternative: str = "two-sided"  # or "greater": x above the controls (the gap gate), "less"
    p_rank_controls: float | None = None  # rank-based check: x's rank among judge + controls (`controls_rank_pvalue`)

    def to_dict(self) -> dict:
        """The test as a JSON-ready dict."""
        return asdict(self)


ALTERNATIVES = ("two-sided", "greater", "less")


def controls_rank_pvalue(x: float, controls: Float[np.ndarray, " control"], alternative: str = "two-sided") -> float:
    """A rank-based check beside Crawford-Howell's parametric p: the judge's rank among the judge and its k controls.

    H0: the judge and its controls are exchangeable (any distribution). "greater":
    p = (1 + #{controls >= x}) / (k + 1); "less" likewise with <=; "two-sided": twice the smaller one-sided p,
    at most 1. Its smallest value is 1 / (k + 1) (one-sided), so with few controls it can never reach the test
    level: it does not decide; it shows where the parametric p rests on normality in the far tail alone.
    """
    c = np.asarray(controls, dtype=float)
    if alternative == "two-sided":
        return min(1.0, 2 * min(rank_pvalue(x, c, "greater"), rank_pvalue(x, c, "less")))
    return rank_pvalue(x, c, alternative)


def one_sided_p(t: float, p_two_sided: float, alternative: str) -> float:
    """Student's t one-sided p from its two-sided p: P(T >= t) ("greater") or P(T <= t) ("less")."""
    if alternative == "two-sided":
        return p_two_sided
    upper = p_two_sided / 2 if t >= 0 else 1 - p_two_sided / 2
    return upper if alternative == "greater" else 1 - upper


def crawford_howell_t(
    x: Float[np.ndarray, " draw"], controls: Float[np.ndarray, "draw control"]
) -> tuple[np.ndarray, np.ndarray]:
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
        t = np.where(
            scale > 0, diff / np.where(scale > 0, scale, 1.0), np.where(diff == 0, 0.0, np.copysign(np.inf, diff))
        )
    return t, student_t_two_sided_p(t, k - 1)


def crawford_howell(
    x: float, controls: Float[np.ndarray, " control"], alternative: str = "two-sided"
) -> CrawfordHowell:
    """Is this judge's statistic outside the spread of k control judges' statistics?

    H0: the tested judge's statistic x and the k controls' are independent draws from one normal
    distribution (the judge is one more control). Test: t = (x - mean_C) / (s_C * sqrt((k + 1) / k)) with
    k - 1 degrees of freedom, two-sided, or one-sided with `alternative` "greater" (x above the controls: the
    gap gate) or "less": exact under H0 (the sqrt((k + 1) / k) carries the uncertainty of mean_C). It assumes
    normality of the judge-level statistic across judges: skew and heavy tails inflate its size
    (`crawford_howell_size`, docs/causal-test.md). Beside it, `p_rank_controls` is the rank-based check
    (`controls_rank_pvalue`, same alternative), which assumes no distribution.

    With fewer than MIN_CONTROLS controls the result has `p_value` None and a `reason`. When the controls
    agree exactly (s_C = 0): p = 1 if x equals them, else `p_value` None with a reason (the test has no
    spread to compare with).
    """
    if not math.isfinite(float(x)):
        raise InterpError("crawford_howell: the tested judge's statistic must be a finite number")
    if alternative not in ALTERNATIVES:
        raise InterpError(f"crawford_howell: alternative {alternative!r}: use one of {', '.join(ALTERNATIVES)}")
    c = np.asarray(controls, dtype=float)
    if c.ndim != 1:
        raise InterpError(
            "crawford_howell: controls must be a 1-D array of the control judges' statistics, got shape "
            f"{np.shape(controls)}"
        )
    if not np.all(np.isfinite(c)):
        raise InterpError("crawford_howell: the control judges' statistics must be finite numbers")
    k = int(c.size)
    mean = float(c.mean()) if k else None
    sd = float(c.std(ddof=1)) if k >= 2 else None
    reason = too_few_controls(k)
    rank = controls_rank_pvalue(float(x), c, alternative) if k else None
    common = dict(x=float(x), k=k, control_mean=mean, alternative=alternative, p_rank_controls=rank)
    if reason is not None:
        return CrawfordHowell(
            control_sd=sd, t=None, df=max(k - 1, 0), p_value=None, effect_sd=None, reason=reason, **common
        )
    t, p = crawford_howell_t(np.array([float(x)]), c[None, :])
    t, p = float(t[0]), float(p[0])
    if sd == 0 and math.isinf(t):
        return CrawfordHowell(
            control_sd=0.0,
            t=None,
            df=k - 1,
            p_value=None,
            effect_sd=None,
            reason=f"the {k} control judges agree exactly (SD 0): no spread to compare the judge with",
            **common,
        )
    exact = sd == 0  # the controls agree exactly and the judge equals them (t 0): p 1 for every alternative
    return CrawfordHowell(
        control_sd=sd,
        t=t,
        df=k - 1,
        p_value=1.0 if exact else one_sided_p(t, p, alternative),
        effect_sd=(float(x) - mean) / sd if sd else 0.0,
        **common,
    )


def crawford_howell_interval(
    controls: Float[np.ndarray, " control"], test_alpha: float = ALPHA
) -> tuple[float, float] | None:
    """Where the tested judge's statistic would not be rejected at `test_alpha`: mean_C -+ t_{k-1, test_alpha} * s_C *
    sqrt((k + 1) / k) (Crawford-Howell's acceptance region, what the report draws around the controls). None
    with fewer than MIN_CONTROLS controls or when they agree exactly."""
    c = np.asarray(controls, dtype=float)
    k = int(c.size)
    if too_few_controls(k) is not None or not np.all(np.isfinite(c)) or float(c.std(ddof=1)) == 0.0:
        return None
    half = student_t_two_sided_quantile(test_alpha, k - 1) * float(c.std(ddof=1)) * math.sqrt((k + 1) / k)
    return float(c.mean()) - half, float(c.mean()) + half


def leave_one_out(values: Float[np.ndarray, " judge"]) -> list[CrawfordHowell]:
    """Each judge of a null family against the other k - 1 (Crawford-Howell): under H0 every test is a null
    replicate, so the share with p <= test_alpha estimates the false-positive rate on the family's own spread."""
    v = finite_array(values, "leave_one_out", 1)
    return [crawford_howell(float(v[i]), np.delete(v, i)) for i in range(v.size)]


@dataclass(frozen=True)
class BetweenJudge:
    """The causal decision for one judge and one intervention, with the judge as the unit."""

    causal: bool | None  # None: no between-judge test (see reason)
    p_value: float | None  # Crawford-Howell's p, or max(it, p_rank) with random head sets
    test_alpha: float
    reason: str | None
    test: CrawfordHowell  # on Delta(I): the judge's mean effect against its controls'
    within: WithinJudge  # the judge's own Delta(I), "changes this judge's verdicts"
    control_effects: list[float]  # each control's mean Delta(I)
    p_rank: float | None = None

    def to_dict(self) -> dict:
        """The record for result.json: causal, p_value, test_alpha (the test's level), reason, test ("between-judge",
        n_controls, df, t, ...), within_judge (effect, ci, p_value, claim)."""
        test = {"design": "between-judge", "n_controls": self.test.k} | {
            key: value for key, value in self.test.to_dict().items() if key != "k"
        }
        test |= {"control_effects": self.control_effects, "p_rank": self.p_rank}
        if self.test.alternative != "two-sided":  # the two-sided p beside a one-sided one, from the same t
            t = self.test.t
            test["p_two_sided"] = None if t is None else float(student_t_two_sided_p(np.array([t]), self.test.df)[0])
        return {
            "causal": self.causal,
            "p_value": self.p_value,
            "test_alpha": self.test_alpha,
            "reason": self.reason,
            "test": test,
            "within_judge": self.within.to_dict(),
        }

    def verdict(self, judge: str) -> str:
        """One sentence that says which claim it makes: between judges (self-preference) or within the judge."""
        lo, hi = self.within.ci
        within = (
            f"the intervention {WITHIN_JUDGE_CLAIM} by {pts(self.within.effect)} pts {pts_ci((lo, hi))} "
            f"(sign-flip p {p_value(self.within.p_value)}, n = {self.within.n_items} items)"
        )
        if self.causal is None:
            return f"{judge}: no between-judge test ({self.reason}); {within}"
        head = "causal effect on self-preference" if self.causal else "no causal effect on self-preference shown"
        t = self.test
        spread = f"{pts(t.control_mean)} pts mean, SD {fixed(100 * t.control_sd, 1)}"
        rank = "" if self.p_rank is None else f", p_rank {p_value(self.p_rank)}"
        stat = f"t = {t.t:.2f}, df {t.df}, " if t.t is not None else ""
        sided = {"less": "one-sided in the removal direction, "}.get(t.alternative, "")
        return (
            f"{judge}: {head} (p {p_value(self.p_value)}, test_alpha {self.test_alpha:g}; {sided}Crawford-Howell "
            f"against {t.k} control judges ({spread}), {stat}p {p_value(t.p_value)}{rank}); {within}"
        )


def between_judge_test(
    delta_judge: Float[np.ndarray, " item"],
    delta_controls: Float[np.ndarray, "control item"],
    *,
    p_rank: float | None = None,
    test_alpha: float = ALPHA,
    n_flips: int = N_FLIPS,
    n_boot: int = N_BOOT,
    seed: int = 0,
    alternative: str = "two-sided",
) -> BetweenJudge:
    """Does intervention I move this judge's P(own) differently from how it moves k control judges'?

    `delta_judge[i] = P_J(own | I) - P_J(own)`, `delta_controls[c, i]` the same for control c on the same item
    and the same answer (J's own, which c did not write). H0: the judge's mean Delta(I) is one more draw from
    the controls' normal distribution (Crawford-Howell, two-sided, or one-sided with `alternative` "less": the
    judge's P(own) falls more than its controls', the removal direction `interp intervene` tests). With heads
    chosen from data, `p_rank`
    (the chosen heads against random head sets) joins as an intersection-union test: p = max(p_CH, p_rank).
    causal iff p <= test_alpha; None with a reason when there are fewer than MIN_CONTROLS controls (or they agree
    exactly). The within-judge effect is always reported beside it.
    """
    dj = finite_array(delta_judge, "between_judge_test (delta_judge)", 1)
    dc = np.asarray(delta_controls, dtype=float)
    if dc.size == 0:
        dc = np.empty((0, dj.size))
    elif (dc.ndim != 2 or dc.shape[1] != dj.size) or not np.all(np.isfinite(dc)):
        raise InterpError(
            f"between_judge_test: need the controls' per-item effects as a finite [control, {dj.size}] "
            f"array (the judge's items), got shape {dc.shape}"
        )
    if not 0 < test_alpha < 1:
        raise InterpError(f"between_judge_test: test_alpha = {test_alpha} must be in (0, 1)")
    if p_rank is not None and not 0 <= p_rank <= 1:
        raise InterpError(f"between_judge_test: p_rank = {p_rank} must be in [0, 1]")
    within = within_judge_effect(dj, n_flips=n_flips, n_boot=n_boot, seed=seed)
    control_effects = dc.mean(axis=1)
    test = crawford_howell(float(dj.mean()), control_effects, alternative)
    common = dict(
        test_alpha=test_alpha, test=test, within=within, control_effects=control_effects.tolist(), p_rank=p_rank
    )
    if test.p_value is None:
        return BetweenJudge(causal=None, p_value=None, reason=test.reason, **common)
    p = test.p_value if p_rank is None else max(test.p_value, p_rank)
    return BetweenJudge(causal=bool(p <= test_alpha), p_value=float(p), reason=None, **common)


# --- how much of the self-preference gap an intervention removes ------------------------------------------


@dataclass(frozen=True)
class ShareRemoved:
    """G = DBG_J - mean DBG_C before intervention I, G_I after it, and the share removed 1 - G_I / G."""

    gap_before: Interval
    gap_after: Interval
    test_before: CrawfordHowell  # the gap gate: is J's DBG above its controls' (one-sided Crawford-Howell)?
    test_after: CrawfordHowell  # is J still above them after I (one-sided)?
    share_removed: RatioInterval | None  # Fieller's interval (`share_fieller`); None: see reason
    test_alpha: float
    reason: str | None = None

    def to_dict(self) -> dict:
        """The share and its parts as a JSON-ready dict."""
        out = asdict(self)
        out["share_removed"] = self.share_removed.to_dict() if self.share_removed is not None else None
        return out


def _gap(families: list[np.ndarray], stage: int) -> np.ndarray:
    judge, controls = families  # [draw, 1, stage, item], [draw, control, stage, item]
    return judge[:, 0, stage].mean(axis=-1) - controls[:, :, stage].mean(axis=(-1, -2))


def share_statistic(families: list[np.ndarray]) -> np.ndarray:
    """1 - G_I / G per multi-bootstrap draw (a `FamilyStatistic`): the old percentile interval's statistic, kept for
    the coverage comparison (`share_interval_coverage(method="percentile")`)."""
    before, after = _gap(families, 0), _gap(families, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 - after / before


def share_removed(
    judge_before: Float[np.ndarray, " item"],
    judge_after: Float[np.ndarray, " item"],
    controls_before: Float[np.ndarray, "control item"],
    controls_after: Float[np.ndarray, "control item"],
    *,
    test_alpha: float = ALPHA,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
) -> ShareRemoved:
    """The share of judge J's self-preference gap over its control judges that intervention I removes.

    Inputs are per-item DBG contributions (e.g. P(own)[i] - P_gold(own)[i], "own" always meaning J's answer,
    which the controls read without having written it), before and after I, for J and for each control.
    G = mean_i DBG_J - mean_C mean_i DBG_C before I, G_I the same after; share = 1 - G_I / G.

    H0 of the gate: J's DBG is one more draw from the controls' (normal) distribution, against the one-sided
    alternative that it lies above them (Crawford-Howell on the judges' mean DBG before I, "greater"). Only
    where G > 0 and the gate rejects at `test_alpha` is the share reported, with Fieller's interval
    (`share_fieller`); otherwise `share_removed` is None with a reason and both gaps are reported. The gaps
    carry multi-bootstrap intervals (controls resampled, before and after together, and items, jointly; J fixed).
    """
    jb, ja = (
        finite_array(judge_before, "share_removed (judge_before)", 1),
        finite_array(judge_after, "share_removed (judge_after)", 1),
    )
    cb, ca = (
        finite_array(controls_before, "share_removed (controls_before)", 2),
        finite_array(controls_after, "share_removed (controls_after)", 2),
    )
    if not (jb.shape == ja.shape and cb.shape == ca.shape and cb.shape[1] == jb.size):
        raise InterpError(
            "share_removed: the judge and every control must read the same items before and after (shapes "
            f"{jb.shape}, {ja.shape}, {cb.shape}, {ca.shape})"
        )
    if not 0 < test_alpha < 1:
        raise InterpError(f"share_removed: test_alpha = {test_alpha} must be in (0, 1)")
    families = [np.stack([jb, ja])[None], np.stack([cb, ca], axis=1)]  # [1, stage, item], [control, stage, item]
    common = dict(n_boot=n_boot, seed=seed, level=level)
    out = dict(
        gap_before=multi_bootstrap(families, lambda f: _gap(f, 0), **common),
        gap_after=multi_bootstrap(families, lambda f: _gap(f, 1), **common),
        test_before=crawford_howell(float(jb.mean()), cb.mean(axis=1), "greater"),
        test_after=crawford_howell(float(ja.mean()), ca.mean(axis=1), "greater"),
        test_alpha=test_alpha,
    )
    reason = gap_gate_reason(out["gap_before"].estimate, out["test_before"], test_alpha)
    if reason is not None:
        return ShareRemoved(share_removed=None, reason=reason, **out)
    return ShareRemoved(share_removed=share_fieller(jb, ja, cb, ca, level=level), **out)


def gap_gate_reason(gap: float, test: CrawfordHowell, test_alpha: float) -> str | None:
    """Why no share is reported (None: the gate passes): no test, a gap before I at most 0 (J does not prefer
    its own answers more than its controls), or a one-sided Crawford-Howell p above test_alpha."""
    if test.p_value is None:
        return f"no test of the gap before the intervention: {test.reason}"
    if gap <= 0:
        return (
            f"the judge does not prefer its own answers more than its controls (gap before {pts(gap)} pts, at most "
            "0): no gap to remove, no share"
        )
    if test.p_value > test_alpha:
        return (
            f"the gap before the intervention ({pts(gap)} pts) is not significant (one-sided Crawford-Howell p "
            f"{p_value(test.p_value)} > test_alpha {test_alpha:g}): both gaps reported, no share"
        )
    return None


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
    """How often a test rejects under a simulated null: its size, with the null's distribution and k controls."""

    distribution: str
    k: int
    test_alpha: float
    rate: float  # share of null families rejected
    n_families: int
    ci: tuple[float, float]  # Clopper-Pearson 95 %

    def to_dict(self) -> dict:
        """The estimate as a JSON-ready dict."""
        return asdict(self)


def crawford_howell_size(
    k: int, distribution: str = "normal", *, test_alpha: float = ALPHA, n_families: int = 2000, seed: int = 0
) -> SizeEstimate:
    """The rejection rate of Crawford-Howell at `test_alpha` over `n_families` simulated null families: the tested
    judge and its k controls are k + 1 independent draws from one `distribution` (H0 true), so any rate above
    test_alpha is what the distribution's departure from normality costs."""
    if k < 2:
        raise InterpError(f"crawford_howell_size: k = {k}: need at least 2 controls")
    if n_families < 1:
        raise InterpError("crawford_howell_size: n_families must be at least 1")
    draws = _draw(distribution, np.random.default_rng(seed), (n_families, k + 1))
    _, p = crawford_howell_t(draws[:, 0], draws[:, 1:])
    rejected = int(np.sum(p <= test_alpha))
    return SizeEstimate(
        distribution=distribution,
        k=k,
        test_alpha=test_alpha,
        rate=rejected / n_families,
        n_families=n_families,
        ci=clopper_pearson(rejected, n_families),
    )
