"""The causal test's statistics, checked without a model: per-item effects simulated from a known null and
from known alternatives (thousands of draws), Holm against its definition, Clopper-Pearson against closed
forms."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest

from interp.errors import InterpError
from interp.metrics.causal_test import (
    holm,
    rank_pvalue,
    sign_flip_pvalue,
    sign_flip_pvalues,
)
from interp.metrics.stats import auroc, clopper_pearson

DRAWS = 2000


def kolmogorov_pvalue(samples: np.ndarray) -> float:
    """One-sample KS test against Uniform(0, 1), asymptotic p-value (Kolmogorov's series)."""
    x = np.sort(samples)
    n = x.size
    grid = np.arange(1, n + 1) / n
    d = max(np.max(grid - x), np.max(x - (grid - 1 / n)))
    t = math.sqrt(n) * d
    return float(min(1.0, max(0.0, 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * t * t) for k in range(1, 101)))))


def null_draws(n_items: int, *, seed: int, kind: str = "normal") -> np.ndarray:
    """Per-item contrasts under H0: symmetric about 0 (the judge and the control exchangeable)."""
    rng = np.random.default_rng(seed)
    size = (DRAWS, n_items)
    if kind == "laplace":  # heavy tails, still symmetric
        return rng.laplace(0.0, 0.05, size)
    if kind == "mixture":  # many exact zeros (a judge that never moves) and a few large moves
        return rng.normal(0.0, 0.2, size) * (rng.random(size) < 0.2)
    return rng.normal(0.0, 0.05, size)


@pytest.mark.parametrize("kind", ["normal", "laplace"])
def test_p_values_are_uniform_under_the_null(kind: str) -> None:
    p = sign_flip_pvalues(null_draws(12, seed=1, kind=kind))  # 12 items: exact enumeration
    assert kolmogorov_pvalue(p) > 0.01
    # a shifted alternative is far from uniform: the KS check can fail
    assert kolmogorov_pvalue(sign_flip_pvalues(null_draws(12, seed=1, kind=kind) - 0.03)) < 1e-6


@pytest.mark.parametrize("kind", ["normal", "laplace"])
@pytest.mark.parametrize("n_items", [28, 93])
def test_rejection_rate_under_the_null_is_alpha(kind: str, n_items: int) -> None:
    p = sign_flip_pvalues(null_draws(n_items, seed=n_items, kind=kind), n_flips=2000, seed=7)
    rate = float(np.mean(p <= 0.05))
    assert abs(rate - 0.05) <= 0.02, rate


@pytest.mark.parametrize("n_items", [28, 93])
def test_many_zero_effects_make_the_test_conservative_never_liberal(n_items: int) -> None:
    """A judge that mostly does not move (80 % exact zeros) leaves few informative items: the permutation
    distribution is coarse and the test rejects less than alpha, never more."""
    p = sign_flip_pvalues(null_draws(n_items, seed=n_items, kind="mixture"), n_flips=2000, seed=7)
    assert float(np.mean(p <= 0.05)) <= 0.05 + 0.01


def test_power_rises_with_effect_size() -> None:
    base = null_draws(28, seed=3)
    powers = [
        float(np.mean(sign_flip_pvalues(base - shift, n_flips=2000) <= 0.05)) for shift in (0.0, 0.01, 0.02, 0.04)
    ]
    assert all(later > earlier for earlier, later in zip(powers, powers[1:], strict=False)), powers
    assert powers[-1] > 0.95
    # two-sided: a judge that relies on its own answer LESS than the control is found as often
    assert float(np.mean(sign_flip_pvalues(base + 0.04, n_flips=2000) <= 0.05)) == pytest.approx(powers[-1], abs=0.03)
    # one-sided on request: then the other direction is not evidence
    assert float(np.mean(sign_flip_pvalues(base + 0.04, n_flips=2000, alternative="less") <= 0.05)) < 0.01


def test_one_row_and_many_rows_agree() -> None:
    rows = null_draws(10, seed=4)[:20] - 0.02
    many = sign_flip_pvalues(rows)
    assert np.allclose(many, [sign_flip_pvalue(row) for row in rows])  # exact enumeration both ways


def test_exact_p_value_by_hand() -> None:
    # d = (-1, -1, -1): the all-minus and all-plus sign vectors give |mean| = 1: p = 2/8
    assert sign_flip_pvalue(np.array([-1.0, -1.0, -1.0])) == pytest.approx(2 / 8)
    assert sign_flip_pvalue(np.array([-1.0, -1.0, -1.0]), alternative="less") == pytest.approx(1 / 8)
    # d = (-2, 1): sign vectors give means -0.5, +1.5, -1.5, +0.5: all four as far from 0 as -0.5
    assert sign_flip_pvalue(np.array([-2.0, 1.0])) == pytest.approx(1.0)
    assert sign_flip_pvalue(np.array([-2.0, 1.0]), alternative="less") == pytest.approx(0.5)


def test_monte_carlo_p_value_is_never_zero() -> None:
    p = sign_flip_pvalue(np.full(40, -1.0), n_flips=999)
    assert p == pytest.approx(1 / 1000)


def holm_by_definition(p: list[float], alpha: float) -> list[bool]:
    """Holm's procedure as stated: reject the k-th smallest while p_(k) <= alpha / (m - k + 1)."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    reject = [False] * len(p)
    for rank, i in enumerate(order):
        if p[i] > alpha / (len(p) - rank):
            break
        reject[i] = True
    return reject


@pytest.mark.parametrize("seed", range(20))
def test_holm_matches_its_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = list(rng.random(rng.integers(1, 9)) ** 3)
    adjusted = holm(p)
    for alpha in (0.01, 0.05, 0.1):
        assert [a <= alpha for a in adjusted] == holm_by_definition(p, alpha)
    assert all(a >= raw for a, raw in zip(adjusted, p, strict=False)) and all(a <= 1 for a in adjusted)


def test_holm_worked_example() -> None:
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])


def test_holm_controls_the_familywise_rate() -> None:
    rng = np.random.default_rng(0)
    p = rng.random((DRAWS, 5))  # five true nulls per family
    any_rejected = np.mean([min(holm(list(row))) <= 0.05 for row in p])
    assert any_rejected <= 0.05 + 0.015


def test_clopper_pearson_closed_forms() -> None:
    lo, hi = clopper_pearson(0, 32)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 32), abs=1e-6)
    lo, hi = clopper_pearson(32, 32)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 32), abs=1e-6)
    lo, hi = clopper_pearson(2, 32)
    assert (round(lo, 4), round(hi, 4)) == (0.0077, 0.2081)  # the published table value
    with pytest.raises(InterpError):
        clopper_pearson(3, 2)


def test_rank_pvalue_and_auroc() -> None:
    assert rank_pvalue(-1.0, [0.0] * 19) == pytest.approx(1 / 20) == rank_pvalue(1.0, [0.0] * 19)
    assert rank_pvalue(0.0, [-1.0] * 19) == pytest.approx(1.0)
    assert rank_pvalue(0.5, [-1.0] * 19, alternative="less") == pytest.approx(1.0)
    assert auroc([3, 4], [1, 2]) == 1.0 and auroc([1], [1]) == 0.5 and auroc([1, 2], [3, 4]) == 0.0


def test_intersection_union_test_keeps_its_size_under_the_null() -> None:
    """Chosen heads no different from random ones and no effect beyond the controls: the between-judge decision,
    max(p_CH, p_rank), rejects at most alpha of the time."""
    from interp.metrics.judge_level import between_judge_test

    rng = np.random.default_rng(8)
    rejections = 0
    for _ in range(300):
        effects = rng.normal(0, 0.05, 21)  # the judge, 3 controls... all one family: judge = one more draw
        sets = rng.normal(0, 0.05, 20)  # the chosen set is one of 20 exchangeable sets
        judge = np.full(4, effects[0])
        controls = np.repeat(effects[1:4, None], 4, axis=1)
        test = between_judge_test(judge, controls, p_rank=rank_pvalue(sets[0], sets[1:]), n_flips=200, n_boot=10)
        rejections += bool(test.causal)
    assert rejections / 300 <= 0.05 + 0.025


def test_bad_inputs_are_one_line_errors() -> None:
    with pytest.raises(InterpError, match="finite"):
        sign_flip_pvalue(np.array([0.1, np.nan]))
    with pytest.raises(InterpError, match="random head set"):
        rank_pvalue(0.1, [])


def test_holm_definition_helper_is_itself_right() -> None:
    """Bonferroni-style check on all subsets: the helper never rejects a p above alpha."""
    for combo in combinations([0.001, 0.02, 0.03, 0.2], 3):
        rejected = holm_by_definition(list(combo), 0.05)
        assert all(not r or p <= 0.05 for r, p in zip(rejected, combo, strict=False))
