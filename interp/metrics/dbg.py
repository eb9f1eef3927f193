"""The DBG paper's scores (seed 000, sections 2-3): hard and soft win rates, DBG = judge win rate - gold win
rate with paired bootstrap intervals, and position consistency. Pure functions over probabilities."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from interp.errors import InterpError
from interp.formatting import pct
from interp.metrics.stats import bootstrap_ci


def probability_array(p: Sequence[float], name: str) -> np.ndarray:
    """Probabilities as a flat array, refused in one line where empty, non-finite or outside [0, 1]."""
    arr = np.asarray(p, dtype=float).reshape(-1)
    if arr.size == 0:
        raise InterpError(f"{name}: no instructions (empty probability list)")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0) or np.any(arr > 1.0):
        raise InterpError(f"{name}: probabilities must be finite numbers in [0, 1]")
    return arr


TIE_TOLERANCE = 1e-12
"""One tie rule for the lenses over our own judgment records (summary, `interp metrics run`, PLS): P within
1e-12 of 0.5 is a tie. Two computations of the same P (P(own) as P(own wins) or as 1 - P(other wins)) differ
in the last bits; without a tolerance a tie counted as a win in one lens and a loss in the other. Chen et
al.'s soft verdict keeps the paper's exact comparison: their released MATH500 records hold soft scores a
few ulps from 0.5, and the paper's JA and HSPP tables are reproduced only with its own rule."""

MIN_POSITION_CONSISTENCY = 0.5
MIN_LABEL_MASS = 0.5
"""Below either, a judge's DBG carries no information and is flagged: a judge whose verdict agrees across
the two orders on fewer than half of the pairs is ruled by the slot, not the answers (a coin that ignores
position agrees on half), and one that puts under half of its next-token probability on the labels is not
answering the question asked."""


def tie_sign(arr: np.ndarray) -> np.ndarray:
    """-1, 0 (a tie, within TIE_TOLERANCE of 0.5) or +1 per probability."""
    return np.where(np.abs(arr - 0.5) <= TIE_TOLERANCE, 0, np.sign(arr - 0.5)).astype(int)


def p_own_from_first(p_first_model, own: str, first_model: str):
    """P(own's answer wins) from P(the first model's answer wins): the one conversion. `own` is one of the
    run's two models; the same values where it is the first, one minus them where it is the second."""
    return p_first_model if own == first_model else 1 - p_first_model


def hard_wins(arr: np.ndarray) -> np.ndarray:
    """1 for a win, 0.5 for a tie (within TIE_TOLERANCE of 0.5), 0 for a loss."""
    return (tie_sign(np.asarray(arr, dtype=float)) + 1) / 2.0


def judge_reliability(position_consistency: float, mean_label_mass: float) -> list[str]:
    """Why a judge's verdicts are too weak for its DBG to mean anything (empty: no reason found)."""
    reasons = []
    if position_consistency < MIN_POSITION_CONSISTENCY:
        reasons.append(f"position consistency {pct(position_consistency)} < {pct(MIN_POSITION_CONSISTENCY)}")
    return reasons + label_mass_reliability(mean_label_mass)


def label_mass_reliability(mean_label_mass: float) -> list[str]:
    """Why a judge's label probabilities are too weak to read (empty: none): under `MIN_LABEL_MASS` of its
    next-token probability on the labels. The pairwise verdicts' rule (`judge_reliability`) and pointwise scores'
    (the score tokens 1-5, `interp.run.pointwise.pointwise_summary`) alike."""
    if mean_label_mass < MIN_LABEL_MASS:
        return [f"mean label mass {mean_label_mass:.2f} < {MIN_LABEL_MASS:.2f}"]
    return []


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


def dbg_scores(
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
    DBG paper (seed 000) section 3; docs/science.md, DBG. Confidence intervals resample
    instructions jointly for judge and gold (paired bootstrap). All rates are fractions.
    """
    judge = probability_array(judge_p_own, "judge_p_own")
    gold = probability_array(gold_p_own, "gold_p_own")
    if judge.size != gold.size:
        raise InterpError(f"dbg: judge_p_own has {judge.size} instructions but gold_p_own has {gold.size}")
    judge_hard, gold_hard = hard_wins(judge), hard_wins(gold)
    hard_diff = judge_hard - gold_hard
    soft_diff = judge - gold
    n = judge.size
    return {
        "dbg_hard": float(hard_diff.mean()),
        "dbg_soft": float(soft_diff.mean()),
        "dbg_ci": bootstrap_ci(lambda idx: float(hard_diff[idx].mean()), n, n_boot=n_boot, seed=seed, level=level),
        "dbg_soft_ci": bootstrap_ci(lambda idx: float(soft_diff[idx].mean()), n, n_boot=n_boot, seed=seed, level=level),
        "win_rate_own_hard": float(judge_hard.mean()),
        "win_rate_own_soft": float(judge.mean()),
        "gold_win_rate_hard": float(gold_hard.mean()),
        "gold_win_rate_soft": float(gold.mean()),
        "n": int(n),
    }


def swap_verdicts(p_own_order1: Sequence[float], p_own_order2: Sequence[float]) -> np.ndarray:
    """Per item, the verdict over both orders: +1 own, 0 tie, -1 other (DBG paper Figure 8, seed 000 A.1).

    ``p_own_order1[i]`` = P(own wins) with the own answer in slot A, ``p_own_order2[i]`` with it in slot B.
    Each order's verdict is `tie_sign`'s; both agree -> that verdict, one tie -> the decisive one, a verdict
    that changes when the answers swap -> a tie (the paper's rule for judges without probabilities). With
    the integer coding this is ``sign(v1 + v2)``, Chen et al.'s aggregation too.
    """
    first = probability_array(p_own_order1, "p_own_order1")
    second = probability_array(p_own_order2, "p_own_order2")
    if first.size != second.size:
        raise InterpError(f"swap_verdicts: {first.size} items in order 1 but {second.size} in order 2")
    return np.sign(tie_sign(first) + tie_sign(second)).astype(int)


def _no_ties_rate(verdicts: np.ndarray) -> float | None:
    """Own wins over the items decided; None when every item is a tie (no rate: JSON null, never NaN)."""
    decided = int(np.sum(verdicts != 0))
    return float(np.sum(verdicts > 0) / decided) if decided else None


def tie_scores(judge_verdicts: Sequence[int], gold_p_own: Sequence[float]) -> dict:
    """Figure 8 of the DBG paper: the tie share and the win rates with ties left out.

    ``judge_verdicts`` per item (`swap_verdicts`: +1 own, 0 tie, -1 other); ``gold_p_own`` gold's P(own
    wins) per item, a tie where `tie_sign` says so. Returns the judge's and gold's tie share, own-win share
    and own-win rate over the items each decided (None when it decided none), and ``dbg_no_ties``, the
    difference of the two rates (None where either is; the paper: Claude-3.5-Haiku 96.6 % against gold 88.0 %).
    """
    judge = np.asarray(judge_verdicts, dtype=int).reshape(-1)
    gold = tie_sign(probability_array(gold_p_own, "gold_p_own"))
    if judge.size != gold.size:
        raise InterpError(f"tie_scores: {judge.size} judge verdicts but {gold.size} gold verdicts")
    judge_rate, gold_rate = _no_ties_rate(judge), _no_ties_rate(gold)
    return {
        "tie_share": float(np.mean(judge == 0)),
        "own_share": float(np.mean(judge > 0)),
        "win_rate_own_no_ties": judge_rate,
        "gold_tie_share": float(np.mean(gold == 0)),
        "gold_win_rate_no_ties": gold_rate,
        "dbg_no_ties": None if judge_rate is None or gold_rate is None else judge_rate - gold_rate,
    }


def position_consistency(p_a_order1: Sequence[float], p_a_order2: Sequence[float]) -> float:
    """Share of pairs whose hard verdict is the same in both orders.

    ``p_a_order1[i]`` = P(response X wins) with X in slot A, ``p_a_order2[i]`` = P(X wins) with X
    in slot B (already mapped to X). Verdict per order: ``sign(p - 0.5)`` (X wins / tie within TIE_TOLERANCE / Y wins);
    consistency = ``(1/n) sum_i [sign(p1_i - 0.5) = sign(p2_i - 0.5)]``. DBG paper (seed 000)
    section 2: every pair is judged in both orders to expose position bias.
    """
    first = probability_array(p_a_order1, "p_a_order1")
    second = probability_array(p_a_order2, "p_a_order2")
    if first.size != second.size:
        raise InterpError(f"position_consistency: {first.size} pairs in order 1 but {second.size} in order 2")
    return float(np.mean(tie_sign(first) == tie_sign(second)))
