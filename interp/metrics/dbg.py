"""The DBG paper's scores (seed 000, sections 2-3): hard and soft win rates, DBG = judge win rate - gold win
rate with paired bootstrap intervals, and position consistency. Pure functions over probabilities."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from interp.errors import InterpError
from interp.metrics.stats import bootstrap_ci


def probability_array(p: Sequence[float], name: str) -> np.ndarray:
    arr = np.asarray(p, dtype=float).reshape(-1)
    if arr.size == 0:
        raise InterpError(f"{name}: no instructions (empty probability list)")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0) or np.any(arr > 1.0):
        raise InterpError(f"{name}: probabilities must be finite numbers in [0, 1]")
    return arr


def hard_wins(arr: np.ndarray) -> np.ndarray:
    return np.where(arr > 0.5, 1.0, np.where(arr == 0.5, 0.5, 0.0))


def hard_win_rate(p: Sequence[float]) -> float:
    """Hard win rate ``w = (1/n) sum_i [p_i > 0.5] + 0.5 [p_i = 0.5]``.

    ``p_i`` is P(the response wins instruction i), already averaged over both orders. DBG paper
    (seed 000) section 3, "w_J(A) = share of instructions where judge J picks A's response"
    (the paper's implementation); an exact 0.5 is a tie and counts half.
    """
    return float(hard_wins(probability_array(p, "hard_win_rate")).mean())


def soft_win_rate(p: Sequence[float]) -> float:
    """Soft win rate ``w = E_x[P(wins)] = (1/n) sum_i p_i``. DBG paper (seed 000) section 3, soft twin."""
    return float(probability_array(p, "soft_win_rate").mean())


def dbg(
    judge_p_own: Sequence[float],
    gold_p_own: Sequence[float],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """Distance-to-gold bias ``DBG = w_J(own) - w_gold(own)`` in hard and soft form.

    ``judge_p_own[i]``: the judge's P(its own model's response wins instruction i), mean over the
    two orders; ``gold_p_own[i]``: the gold ensemble's mean P(the same response wins). Hard form
    uses :func:`hard_win_rate`, soft form :func:`soft_win_rate`. Positive = self-preference.
    DBG paper (seed 000) section 3 / DESIGN.md section 1. Confidence intervals resample
    instructions jointly for judge and gold (paired bootstrap). All rates are fractions.
    """
    judge = probability_array(judge_p_own, "judge_p_own")
    gold = probability_array(gold_p_own, "gold_p_own")
    if judge.size != gold.size:
        raise InterpError(
            f"dbg: judge_p_own has {judge.size} instructions but gold_p_own has {gold.size}"
        )
    judge_hard, gold_hard = hard_wins(judge), hard_wins(gold)
    hard_diff = judge_hard - gold_hard
    soft_diff = judge - gold
    n = judge.size
    return {
        "dbg_hard": float(hard_diff.mean()),
        "dbg_soft": float(soft_diff.mean()),
        "dbg_ci": bootstrap_ci(
            lambda idx: float(hard_diff[idx].mean()), n, n_boot=n_boot, seed=seed, level=level
        ),
        "dbg_soft_ci": bootstrap_ci(
            lambda idx: float(soft_diff[idx].mean()), n, n_boot=n_boot, seed=seed, level=level
        ),
        "win_rate_own_hard": float(judge_hard.mean()),
        "win_rate_own_soft": float(judge.mean()),
        "gold_win_rate_hard": float(gold_hard.mean()),
        "gold_win_rate_soft": float(gold.mean()),
        "n": int(n),
    }


def position_consistency(p_a_order1: Sequence[float], p_a_order2: Sequence[float]) -> float:
    """Share of pairs whose hard verdict is the same in both orders.

    ``p_a_order1[i]`` = P(response X wins) with X in slot A, ``p_a_order2[i]`` = P(X wins) with X
    in slot B (already mapped to X). Verdict per order: ``sign(p - 0.5)`` (X wins / tie / Y wins);
    consistency = ``(1/n) sum_i [sign(p1_i - 0.5) = sign(p2_i - 0.5)]``. DBG paper (seed 000)
    section 2: every pair is judged in both orders to expose position bias.
    """
    first = probability_array(p_a_order1, "p_a_order1")
    second = probability_array(p_a_order2, "p_a_order2")
    if first.size != second.size:
        raise InterpError(
            f"position_consistency: {first.size} pairs in order 1 but {second.size} in order 2"
        )
    return float(np.mean(np.sign(first - 0.5) == np.sign(second - 0.5)))
