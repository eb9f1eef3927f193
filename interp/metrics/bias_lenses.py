"""Self-preference lenses beside DBG that split the pairs by gold's verdict (pure functions over per-item
probabilities, fractions in [0, 1], bootstrap intervals over instructions).

Inputs per instruction: `p_own`, the judge's P(its own model's answer wins) (mean over both orders), and
`gold_own`, gold's P(the own answer wins). Hard verdicts follow the toolkit's one tie rule (`hard_wins`):
the judge prefers its own answer when h = 1, the other when h = 0; gold prefers the own answer when g = 1,
the other when g = 0; gold ties belong to neither subset.

- Unjustified and legitimate self-preference (Roytburg et al. 2025): the share of pairs where the judge
  prefers its own answer, among pairs where gold prefers the other answer (unjustified) and among pairs
  where gold prefers the own answer (legitimate). `self_preference_rates`.
- The Evaluator Quality Baseline ("Are LLM Evaluators Really Narcissists?", arXiv 2601.22548): the judge's
  rate of voting for its own wrong answer (own answer is gold's loser, judge picks it) against its rate of
  voting for another model's wrong answer (the other answer is gold's loser, judge picks it), and their
  difference. An evaluator that errs as often on others' wrong answers as on its own shows no
  self-preference beyond its quality, whatever its raw own-win rate. `evaluator_quality_baseline`.

With two authors per pair the own-wrong rate is the unjustified rate and the other-wrong rate is one minus
the legitimate rate (ties aside): the same records, read as the two papers read them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from interp.errors import InterpError
from interp.metrics.dbg import hard_wins, probability_array
from interp.metrics.stats import bootstrap_ci


def subset_rate(
    mask: np.ndarray, values: np.ndarray, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> dict:
    """Mean of `values` over the items where `mask` holds, with a bootstrap interval over those items:
    {"value", "n", "ci"}; value and interval None when the subset is empty."""
    idx = np.flatnonzero(np.asarray(mask, dtype=bool))
    if idx.size == 0:
        return {"value": None, "n": 0, "ci": [None, None]}
    sub = np.asarray(values, dtype=float)[idx]
    ci = bootstrap_ci(lambda d: float(sub[d].mean()), idx.size, n_boot=n_boot, seed=seed, level=level)
    return {"value": float(sub.mean()), "n": int(idx.size), "ci": [float(ci[0]), float(ci[1])]}


def _verdicts(p_own: Sequence[float], gold_own: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    h = hard_wins(probability_array(p_own, "p_own"))
    g = hard_wins(probability_array(gold_own, "gold_own"))
    if h.shape != g.shape:
        raise InterpError(f"p_own has {h.size} instructions, gold_own {g.size}")
    return h, g


def self_preference_rates(
    p_own: Sequence[float], gold_own: Sequence[float], *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> dict:
    """Roytburg et al. 2025: {"unjustified", "legitimate"}, each a `subset_rate` of the judge preferring its
    own answer, over the pairs where gold prefers the other answer / the own answer."""
    h, g = _verdicts(p_own, gold_own)
    picks_own = (h == 1.0).astype(float)
    return {
        "unjustified": subset_rate(g == 0.0, picks_own, n_boot=n_boot, seed=seed, level=level),
        "legitimate": subset_rate(g == 1.0, picks_own, n_boot=n_boot, seed=seed, level=level),
    }


def _wrong_vote_rates(h: np.ndarray, g: np.ndarray, idx: np.ndarray) -> tuple[float, float]:
    """(own-wrong rate, other-wrong rate) on the items `idx`; NaN for an empty subset."""
    h, g = h[idx], g[idx]
    own_wrong, other_wrong = g == 0.0, g == 1.0
    own_rate = float(np.mean(h[own_wrong] == 1.0)) if own_wrong.any() else math.nan
    other_rate = float(np.mean(h[other_wrong] == 0.0)) if other_wrong.any() else math.nan
    return own_rate, other_rate


def evaluator_quality_baseline(
    p_own: Sequence[float], gold_own: Sequence[float], *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> dict:
    """arXiv 2601.22548's Evaluator Quality Baseline: {"own_wrong", "other_wrong", "difference"}.

    own_wrong: `subset_rate` of the judge picking its own answer where that answer is gold's loser;
    other_wrong: of the judge picking the other answer where that one is gold's loser; difference:
    own_wrong - other_wrong, with a bootstrap interval over all instructions (both subsets resampled
    together; resamples missing one subset are dropped). Positive: the judge forgives its own errors more
    than others' of the same kind.
    """
    h, g = _verdicts(p_own, gold_own)
    own_wrong = subset_rate(g == 0.0, (h == 1.0).astype(float), n_boot=n_boot, seed=seed, level=level)
    other_wrong = subset_rate(g == 1.0, (h == 0.0).astype(float), n_boot=n_boot, seed=seed, level=level)
    difference: dict = {"value": None, "n": int(h.size), "ci": [None, None]}
    if own_wrong["n"] and other_wrong["n"]:

        def diff(idx: np.ndarray) -> float:
            own_rate, other_rate = _wrong_vote_rates(h, g, idx)
            return own_rate - other_rate

        low, high = bootstrap_ci(diff, h.size, n_boot=n_boot, seed=seed, level=level)
        difference = {"value": own_wrong["value"] - other_wrong["value"], "n": int(h.size), "ci": [low, high]}
    return {"own_wrong": own_wrong, "other_wrong": other_wrong, "difference": difference}
