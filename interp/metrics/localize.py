"""Scoring a head ranking against known heads (a planted-heads organism's `planted_heads`): AUROC and
precision at k. Pure functions over {(layer, head): score}; ties in the score count half (AUROC) and are
broken by (layer, head) order (precision at k), so a constant ranking scores 0.5 and no better."""

from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

from interp.errors import InterpError
from interp.metrics.stats import auroc

Head = tuple[int, int]


def _split(scores: Mapping[Head, float], truth: Iterable[Head]) -> tuple[list[float], list[float]]:
    truth = {tuple(h) for h in truth}
    missing = truth - set(scores)
    if missing:
        raise InterpError(f"the ranking has no score for the true head(s) {sorted(missing)}")
    if not truth or len(truth) == len(scores):
        raise InterpError("a ranking is scored against a true set that holds some heads, not all")
    positives = [float(scores[h]) for h in scores if h in truth]
    negatives = [float(scores[h]) for h in scores if h not in truth]
    return positives, negatives


def ranking_auroc(scores: Mapping[Head, float], truth: Iterable[Head]) -> float:
    """P(a true head outscores a random other head), ties half: 1 = every true head ranked first, 0.5 = chance.
    A NaN score ranks last."""
    positives, negatives = _split({h: (-np.inf if not np.isfinite(s) else s) for h, s in scores.items()}, truth)
    return auroc(positives, negatives)


def top_k(scores: Mapping[Head, float], k: int) -> list[Head]:
    """The k heads with the largest score (NaN last; ties by layer, then head)."""
    return sorted(scores, key=lambda h: (-(scores[h] if np.isfinite(scores[h]) else -np.inf), h))[: max(int(k), 0)]


def precision_at_k(scores: Mapping[Head, float], truth: Iterable[Head], k: int | None = None) -> float:
    """Share of the top-k heads that are true heads; k defaults to the number of true heads (|H|)."""
    truth = {tuple(h) for h in truth}
    _split(scores, truth)
    k = len(truth) if k is None else int(k)
    if k < 1:
        raise InterpError(f"precision at k needs k >= 1 (got {k})")
    return sum(h in truth for h in top_k(scores, k)) / k
