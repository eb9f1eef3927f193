"""SALIERI (seed 003): formulas, the quality-matched pairing, and the planted-bias property."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from interp import metrics as m
from interp.errors import InterpError


def test_origin_salieri_lambda_arithmetic() -> None:
    assert m.origin_bias([4, 5], [3, 4]) == pytest.approx(1.0)
    assert m.origin_bias([4, 5], [3, 4], judge_baseline=0.5, reference_baseline=0.25) == pytest.approx(0.75)
    assert m.salieri_bias([4, 5], [3, 4], [3, 3], [3, 3.5]) == pytest.approx(1.0 - (-0.25))
    # judge sees 1 point where the reference sees 2 -> lambda 0.5
    assert m.detectable_ratio([4, 4], [5, 5], [3, 3], [3, 3]) == pytest.approx(0.5)
    assert np.isnan(m.detectable_ratio([4], [3], [2], [3]))
    assert m.standardized_score([4, 4], [[3, 3], [2, 4, 3]]) == pytest.approx(1.0)
    assert m.standardized_score([4, 2]) == pytest.approx(3.0)


def test_match_is_exact_when_the_pool_has_every_level() -> None:
    target = [5, 3, 4, 4, 1]
    pools = [[1, 2, 3, 4, 5]] * 5
    match = m.match_quality(target, pools)
    assert match.paired_scores.tolist() == target
    assert match.histogram_mismatch == 0 and match.mean_abs_gap == 0.0


def test_rebalancing_trades_per_item_closeness_for_equal_histograms() -> None:
    # Closest per item pairs both items with a 4 ({4: 2} vs target {4: 1, 5: 1}); rebalancing
    # moves item 0 to its 5 (gap 1) so that the histograms agree.
    match = m.match_quality([4, 5], [[4, 5], [4, 3]])
    assert match.paired_scores.tolist() == [5, 4]
    assert match.histogram_mismatch == 0 and match.mean_abs_gap == pytest.approx(1.0)


def test_rebalancing_follows_chains_of_moves() -> None:
    # Surplus in bin 2, deficit in bin 1, and no item in bin 2 can go to 1 directly: item 1 moves
    # 2 -> 3 and item 2 moves 3 -> 1.
    match = m.match_quality([1, 2, 3], [[2], [2, 3], [1, 3]])
    assert match.paired_scores.tolist() == [2, 3, 1]
    assert match.histogram_mismatch == 0


def test_residual_mismatch_is_reported_when_the_pool_cannot_balance() -> None:
    match = m.match_quality([5, 5, 5, 1], [[4, 5], [4], [4, 3], [1, 5]])
    assert match.histogram_mismatch == 2  # two 5s can't be matched: only items 0 and 3 have a 5
    assert match.target_histogram == {1.0: 1, 5.0: 3}
    assert sum(match.paired_histogram.values()) == 4
    assert match.mean_abs_gap == pytest.approx(0.5)


def test_match_is_optimal_against_brute_force() -> None:
    """Lexicographic optimum: fewest unbalanced items, then smallest total per-item gap."""
    rng = np.random.default_rng(11)
    for _ in range(250):
        n = int(rng.integers(1, 6))
        target = rng.integers(1, 6, size=n).astype(float)
        pools = [
            rng.choice(np.arange(1, 6), size=int(rng.integers(1, 4)), replace=False).astype(float) for _ in range(n)
        ]
        best = min(
            (
                int(
                    np.abs(
                        np.bincount(target.astype(int), minlength=6)
                        - np.bincount(np.array(sel, dtype=int), minlength=6)
                    ).sum()
                    // 2
                ),
                float(np.abs(np.array(sel) - target).sum()),
            )
            for sel in itertools.product(*pools)
        )
        match = m.match_quality(target, pools)
        assert match.histogram_mismatch == best[0]
        assert match.mean_abs_gap * n == pytest.approx(best[1])


def test_match_rejects_items_without_pool() -> None:
    with pytest.raises(InterpError, match="item 1"):
        m.match_quality([3, 3], [[3], []])


def simulate(seed: int, bias: float, lam: float, own_quality: tuple[float, ...], n: int = 600):
    """A judge with limited capability (it sees a share ``lam`` of quality around 3) and a planted
    self-bias; its own model is genuinely better (quality skewed high). Scores are integers 1-5,
    dithered so that their expectation is exactly the judge's perceived score. The reference agent
    scores true quality. The unrelated model's pool has one response per quality level."""
    rng = np.random.default_rng(seed)
    quality = rng.choice([1.0, 2.0, 3.0, 4.0, 5.0], size=n, p=own_quality)

    def judge(true_quality: np.ndarray, planted: float) -> np.ndarray:
        perceived = 3.0 + lam * (true_quality - 3.0) + planted
        return np.floor(perceived + rng.random(np.shape(perceived)))

    pool_reference = [np.array([1.0, 2.0, 3.0, 4.0, 5.0]) for _ in range(n)]
    pool_judge = [judge(p, 0.0) for p in pool_reference]
    return judge(quality, bias), quality, pool_judge, pool_reference


@pytest.mark.parametrize(
    "seed, bias, lam, own_quality",
    [
        (0, 0.5, 0.5, (0.02, 0.08, 0.2, 0.35, 0.35)),
        (1, 0.3, 0.3, (0.0, 0.05, 0.15, 0.4, 0.4)),
        (2, 0.0, 0.4, (0.0, 0.0, 0.2, 0.4, 0.4)),
        (3, 0.8, 0.6, (0.0, 0.05, 0.15, 0.3, 0.5)),
        (4, -0.3, 0.5, (0.0, 0.1, 0.1, 0.4, 0.4)),
    ],
)
def test_salieri_recovers_planted_bias_where_origin_does_not(
    seed: int, bias: float, lam: float, own_quality: tuple
) -> None:
    judge_own, reference_own, pool_judge, pool_reference = simulate(seed, bias, lam, own_quality)
    report = m.salieri_report(
        judge_own, reference_own, pool_judge, pool_reference, bootstrap=m.Bootstrap(n_boot=500, seed=seed, level=0.99)
    )
    low, high = report["salieri_ci"]
    assert low <= bias <= high, report
    origin_low, origin_high = report["origin_ci"]
    assert not origin_low <= bias <= origin_high, report
    assert report["histogram_mismatch"] == 0 and report["mean_abs_gap"] == 0.0
    assert report["lambda"] == pytest.approx(lam, abs=0.1)


def test_salieri_report_input_checks() -> None:
    with pytest.raises(InterpError):
        m.salieri_report([], [], [], [])
    with pytest.raises(InterpError):
        m.salieri_report([3], [3], [[3, 4]], [[3]])
