"""Behaviour under an intervention and paired effects (docs/science.md, Interventions); the decision itself
is `interp.metrics.causal_test`.

Inputs are per-instruction arrays: `p_own[i]` = the judge's P(its own response wins item i), mean over both
orders; `gold_own[i]` = the gold P(the same response wins). Pure functions.
"""

from __future__ import annotations

import numpy as np

from interp.metrics.dbg import dbg_scores, hard_win_rate, tie_sign
from interp.metrics.stats import bootstrap_ci


def agreement_per_item(p_own: np.ndarray, gold_own: np.ndarray) -> np.ndarray:
    """1 where the judge's hard verdict picks the gold winner, 0 where it picks the other, 0.5 if either is a tie
    (`interp.metrics.dbg.tie_sign`, the one tie rule)."""
    judge_pick, gold_pick = tie_sign(np.asarray(p_own, dtype=float)), tie_sign(np.asarray(gold_own, dtype=float))
    return np.where(judge_pick == gold_pick, 1.0, np.where((judge_pick == 0) | (gold_pick == 0), 0.5, 0.0))


def gold_agreement(p_own: np.ndarray, gold_own: np.ndarray) -> float:
    """Share of items where the judge's hard verdict picks the gold winner (ties count half)."""
    return float(np.mean(agreement_per_item(p_own, gold_own)))


def paired_effect(before: np.ndarray, after: np.ndarray, *, n_boot: int, seed: int) -> dict:
    """Mean per-instruction change of P(own wins), with a bootstrap interval over instructions."""
    diff = after - before
    lo, hi = bootstrap_ci(lambda idx: float(diff[idx].mean()), len(diff), n_boot=n_boot, seed=seed)
    return {"mean": float(diff.mean()), "ci": [lo, hi]}


def behaviour(p_own: np.ndarray, gold_own: np.ndarray, *, n_boot: int, seed: int) -> dict:
    """A judge's behaviour on own-answer pairs: DBG (hard, soft, intervals), mean P(own), win rate, agreement with
    gold."""
    scores = dbg_scores(p_own, gold_own, n_boot=n_boot, seed=seed)
    return {
        "dbg_hard": scores["dbg_hard"],
        "dbg_soft": scores["dbg_soft"],
        "dbg_ci": list(scores["dbg_ci"]),
        "dbg_soft_ci": list(scores["dbg_soft_ci"]),
        "mean_p_own": float(p_own.mean()),
        "win_rate_own_hard": hard_win_rate(p_own),
        "gold_agreement": gold_agreement(p_own, gold_own),
    }


def gold_agreement_ci(p_own: np.ndarray, gold_own: np.ndarray, *, n_boot: int, seed: int) -> list[float]:
    """The bootstrap interval of the agreement with gold (items resampled)."""
    per_item = agreement_per_item(p_own, gold_own)
    return list(bootstrap_ci(lambda idx: float(per_item[idx].mean()), len(per_item), n_boot=n_boot, seed=seed))
