"""SALIERI (seed 003, thesis chapters 3-5): the origin bias score, quality-matched pairing, the SALIERI score,
the detectable ratio lambda, and the reader of pointwise score tables."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from interp.errors import InterpError
from interp.metrics.stats import Bootstrap, bootstrap_ci
from interp.metrics.tables import number, optional_field, read_table_rows


def standardized_score(scores: Sequence[float], norm_model_scores: Sequence[Sequence[float]] | None = None) -> float:
    """SALIERI thesis Eq. 3.3-3.4: ``X'_{a,t} = mean(scores) - (1/n) sum_i mean(norm_i)``.

    ``scores``: agent a's pointwise scores of model t's responses; ``norm_model_scores``: agent a's
    scores of each norm model's responses (one sequence per norm model). Without norm models the
    baseline is 0 (raw mean).
    """
    arr = np.asarray(scores, dtype=float)
    if arr.size == 0:
        raise InterpError("standardized_score: no scores")
    baseline = 0.0
    if norm_model_scores:
        baseline = float(np.mean([np.mean(np.asarray(s, dtype=float)) for s in norm_model_scores]))
    return float(arr.mean()) - baseline


def origin_bias(
    judge_scores_own: Sequence[float],
    reference_scores_own: Sequence[float],
    *,
    judge_baseline: float = 0.0,
    reference_baseline: float = 0.0,
) -> float:
    """The "origin" self-enhancement bias score, SALIERI thesis Eq. 3.1 / 3.7:
    ``beta_hat_{t,t} = X'_{t,t} - X'_{r,t}`` -- the target model's (standardized) mean score of its
    own responses minus the reference agent's. Confounded by quality: in expectation it equals
    ``beta_{t,t} - (1 - lambda_t) X'_{r,t}``. Baselines are the norm-model means of Eq. 3.4."""
    return (float(np.mean(judge_scores_own)) - judge_baseline) - (
        float(np.mean(reference_scores_own)) - reference_baseline
    )


def salieri_bias(
    judge_scores_own: Sequence[float],
    reference_scores_own: Sequence[float],
    judge_scores_paired: Sequence[float],
    reference_scores_paired: Sequence[float],
) -> float:
    """SALIERI score, thesis Eq. 5.1-5.2 (chapter 5.2):
    ``beta = (X'_{t,t} - X'_{r,t}) - (X'_{t,p} - X'_{r,p})``, where p is an unrelated model whose
    responses are quality-matched to t's (:func:`match_quality`). Quality matching makes the
    ``(1 - lambda_t) X'_r`` terms cancel; the norm-model baselines cancel as well."""
    own = float(np.mean(judge_scores_own)) - float(np.mean(reference_scores_own))
    paired = float(np.mean(judge_scores_paired)) - float(np.mean(reference_scores_paired))
    return own - paired


def detectable_ratio(
    judge_scores_a: Sequence[float],
    reference_scores_a: Sequence[float],
    judge_scores_b: Sequence[float],
    reference_scores_b: Sequence[float],
) -> float:
    """lambda, the proportion of response quality the target model can detect (SALIERI thesis
    section 3.3.2): ``lambda_t = (X'_{t,b} - X'_{t,a}) / (X'_{r,b} - X'_{r,a})`` for two response
    sets a, b of different quality -- the judge's score difference over the reference agent's.
    1 = the judge sees all of the quality difference, 0 = none (NaN if the reference sees none)."""
    reference_gap = float(np.mean(reference_scores_b)) - float(np.mean(reference_scores_a))
    if reference_gap == 0.0:
        return math.nan
    return (float(np.mean(judge_scores_b)) - float(np.mean(judge_scores_a))) / reference_gap


@dataclass(frozen=True)
class QualityMatch:
    """Result of :func:`match_quality`.

    ``chosen[i]``: index of the pool response paired with item i; ``paired_scores[i]`` its
    reference score. ``histogram_mismatch``: items whose score bin could not be balanced (half
    the L1 distance between the two bin histograms; 0 = identical histograms).
    ``mean_abs_gap``: mean per-item |paired reference score - target reference score|.
    """

    chosen: np.ndarray
    paired_scores: np.ndarray
    histogram_mismatch: int
    mean_abs_gap: float
    target_histogram: dict[float, int] = field(default_factory=dict)
    paired_histogram: dict[float, int] = field(default_factory=dict)


def match_quality(
    target_reference_scores: Sequence[float],
    pool_reference_scores: Sequence[Sequence[float]],
    *,
    resolution: float = 1.0,
) -> QualityMatch:
    """Quality-matched pairing of SALIERI (thesis section 5.3.1, step 3).

    For each item i pick one response from the unrelated model's pool for that item so that
    (1) the histogram of paired reference scores equals the histogram of the target's reference
    scores as far as the pool allows, and (2) within that, per-item gaps
    ``sum_i |r_pair(i) - r_target(i)|`` are as small as possible ("make the overall score
    distribution as consistent as possible ... strive to make the scores for each question as close
    as possible").

    Algorithm: start from the closest pool response per item (ties -> lower score), then
    rebalance with successive shortest paths on the score bins: an edge s -> s' moves one item
    from bin s to a pool response in bin s' at its extra gap cost; each augmenting path (Bellman-Ford,
    so chains of moves are allowed) shifts one unit from a surplus bin to a deficit bin at least
    cost. Stops when no surplus bin can reach a deficit bin; the rest is reported as
    ``histogram_mismatch``. Scores are binned as ``round(score / resolution)``.
    """
    target, pools = _checked_scores(target_reference_scores, pool_reference_scores, resolution)

    def to_bin(x: np.ndarray | float) -> np.ndarray:
        return np.round(np.asarray(x, dtype=float) / resolution).astype(int)

    bins = np.unique(np.concatenate([to_bin(target)] + [to_bin(p) for p in pools]))
    bin_index = {int(b): k for k, b in enumerate(bins)}
    n_items, n_bins = target.size, len(bins)
    # cost[i, k] = smallest gap for item i using a pool response in bin k; best[i, k] its index.
    cost = np.full((n_items, n_bins), np.inf)
    best = np.full((n_items, n_bins), -1, dtype=int)
    for i, pool in enumerate(pools):
        gaps = np.abs(pool - target[i])
        for j, b in enumerate(to_bin(pool)):
            k = bin_index[int(b)]
            if gaps[j] < cost[i, k] or (gaps[j] == cost[i, k] and pool[j] < pool[best[i, k]]):
                cost[i, k], best[i, k] = gaps[j], j
    current = np.argmin(cost, axis=1)  # closest per item; argmin takes the lowest bin on ties
    target_count = np.bincount([bin_index[int(b)] for b in to_bin(target)], minlength=n_bins)
    while _shift_one_unit(cost, current, target_count):
        pass

    chosen = best[np.arange(n_items), current]
    paired = np.array([pools[i][chosen[i]] for i in range(n_items)])
    final_count = np.bincount(current, minlength=n_bins)
    mismatch = int(np.abs(final_count - target_count).sum() // 2)
    return QualityMatch(
        chosen=chosen,
        paired_scores=paired,
        histogram_mismatch=mismatch,
        mean_abs_gap=float(np.mean(np.abs(paired - target))),
        target_histogram={float(bins[k] * resolution): int(c) for k, c in enumerate(target_count) if c},
        paired_histogram={float(bins[k] * resolution): int(c) for k, c in enumerate(final_count) if c},
    )


def _checked_scores(
    target_reference_scores: Sequence[float], pool_reference_scores: Sequence[Sequence[float]], resolution: float
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The target's scores and each item's pool as arrays, refused in one line where they cannot be matched."""
    if not (isinstance(resolution, (int, float)) and math.isfinite(resolution) and resolution > 0):
        raise InterpError(f"resolution must be a positive number (a score bin's width), got {resolution}")
    target = np.asarray(target_reference_scores, dtype=float)
    if target.size == 0:
        raise InterpError("match_quality: no target items")
    if len(pool_reference_scores) != target.size:
        raise InterpError(f"match_quality: {target.size} target items but {len(pool_reference_scores)} pool lists")
    pools = [np.asarray(p, dtype=float) for p in pool_reference_scores]
    for i, pool in enumerate(pools):
        if pool.size == 0:
            raise InterpError(f"match_quality: item {i} has no pool responses")
    return target, pools


def _shift_one_unit(cost: np.ndarray, current: np.ndarray, target_count: np.ndarray) -> bool:
    """One augmenting path of the rebalancing: move items along the cheapest chain from a surplus bin to a
    deficit bin (`current`, each item's bin, is updated in place). False when no surplus bin reaches a deficit."""
    n_items, n_bins = cost.shape
    surplus = np.bincount(current, minlength=n_bins) - target_count
    if not (surplus > 0).any() or not (surplus < 0).any():
        return False
    # edge_cost[s, s2]: cheapest move of one item from bin s to bin s2; edge_item: which item.
    extra = cost - cost[np.arange(n_items), current][:, None]
    edge_cost = np.full((n_bins, n_bins), np.inf)
    edge_item = np.full((n_bins, n_bins), -1, dtype=int)
    for s in range(n_bins):
        members = np.flatnonzero(current == s)
        if members.size == 0:
            continue
        sub = extra[members]
        pick = np.argmin(sub, axis=0)
        edge_cost[s] = sub[pick, np.arange(n_bins)]
        edge_item[s] = members[pick]
    np.fill_diagonal(edge_cost, np.inf)
    dist = np.where(surplus > 0, 0.0, np.inf)
    parent = np.full(n_bins, -1, dtype=int)
    for _ in range(n_bins - 1):
        relaxed = dist[:, None] + edge_cost
        via = np.argmin(relaxed, axis=0)
        candidate = relaxed[via, np.arange(n_bins)]
        improve = candidate < dist - 1e-12
        if not improve.any():
            break
        dist[improve], parent[improve] = candidate[improve], via[improve]
    reachable_deficits = np.flatnonzero((surplus < 0) & np.isfinite(dist))
    if reachable_deficits.size == 0:
        return False
    sink = reachable_deficits[np.argmin(dist[reachable_deficits])]
    moves = []
    node = sink
    for _ in range(n_bins):  # a shortest path visits each bin at most once
        prev = parent[node]
        if prev < 0:
            break
        moves.append((edge_item[prev, node], node))
        node = prev
    for item, new_bin in moves:
        current[item] = new_bin
    return True


def salieri_report(
    judge_scores_own: Sequence[float],
    reference_scores_own: Sequence[float],
    pool_judge_scores: Sequence[Sequence[float]],
    pool_reference_scores: Sequence[Sequence[float]],
    *,
    baselines: tuple[float, float] = (0.0, 0.0),
    resolution: float = 1.0,
    bootstrap: Bootstrap = Bootstrap(),
) -> dict:
    """Full SALIERI lens for one target model (judge) on one dataset (thesis chapters 3-5).

    Inputs per item i: the judge's and the reference agent's scores of the judge's own response,
    and, for the unrelated model's pool of responses to item i, the judge's and the reference
    agent's scores of each. Returns the origin score (Eq. 3.7), the SALIERI score (Eq. 5.1-5.2)
    with the pool quality-matched by :func:`match_quality`, bootstrap intervals of both
    (items resampled, the pairing kept), lambda (:func:`detectable_ratio`) estimated on the pool --
    per item its lowest-scored (set b) versus highest-scored (set a) response by the reference,
    over items whose pool spans more than one score -- and the matching diagnostics. `baselines`: the judge's and
    the reference agent's baseline scores (subtracted from their scores); `bootstrap`: how the intervals are drawn.
    """
    judge_baseline, reference_baseline = baselines
    n_boot, seed, level = bootstrap.n_boot, bootstrap.seed, bootstrap.level
    judge_own = np.asarray(judge_scores_own, dtype=float)
    ref_own = np.asarray(reference_scores_own, dtype=float)
    n = judge_own.size
    if n == 0:
        raise InterpError("salieri: no items")
    if ref_own.size != n or len(pool_judge_scores) != n or len(pool_reference_scores) != n:
        raise InterpError("salieri: own scores and pools must cover the same items")
    pool_judge = [np.asarray(p, dtype=float) for p in pool_judge_scores]
    pool_ref = [np.asarray(p, dtype=float) for p in pool_reference_scores]
    for i in range(n):
        if pool_judge[i].size != pool_ref[i].size:
            raise InterpError(
                f"salieri: item {i} has {pool_judge[i].size} judge scores but {pool_ref[i].size} reference "
                "scores in the pool"
            )
    match = match_quality(ref_own, pool_ref, resolution=resolution)
    judge_pair = np.array([pool_judge[i][match.chosen[i]] for i in range(n)])
    ref_pair = match.paired_scores
    own_gap = judge_own - ref_own
    pair_gap = judge_pair - ref_pair
    origin = float(own_gap.mean()) - judge_baseline + reference_baseline
    shift = reference_baseline - judge_baseline

    high_j, high_r, low_j, low_r = [], [], [], []
    for i in range(n):
        if pool_ref[i].max() > pool_ref[i].min():
            hi, lo = int(np.argmax(pool_ref[i])), int(np.argmin(pool_ref[i]))
            high_j.append(pool_judge[i][hi])
            high_r.append(pool_ref[i][hi])
            low_j.append(pool_judge[i][lo])
            low_r.append(pool_ref[i][lo])
    lam = detectable_ratio(high_j, high_r, low_j, low_r) if high_j else math.nan

    return {
        "n_items": int(n),
        "origin": origin,
        "origin_ci": bootstrap_ci(
            lambda idx: float(own_gap[idx].mean()) + shift, n, n_boot=n_boot, seed=seed, level=level
        ),
        "salieri": float(own_gap.mean() - pair_gap.mean()),
        "salieri_ci": bootstrap_ci(
            lambda idx: float(own_gap[idx].mean() - pair_gap[idx].mean()), n, n_boot=n_boot, seed=seed, level=level
        ),
        "lambda": lam,
        "judge_mean_own": float(judge_own.mean()),
        "reference_mean_own": float(ref_own.mean()),
        "judge_mean_paired": float(judge_pair.mean()),
        "reference_mean_paired": float(ref_pair.mean()),
        "histogram_mismatch": match.histogram_mismatch,
        "mean_abs_gap": match.mean_abs_gap,
        "target_histogram": match.target_histogram,
        "paired_histogram": match.paired_histogram,
    }


SALIERI_SOURCES = ("self", "pool", "norm")


def read_salieri_scores(path: str | Path) -> dict[str, dict]:
    """Read pointwise 1-5 scores for SALIERI (CSV or JSONL), one row per scored response.

    Columns: ``judge`` (the target model t: it wrote the ``self`` responses and scores every row),
    ``item_id``, ``source`` (``self`` = t's own response, exactly one per judge and item;
    ``pool`` = a response of the unrelated paired model to that item, one or more per item;
    ``norm`` = a norm model's response, optional, for the Eq. 3.4 standardization of the origin
    score), ``judge_score`` (t's score), ``reference_score`` (the reference agent's score);
    optional ``model`` (norm model name; rows without one form a single norm model) and
    ``response_id`` (free text). Returns ``{judge: {"items": [...], "own_judge", "own_reference",
    "pool_judge", "pool_reference", "judge_baseline", "reference_baseline"}}``.
    """
    path = Path(path)
    rows = read_table_rows(path, ("judge", "item_id", "source", "judge_score", "reference_score"))
    own: dict[str, dict[str, tuple[float, float]]] = {}
    pool: dict[str, dict[str, list[tuple[float, float]]]] = {}
    norm: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for lineno, row in rows:
        where = f"{path}, line {lineno}"
        judge, item, source = str(row["judge"]), str(row["item_id"]), str(row["source"]).strip().lower()
        if source not in SALIERI_SOURCES:
            raise InterpError(
                f"{where}: field 'source' must be one of {', '.join(SALIERI_SOURCES)}, got {row['source']!r}"
            )
        scores = (
            number(row["judge_score"], "judge_score", where),
            number(row["reference_score"], "reference_score", where),
        )
        if source == "self":
            if item in own.setdefault(judge, {}):
                raise InterpError(f"{where}: second 'self' row for judge {judge!r}, item {item!r}")
            own[judge][item] = scores
        elif source == "pool":
            pool.setdefault(judge, {}).setdefault(item, []).append(scores)
        else:
            model = str(optional_field(row, "model") or "norm")
            norm.setdefault(judge, {}).setdefault(model, []).append(scores)
    if not own:
        raise InterpError(f"{path}: no 'self' rows")
    out = {}
    for judge, items_scores in sorted(own.items()):
        items = sorted(items_scores)
        no_pool = [i for i in items if i not in pool.get(judge, {})]
        if no_pool:
            raise InterpError(
                f"{path}: judge {judge!r} has no pool responses for item {no_pool[0]!r} ({len(no_pool)} "
                "items without a pool)"
            )
        norms = norm.get(judge, {})
        out[judge] = {
            "items": items,
            "own_judge": [items_scores[i][0] for i in items],
            "own_reference": [items_scores[i][1] for i in items],
            "pool_judge": [[s[0] for s in pool[judge][i]] for i in items],
            "pool_reference": [[s[1] for s in pool[judge][i]] for i in items],
            "judge_baseline": float(np.mean([np.mean([s[0] for s in v]) for v in norms.values()])) if norms else 0.0,
            "reference_baseline": float(np.mean([np.mean([s[1] for s in v]) for v in norms.values()]))
            if norms
            else 0.0,
        }
    return out
