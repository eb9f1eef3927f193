"""The whole decision of the causal test on simulated judges whose truth is known: how often a pure flattening is
called causal (the false-positive rate the specificity check exists for), and how often a true removal of an
own-answer bias is (its power). `python experiments/bench_specificity.py` prints the tables in docs/causal-test.md.

The judges. A tested judge J and k controls read n pairs, each in both orders. Their clean own-answer log-odds in
order o (own answer in slot A or B) are

    x[j, i, o] = q[i] + a[j] + b [j = J] +- p[j] + e[j, i, o],

q the pair's quality difference (shared by every judge), a a control's seed-level lean toward the answer it reads as
own (0 for J), b J's own-answer bias (set so that J's mean P(own) lies `gap` above the controls' population),
p a seed-level position bias (+ in order A, - in order B), e noise. The edit:

    x'[j, i, o] = lambda (x[j, i, o] - r b [j = J]) + eta[j] + z[j, i, o],

lambda the flattening (1: none), r the share of the bias it removes (0: a pure flattening), eta a judge's own
response to the edit (its SD set so that the controls' mean changes of P(own) have the between-control spread
asked for), z noise. P(own) = the mean over both orders of sigmoid(x), as the toolkit reads it.

The decision (`decide`): the gap gate (one-sided Crawford-Howell on P(own) before), the between-judge test
(two-sided Crawford-Howell on the mean change), the share's Fieller interval above 0 (`causal_call`), and, for the
new rule, the specificity check (`interp.metrics.specificity.specificity_test`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from interp.metrics.causal_test import ALPHA
from interp.metrics.judge_level import crawford_howell
from interp.metrics.share import causal_call, share_fieller
from interp.metrics.specificity import specificity_test

CALIBRATION_JUDGES = 400  # controls drawn to set the edit's seed-level SD and the bias to a target


@dataclass(frozen=True)
class FlatteningModel:
    """The simulated judges of the module docstring (probabilities as shares, log-odds in nats)."""

    n_items: int = 90
    k: int = 6
    gap: float = 0.15  # J's mean P(own) above the controls' population, before the edit
    spread: float = 0.013  # between-control SD of the mean change of P(own) under the edit
    lam: float = 0.6  # the flattening: the edit multiplies every log-odds by lambda (1: none)
    removal: float = 0.0  # the share of J's own-answer bias the edit removes (0: a pure flattening)
    item_sd: float = 1.5  # the pairs' quality log-odds, shared by every judge
    level_sd: float = 0.05  # a control's seed-level lean toward the answer it reads as own
    position_sd: float = 0.3  # a judge's seed-level position bias
    noise_sd: float = 0.2  # judge x pair x order noise of the clean log-odds
    edit_noise_sd: float = 0.1  # judge x pair x order noise the edit adds


def _p_own(x: np.ndarray) -> np.ndarray:
    """P(own) per pair: the mean over both orders (last axis) of sigmoid(x)."""
    return (1.0 / (1.0 + np.exp(-x))).mean(-1)


def _clean(rng: np.random.Generator, model: FlatteningModel, k: int, bias: float) -> np.ndarray:
    """Clean log-odds [judge (J first, then k controls), pair, order]."""
    n = model.n_items
    q = rng.normal(0, model.item_sd, n)
    level = np.append(bias, rng.normal(0, model.level_sd, k))
    position = rng.normal(0, model.position_sd, k + 1)
    sign = np.array([1.0, -1.0])
    noise = rng.normal(0, model.noise_sd, (k + 1, n, 2))
    return q[None, :, None] + level[:, None, None] + position[:, None, None] * sign + noise


def _edited(rng: np.random.Generator, model: FlatteningModel, x: np.ndarray, bias: float, eta_sd: float) -> np.ndarray:
    shift = np.zeros(x.shape[0])
    shift[0] = model.removal * bias
    eta = rng.normal(0, eta_sd, x.shape[0])
    noise = rng.normal(0, model.edit_noise_sd, x.shape)
    return model.lam * (x - shift[:, None, None]) + eta[:, None, None] + noise


def _bisect(f, low: float, high: float, target: float, steps: int = 40) -> float:
    """x in [low, high] with f(x) = target, f increasing (the bound when the target lies outside)."""
    if f(low) >= target:
        return low
    if f(high) <= target:
        return high
    for _ in range(steps):
        middle = (low + high) / 2
        low, high = (middle, high) if f(middle) < target else (low, middle)
    return (low + high) / 2


def calibrate(model: FlatteningModel, seed: int = 0) -> tuple[float, float, float]:
    """(b, eta SD, the spread reached): J's bias for `model.gap`, and the edit's seed-level SD for `model.spread`
    (on CALIBRATION_JUDGES controls with common random numbers; where the noise alone spreads the controls more, eta
    SD is 0 and the spread reached is larger than asked)."""
    big = replace(model, n_items=model.n_items)

    def gap(bias: float) -> float:
        x = _clean(np.random.default_rng(seed), big, CALIBRATION_JUDGES, 0.0)
        x[0] += bias
        p = _p_own(x)
        return float(p[0].mean() - p[1:].mean())

    bias = _bisect(gap, 0.0, 10.0, model.gap)

    def spread(eta_sd: float) -> float:
        rng = np.random.default_rng(seed + 1)
        x = _clean(rng, big, CALIBRATION_JUDGES, bias)
        after = _edited(rng, big, x, bias, eta_sd)
        delta = (_p_own(after) - _p_own(x)).mean(-1)[1:]
        return float(delta.std(ddof=1))

    eta_sd = _bisect(spread, 0.0, 3.0, model.spread)
    return bias, eta_sd, spread(eta_sd)


def draw(rng: np.random.Generator, model: FlatteningModel, bias: float, eta_sd: float):
    """One simulated test: per-pair P(own) before and after, for J ([pair]) and its controls ([control, pair])."""
    x = _clean(rng, model, model.k, bias)
    after = _edited(rng, model, x, bias, eta_sd)
    before_p, after_p = _p_own(x), _p_own(after)
    return before_p[0], after_p[0], before_p[1:], after_p[1:]


@dataclass(frozen=True)
class Decision:
    """One simulated test's calls: the gap gate, the between-judge p, the share above 0, the specificity check, and
    the decision without (`old`) and with (`new`) the check."""

    gate: bool
    p_between: float
    share_above_zero: bool
    specific: bool
    old: bool
    new: bool


def decide(jb, ja, cb, ca, *, test_alpha: float = ALPHA, n_boot: int = 200, seed: int = 0) -> Decision:
    """The causal test's decision on per-pair P(own) (module docstring): gold is the same for every judge and
    cancels in every gap, so P(own) stands for the per-pair DBG."""
    gate_test = crawford_howell(float(jb.mean()), cb.mean(axis=1), "greater")
    gate = bool(jb.mean() > cb.mean() and gate_test.p_value is not None and gate_test.p_value <= test_alpha)
    between = crawford_howell(float((ja - jb).mean()), (ca - cb).mean(axis=1))
    p = between.p_value if between.p_value is not None else 1.0
    share = share_fieller(jb, ja, cb, ca, level=1 - test_alpha) if gate else None
    above = share is not None and share.low is not None and math.isfinite(share.low) and share.low > 0
    names = [f"c{c}" for c in range(cb.shape[0])]
    check = specificity_test(
        jb,
        ja,
        dict(zip(names, cb, strict=True)),
        dict(zip(names, ca, strict=True)),
        test_alpha=test_alpha,
        n_boot=n_boot,
        seed=seed,
    )
    old, _ = causal_call(p, share, test_alpha)
    new, _ = causal_call(p, share, test_alpha, specificity=check)
    return Decision(gate, float(p), above, check.passed, old is True, new is True)


@dataclass(frozen=True)
class Rates:
    """The share of `n` simulated tests called causal without (`old`) and with (`new`) the specificity check, and
    how often each part passed; `spread` the between-control spread reached, `bias` J's bias (log-odds)."""

    n: int
    old: float
    new: float
    gate: float
    between: float
    share: float
    specific: float
    spread: float
    bias: float


def decision_rates(
    model: FlatteningModel, *, n_sims: int = 1000, seed: int = 0, test_alpha: float = ALPHA, n_boot: int = 200
) -> Rates:
    """How often the decision calls `model`'s edit causal over `n_sims` seeded draws (`decide`)."""
    bias, eta_sd, reached = calibrate(model, seed)
    rng = np.random.default_rng([seed, 81])
    calls = [
        decide(*draw(rng, model, bias, eta_sd), test_alpha=test_alpha, n_boot=n_boot, seed=seed + s)
        for s in range(n_sims)
    ]

    def rate(name: str) -> float:
        return float(np.mean([getattr(c, name) for c in calls]))

    return Rates(
        n=n_sims,
        old=rate("old"),
        new=rate("new"),
        gate=rate("gate"),
        between=float(np.mean([c.p_between <= test_alpha for c in calls])),
        share=rate("share_above_zero"),
        specific=rate("specific"),
        spread=reached,
        bias=bias,
    )
