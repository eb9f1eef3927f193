"""The familiarity lens (Wataoka et al., arXiv 2410.21819: judges rate low-perplexity text higher): is a judge's
self-preference a preference for what it finds predictable?

Per item i of a judge with own answers: ``delta_i = lp_own_i - lp_other_i``, the own answer's mean token
log-probability under the judge minus the other answer's (nats per token; positive: its own answer is the more
familiar), and the run's ``p_own_i`` (P(own answer wins), both orders) and gold's ``gold_i``. Then:

- ``difference``: mean ``delta`` (does the judge find its own answers more predictable?);
- ``slope``, ``intercept``: a fractional logistic fit ``logit P(own)_i = intercept + slope * delta_i``
  (maximum likelihood of the soft verdicts, Newton steps); ``p_own_at_zero = sigmoid(intercept)``, the
  judge's P(own) where both answers are equally familiar;
- DBG's per-item part ``d_i = hard(p_own_i) - hard(gold_i)`` (soft: ``p_own_i - gold_i``; the mean of ``d`` is
  DBG, :func:`interp.metrics.dbg.dbg_scores`), and at equal familiarity: ``adjusted_dbg``, the intercept of
  the least-squares line of ``d`` on ``delta`` (DBG where ``delta = 0``); ``matched_dbg``, DBG on the half of the
  items with the smallest ``|delta|`` (the matched pairs), with its residual mismatch (their mean ``delta`` and
  mean ``|delta|``); and DBG within quantile strata of ``delta``;
- for an organism against its null family (judges that read the same items): ``gap = DBG - mean DBG(nulls)``,
  the same of the adjusted DBGs, and ``explained_share = 1 - adjusted gap / gap``, the part of the planted gap
  that familiarity accounts for (the nulls carry the familiarity a judge of the same base has without a plant).

Every interval is a percentile bootstrap over items (:func:`interp.metrics.stats.bootstrap_draws`), all judges'
items resampled together where judges are compared.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from interp.errors import InterpError
from interp.metrics.dbg import hard_wins, probability_array
from interp.metrics.stats import bootstrap_draws, check_level, percentile_interval

NEWTON_STEPS = 50
RIDGE = 1e-6  # a whisper of an L2 penalty on the slope: finite where the verdicts separate perfectly


def logistic_fit(x: Sequence[float], p: Sequence[float]) -> tuple[float, float]:
    """``(intercept, slope)`` maximising ``sum p log s + (1 - p) log(1 - s)``, ``s = sigmoid(a + b x)``: the
    logistic regression of soft outcomes ``p`` in [0, 1] on ``x``. ``slope`` is NaN where ``x`` does not vary."""
    x = np.asarray(x, dtype=float)
    p = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    if x.size == 0:
        return math.nan, math.nan
    if np.ptp(x) == 0:
        mean = float(np.clip(p.mean(), 1e-9, 1 - 1e-9))
        return math.log(mean / (1 - mean)), math.nan
    design = np.stack([np.ones_like(x), x], axis=1)
    beta = np.zeros(2)
    penalty = np.diag([0.0, RIDGE * x.size])
    for _ in range(NEWTON_STEPS):
        s = 1.0 / (1.0 + np.exp(-np.clip(design @ beta, -30, 30)))
        gradient = design.T @ (p - s) - penalty @ beta
        hessian = (design * (s * (1 - s))[:, None]).T @ design + penalty + 1e-12 * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    return float(beta[0]), float(beta[1])


def line_intercept(y: np.ndarray, x: np.ndarray) -> float:
    """The least-squares line of ``y`` on ``x`` at ``x = 0`` (the mean of ``y`` where ``x`` does not vary)."""
    if y.size == 0:
        return math.nan
    spread = float(np.var(x))
    if spread == 0:
        return float(y.mean())
    slope = float(np.mean((x - x.mean()) * (y - y.mean()))) / spread
    return float(y.mean() - slope * x.mean())


def matched_half(delta: np.ndarray) -> np.ndarray:
    """The indices of the ceil(n/2) items with the smallest ``|delta|`` (ties broken by position)."""
    return np.argsort(np.abs(delta), kind="stable")[: (delta.size + 1) // 2]


def _estimate(stat: Callable[[np.ndarray], float], n: int, draws: np.ndarray, level: float, *, low: int = 1) -> dict:
    """``{"value", "ci"}``: the statistic on all items and its percentile interval over the draws (None where
    it is not finite, or fewer than ``low`` items)."""
    if n < low:
        return {"value": None, "ci": [None, None]}
    value = stat(np.arange(n))
    values = np.array([stat(idx) for idx in draws], dtype=float)
    lo, hi = percentile_interval(values, level)
    return {"value": _finite(value), "ci": [_finite(lo), _finite(hi)]}


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def dbg_parts(p_own: Sequence[float], gold_own: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Per item, DBG's hard and soft parts (their means are `dbg_scores`' ``dbg_hard`` and ``dbg_soft``)."""
    judge = probability_array(p_own, "p_own")
    gold = probability_array(gold_own, "gold_own")
    if judge.size != gold.size:
        raise InterpError(f"familiarity: p_own has {judge.size} items but gold_own has {gold.size}")
    return hard_wins(judge) - hard_wins(gold), judge - gold


def _strata(delta: np.ndarray, parts: tuple[np.ndarray, np.ndarray], n_strata: int, n_boot: int, seed: int, level):
    k = max(1, min(n_strata, delta.size // 2))
    order = np.argsort(delta, kind="stable")
    out = []
    for s, chunk in enumerate(np.array_split(order, k)):
        draws = bootstrap_draws(chunk.size, n_boot=n_boot, seed=seed + 1 + s)
        hard, soft = parts[0][chunk], parts[1][chunk]
        out.append(
            {
                "low": float(delta[chunk].min()),
                "high": float(delta[chunk].max()),
                "n": int(chunk.size),
                "mean_difference": float(delta[chunk].mean()),
                "dbg_hard": _estimate(lambda i, h=hard: float(h[i].mean()), chunk.size, draws, level),
                "dbg_soft": _estimate(lambda i, v=soft: float(v[i].mean()), chunk.size, draws, level),
            }
        )
    return out


def familiarity_lens(
    own_logprob: Sequence[float],
    other_logprob: Sequence[float],
    p_own: Sequence[float],
    gold_own: Sequence[float],
    *,
    n_strata: int = 3,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """The familiarity lens of one judge (the module's docstring has the definitions): per item, its own and the
    other answer's mean token log-probability under the judge, its P(own) and gold's. Returns the fields of
    `interp.results.familiarity.JudgeFamiliarity` (all but ``own_model``); rates are fractions, log-probabilities
    nats per token, the slope log-odds per nat."""
    check_level(level)
    own = np.asarray(own_logprob, dtype=float)
    other = np.asarray(other_logprob, dtype=float)
    hard, soft = dbg_parts(p_own, gold_own)
    if not (own.size == other.size == hard.size) or own.size == 0:
        raise InterpError(
            f"familiarity: need one own and one other log-probability per judged item, got {own.size}, "
            f"{other.size} and {hard.size} items"
        )
    if not (np.all(np.isfinite(own)) and np.all(np.isfinite(other))):
        raise InterpError("familiarity: log-probabilities must be finite (an empty answer has none)")
    p = probability_array(p_own, "p_own")
    delta = own - other
    n = delta.size
    draws = bootstrap_draws(n, n_boot=n_boot, seed=seed)
    fits = {}

    def fit(idx: np.ndarray) -> tuple[float, float]:
        key = idx.tobytes()
        if key not in fits:
            fits[key] = logistic_fit(delta[idx], p[idx])
        return fits[key]

    matched = matched_half(delta)
    mdraws = bootstrap_draws(matched.size, n_boot=n_boot, seed=seed)
    return {
        "n_items": int(n),
        "own_logprob": float(own.mean()),
        "other_logprob": float(other.mean()),
        "own_perplexity": float(math.exp(-own.mean())),
        "other_perplexity": float(math.exp(-other.mean())),
        "difference": _estimate(lambda i: float(delta[i].mean()), n, draws, level),
        "slope": _estimate(lambda i: fit(i)[1], n, draws, level, low=3),
        "intercept": _estimate(lambda i: fit(i)[0], n, draws, level, low=3),
        "p_own_at_zero": _estimate(lambda i: 1.0 / (1.0 + math.exp(-fit(i)[0])), n, draws, level, low=3),
        "dbg_hard": _estimate(lambda i: float(hard[i].mean()), n, draws, level),
        "dbg_soft": _estimate(lambda i: float(soft[i].mean()), n, draws, level),
        "adjusted_dbg_hard": _estimate(lambda i: line_intercept(hard[i], delta[i]), n, draws, level, low=3),
        "adjusted_dbg_soft": _estimate(lambda i: line_intercept(soft[i], delta[i]), n, draws, level, low=3),
        "matched_dbg_hard": _estimate(lambda i: float(hard[matched][i].mean()), matched.size, mdraws, level),
        "matched_dbg_soft": _estimate(lambda i: float(soft[matched][i].mean()), matched.size, mdraws, level),
        "matched_n": int(matched.size),
        "matched_mean_difference": float(delta[matched].mean()),
        "matched_mean_abs_difference": float(np.abs(delta[matched]).mean()),
        "strata": _strata(delta, (hard, soft), n_strata, n_boot, seed, level),
    }


def null_comparison(
    organism: tuple[Sequence[float], Sequence[float]],
    nulls: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """An organism's planted gap against its null family, plain and at equal familiarity. Each judge is
    ``(d, delta)``: DBG's hard per-item part and the own-minus-other log-probability difference on the same
    items (in the same order). Returns ``{"gap_hard", "adjusted_gap_hard", "explained_share"}``, each
    ``{"value", "ci"}``, the items resampled jointly for all judges."""
    check_level(level)
    if not nulls:
        raise InterpError("familiarity: an organism's comparison needs at least one null judge")
    judges = [(np.asarray(d, dtype=float), np.asarray(x, dtype=float)) for d, x in (organism, *nulls)]
    n = judges[0][0].size
    if n == 0 or any(d.size != n or x.size != n for d, x in judges):
        raise InterpError("familiarity: the organism and its nulls must be read on the same items")
    draws = bootstrap_draws(n, n_boot=n_boot, seed=seed)

    def gap(idx: np.ndarray) -> float:
        return float(judges[0][0][idx].mean() - np.mean([d[idx].mean() for d, _ in judges[1:]]))

    def adjusted(idx: np.ndarray) -> float:
        first = line_intercept(judges[0][0][idx], judges[0][1][idx])
        return first - float(np.mean([line_intercept(d[idx], x[idx]) for d, x in judges[1:]]))

    def share(idx: np.ndarray) -> float:
        plain = gap(idx)
        return 1.0 - adjusted(idx) / plain if plain != 0 else math.nan

    return {
        "gap_hard": _estimate(gap, n, draws, level),
        "adjusted_gap_hard": _estimate(adjusted, n, draws, level, low=3),
        "explained_share": _estimate(share, n, draws, level, low=3),
    }
