"""The share of a judge's self-preference gap that an intervention removes, as an interval, and when it makes a
candidate causal.

- `share_fieller`: Fieller's interval for the share 1 - G_I / G = D / G (`share_components`: the gap removed,
  the gap, and their covariance from the controls and from the items), unbounded where G is not clear of 0;
- `causal_call`: causal only where the Holm-adjusted p passes and the share's interval lies above 0; without
  the gap gate (a diagnostic), the Holm p alone;
- `simulate_share_judges`: simulated judges with a known share, for the interval's coverage
  (`interp.metrics.share_coverage`, `python experiments/bench_share_coverage.py`, docs/causal-test.md).

The gap gate and `share_removed` itself live in `interp.metrics.judge_level`; Fieller's interval in
`interp.metrics.stats`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from jaxtyping import Float

from interp.errors import InterpError
from interp.formatting import p_value, pct
from interp.metrics.causal_test import ALPHA
from interp.metrics.stats import RatioInterval, fieller_interval
from interp.metrics.student_t import student_t_two_sided_quantile


def _psd(matrix: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    return (vectors * np.clip(values, 0.0, None)) @ vectors.T


def share_components(
    judge_before: Float[np.ndarray, " item"],
    judge_after: Float[np.ndarray, " item"],
    controls_before: Float[np.ndarray, "control item"],
    controls_after: Float[np.ndarray, "control item"],
) -> tuple[float, float, np.ndarray, np.ndarray]:
    """The gap removed D = G - G_I, the gap before G, and the covariance of (D, G) in its two parts.

    J is fixed; what varies is which controls were drawn (the between-judge part: the sample covariance of the
    controls' (drop, level before) over k, k - 1 df) and which items (J's part: the covariance over items of
    J's per-item values minus the controls' item means, over n, less the controls' own item noise, which the
    between-judge part already holds (two-way residuals over (k - 1)(n - 1), over k n); n - 1 df). Item
    effects that every judge shares cancel in the gaps and appear in neither part.
    """
    k, n = controls_before.shape
    judge = np.stack([judge_before - judge_after, judge_before])  # [2, item]: drop, level before
    controls = np.stack([controls_before - controls_after, controls_before])  # [2, control, item]
    per_control = controls.mean(axis=2)  # [2, control]
    num, den = judge.mean(axis=1) - per_control.mean(axis=1)
    between = np.cov(per_control, ddof=1) / k
    if n < 2:
        return float(num), float(den), between, np.zeros((2, 2))
    item = np.cov(judge - controls.mean(axis=1), ddof=1) / n
    residual = controls - per_control[..., None] - controls.mean(axis=1, keepdims=True)
    residual += controls.mean(axis=(1, 2), keepdims=True)
    noise = np.einsum("aci,bci->ab", residual, residual) / ((k - 1) * (n - 1))
    return float(num), float(den), between, _psd(item - noise / (k * n))


def share_fieller(
    judge_before: Float[np.ndarray, " item"],
    judge_after: Float[np.ndarray, " item"],
    controls_before: Float[np.ndarray, "control item"],
    controls_after: Float[np.ndarray, "control item"],
    *,
    level: float = 0.95,
) -> RatioInterval:
    """Fieller's interval for the share removed, D / G = 1 - G_I / G (`share_components`, at least 2 controls).

    H0 at each share s: D - s G has mean 0. Its variance has two parts, each scaled by its own squared t
    quantile: the controls' (k - 1 df) and the items' (n - 1 df). Summing the scaled parts bounds the quantile
    of their combination from above, where Welch-Satterthwaite's df, estimated from 2 or 3 controls, is itself
    too noisy (it under-covered at 3 controls: 0.91). Unbounded where G is not clear of 0 at this level
    (`RatioInterval.kind`). Its coverage, measured by simulation, is in docs/causal-test.md
    (`share_interval_coverage`, `python experiments/bench_share_coverage.py`).
    """
    k, n = np.shape(controls_before)
    if k < 2:
        raise InterpError(f"share_fieller: need at least 2 control judges, got {k}")
    num, den, between, item = share_components(judge_before, judge_after, controls_before, controls_after)
    t_between, t_item = (
        student_t_two_sided_quantile(1.0 - level, k - 1),
        student_t_two_sided_quantile(1.0 - level, max(n - 1, 1)),
    )
    covariance = (t_between / t_item) ** 2 * between + item  # Fieller's t is t_item: each part at its own quantile
    return fieller_interval(num, den, covariance, max(n - 1, 1), level=level)


def share_level(test_alpha: float = ALPHA) -> float:
    """The level of the share's interval at the test's level: 1 - test_alpha (0.95 at 0.05, 0.99 at 0.01). Its low
    end above 0 is then a one-sided test at test_alpha / 2, beside the one-sided removal test at test_alpha that it
    joins as an intersection-union test (both must pass): a stricter share condition costs little power, since the
    removal test, whose scale holds the judge's seed-level variance too, is the one that binds."""
    if not 0 < test_alpha < 1:
        raise InterpError(f"test_alpha = {test_alpha} must be in (0, 1)")
    return 1.0 - test_alpha


def causal_call(
    p_holm: float | None,
    share,
    test_alpha: float = ALPHA,
    *,
    gap_gate: bool = True,
    no_share_reason: str | None = None,
    specificity=None,
) -> tuple[bool | None, str | None]:
    """The decision for one candidate: (causal, reason).

    With the gap gate (the verdict): causal iff the Holm-adjusted p is at most `test_alpha` and the share's
    interval lies above 0 (the candidate removes the gap; one that widens it, or whose interval is unbounded or
    reaches 0, is not causal). No share (no gap to carry, `no_share_reason`) or no p: None. Without the gate
    (`gap_gate=False`, the `--no-gap-gate` diagnostic): causal iff p_holm <= test_alpha, whatever the gap and
    the share. `share` is a `RatioInterval`, an `Interval`, a dict with "low", or None.

    `specificity` (a `interp.metrics.specificity.Specificity` or its dict; None: not checked, the call as before):
    with the gate, a candidate that passes the p and the share is causal only where the check passed too (the edit
    removes the preference for the own answer, not the judge's decisiveness); else False with the check's reason.
    """
    if p_holm is None:
        return None, "no between-judge test"
    passes = bool(p_holm <= test_alpha)
    holm_words = f"Holm p {p_value(p_holm)} {'<=' if passes else '>'} test_alpha {test_alpha:g}"
    if not gap_gate:
        return passes, f"diagnostic without the gap gate: called on the Holm-adjusted p alone ({holm_words})"
    if share is None:
        return None, no_share_reason or "no share of the gap: no gap to carry"
    low = share.get("low") if isinstance(share, dict) else getattr(share, "low", None)
    removes = low is not None and math.isfinite(low) and low > 0
    if passes and removes:
        if specificity is None:
            return True, None
        passed = specificity["passed"] if isinstance(specificity, dict) else specificity.passed
        if passed:
            return True, None
        reason = specificity["reason"] if isinstance(specificity, dict) else specificity.reason
        return False, f"specificity: {reason}"
    why = [] if passes else [holm_words]
    if not removes:
        shown = "unbounded" if low is None or not math.isfinite(low) else f"from {pct(low)}"
        why.append(f"the share's interval ({shown}) does not lie above 0: not shown to remove the gap")
    return False, "; ".join(why)


@dataclass(frozen=True)
class ShareModel:
    """The simulated judges of `simulate_share_judges`: items, the judge's `gap` above the controls and the `share`
    of it the intervention removes, and the spreads of seed, drop, item and noise effects."""

    n_items: int = 90
    gap: float = 0.3
    share: float = 0.5
    judge_sd: float = 0.1
    drop_sd: float = 0.05
    item_sd: float = 0.01
    noise_sd: float = 0.05


def simulate_share_judges(
    rng: np.random.Generator, k: int, model: ShareModel = ShareModel()
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-item DBG before and after I for a judge and k controls, y[j, s, i] = mu[j, s] + v[s, i] + w[g, s, i]
    + e[j, s, i] (the multi-bootstrap's model in tests/metrics/test_judge_level.py, with a stage): seed effects
    (controls' level u_c ~ N(0, judge_sd), their drop under I 0.05 + N(0, drop_sd)), item effects v shared
    by every judge (SD 0.1), judge-versus-controls item effects w (item_sd), noise e (noise_sd, correlation 0.5
    before/after). J sits `gap` above the controls' population and I removes `share` of it: the true share."""
    n_items, gap, share = model.n_items, model.gap, model.share
    judge_sd, drop_sd, item_sd, noise_sd = model.judge_sd, model.drop_sd, model.item_sd, model.noise_sd
    level = rng.normal(0, judge_sd, k)
    drop = 0.05 + rng.normal(0, drop_sd, k)
    mu = np.stack([np.append(gap, level), np.append(gap - 0.05 - share * gap, level - drop)], axis=1)  # [j, s]
    shared = rng.normal(0, 0.1, n_items)
    v = np.stack([shared, shared + rng.normal(0, 0.02, n_items)])  # [s, i]
    w = rng.normal(0, item_sd, (2, 2, n_items))  # [group, s, i]
    group = np.append(0, np.ones(k, dtype=int))
    e0 = rng.normal(0, noise_sd, (k + 1, n_items))
    e1 = 0.5 * e0 + math.sqrt(0.75) * rng.normal(0, noise_sd, (k + 1, n_items))
    y = mu[..., None] + v[None] + w[group] + np.stack([e0, e1], axis=1)  # [j, s, i]
    return y[0, 0], y[0, 1], y[1:, 0], y[1:, 1]
