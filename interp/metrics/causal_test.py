"""The permutation machinery of the causal test: sign flips, rank p-values, Holm and the number of random head
sets (Clopper-Pearson and AUROC live with the other intervals in `interp.metrics.stats`).

- `sign_flip_pvalue`: the within-judge test ("changes this judge's verdicts"). Per test item,
  ``delta[i] = P_J(own | I) - P_J(own)`` (mean over both orders); H0: each ``delta[i]`` is as likely to be +x
  as -x; two-sided p = (1 + #{|flipped mean| >= |observed|}) / (1 + n_flips), exact enumeration up to 15
  items. Exact under H0 whatever the distribution of the ``|delta[i]|``; `smallest_flip_p` says when too few
  items cannot reach test_alpha.
- `rank_pvalue`: the head-choice null, the chosen heads' statistic among R random head sets of the same size;
  `min_random_sets` / `check_random_sets` choose R so that the rank p can reach test_alpha after Holm.
- `holm`: the one Holm step-down adjustment (several judges in one command, many sweep points).

A single control judge cannot separate self-preference from judge-to-judge differences (two null organisms of
different seeds differ under the mask as much as the planted one differs from the null: the false-positive
rate of that design was 0.50), so the self-preference decision is made between judges, in
`interp.metrics.judge_level` (Crawford-Howell against k >= 3 control judges, the share of the gap removed)
and `interp.metrics.families` (two families, the multi-bootstrap); docs/causal-test.md states each H0.
"""

from __future__ import annotations

import math
from itertools import product
from typing import Sequence

import numpy as np
from jaxtyping import Float

from interp.errors import InterpError

ALPHA = 0.05
N_FLIPS = 10_000
EXACT_UP_TO = 15  # 2**15 sign vectors: enumerate rather than sample
EXTREME_TOLERANCE = 1e-12  # flipped means equal to the observed one (up to float error) count as "as extreme"


def _as_effects(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise InterpError(f"{name}: need a non-empty 1-D array of per-item effects, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InterpError(f"{name}: per-item effects must be finite numbers (found NaN or inf)")
    return array


def as_extreme(means: np.ndarray, observed, alternative: str) -> np.ndarray:
    """Which permuted means are at least as extreme as the observed one (float ties count)."""
    if alternative == "two-sided":
        return np.abs(means) >= np.abs(observed) - EXTREME_TOLERANCE
    if alternative == "less":
        return means <= observed + EXTREME_TOLERANCE
    if alternative == "greater":
        return means >= observed - EXTREME_TOLERANCE
    raise InterpError(f"alternative {alternative!r}: use 'two-sided', 'less' or 'greater'")


def sign_flip_pvalue(
    d: Float[np.ndarray, " item"], *, n_flips: int = N_FLIPS, seed: int = 0, alternative: str = "two-sided"
) -> float:
    """p-value of mean(d) != 0 (or < 0 with alternative="less") under sign symmetry (exact up to 15 items)."""
    d = _as_effects(d, "sign_flip_pvalue")
    observed = d.mean()
    if d.size <= EXACT_UP_TO:
        signs = np.array(list(product((1.0, -1.0), repeat=d.size)))
        means = signs @ d / d.size
        return float(np.mean(as_extreme(means, observed, alternative)))
    if n_flips < 1:
        raise InterpError("sign_flip_pvalue: n_flips must be at least 1")
    rng = np.random.default_rng(seed)
    count = 0
    for start in range(0, n_flips, 2048):  # chunks keep memory at ~2048 x n floats
        signs = rng.integers(0, 2, size=(min(2048, n_flips - start), d.size)) * 2.0 - 1.0
        count += int(np.sum(as_extreme(signs @ d / d.size, observed, alternative)))
    return (1 + count) / (1 + n_flips)


def smallest_flip_p(n: int, n_flips: int = N_FLIPS) -> float:
    """The smallest two-sided sign-flip p-value `n` items can give: 2 / 2^n when enumerated exactly (the
    observed signs and their mirror are always as extreme), 1 / (1 + n_flips) when sampled."""
    return min(1.0, 2.0 / 2**n) if n <= EXACT_UP_TO else 1 / (1 + n_flips)


def sign_flip_pvalues(
    draws: Float[np.ndarray, "draw item"], *, n_flips: int = 2000, seed: int = 0, alternative: str = "two-sided"
) -> np.ndarray:
    """`sign_flip_pvalue` for many equally long rows at once (simulations and power draws); one shared set of
    random sign vectors, which is valid for each row."""
    draws = np.asarray(draws, dtype=float)
    if draws.ndim != 2 or draws.shape[1] == 0:
        raise InterpError(f"sign_flip_pvalues: need a 2-D array (draws x items), got shape {draws.shape}")
    n = draws.shape[1]
    observed = draws.mean(axis=1)
    if n <= EXACT_UP_TO:
        signs = np.array(list(product((1.0, -1.0), repeat=n)))
        return np.mean(as_extreme(draws @ signs.T / n, observed[:, None], alternative), axis=1)
    rng = np.random.default_rng(seed)
    signs = rng.integers(0, 2, size=(n_flips, n)) * 2.0 - 1.0
    counts = np.sum(as_extreme(draws @ signs.T / n, observed[:, None], alternative), axis=1)
    return (1 + counts) / (1 + n_flips)


def rank_pvalue(observed: float, null_values: Sequence[float], alternative: str = "two-sided") -> float:
    """How unusual `observed` is among values under the null: (1 + #{null at least as extreme}) / (R + 1),
    extreme meaning farther from 0 (two-sided), lower (alternative="less") or higher ("greater")."""
    values = np.asarray(null_values, dtype=float)
    if values.size == 0:
        raise InterpError("rank_pvalue: need at least one null value (a random head set)")
    return float((1 + np.sum(as_extreme(values, observed, alternative))) / (values.size + 1))


def min_random_sets(test_alpha: float = ALPHA, n_tests: int = 1) -> int:
    """The fewest random head sets R whose smallest rank p, 1 / (R + 1), survives Holm over `n_tests` tests at
    `test_alpha`: 1 / (R + 1) <= test_alpha / n_tests, i.e. R = ceil(n_tests / test_alpha) - 1 (19 for one test at 0.05,
    39 for two)."""
    if not 0 < test_alpha < 1:
        raise InterpError(f"test_alpha = {test_alpha} must be in (0, 1)")
    if n_tests < 1:
        raise InterpError(f"n_tests = {n_tests} must be at least 1")
    return math.ceil(n_tests / test_alpha - 1e-9) - 1


def check_random_sets(n_sets: int, *, test_alpha: float = ALPHA, n_tests: int = 1, top_heads: bool = True) -> None:
    """Refuse a design whose head-choice null cannot reject: one InterpError line, else None.

    With heads chosen from data (`top_heads`) the random head sets are the localisation null, so R >= 1 is
    required, and R must be at least `min_random_sets(test_alpha, n_tests)`: below it the decision p (at least
    p_rank >= 1 / (R + 1)) can never reach test_alpha after Holm over the command's `n_tests` tests.
    """
    if not top_heads:
        return
    need = min_random_sets(test_alpha, n_tests)
    over = f" after Holm over {n_tests} tests" if n_tests > 1 else ""
    if n_sets < 1:
        raise InterpError(
            "--top-heads needs random head sets (the null for the heads' choice): use --random-head-sets "
            f"{need} or more (--test-alpha {test_alpha:g}{over})"
        )
    if n_sets < need:
        raise InterpError(
            f"--random-head-sets {n_sets} can never reach --test-alpha {test_alpha:g}{over}: the smallest "
            f"rank p is 1/{n_sets + 1}; "
            f"use --random-head-sets {need} or more"
        )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given; reject where adjusted <= test_alpha)."""
    p = np.asarray(p_values, dtype=float)
    if p.size == 0:
        return []
    if np.any((p < 0) | (p > 1) | ~np.isfinite(p)):
        raise InterpError("holm: p-values must be numbers in [0, 1]")
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted_sorted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(adjusted_sorted, 1.0)
    return adjusted.tolist()


def too_few_items(n: int, n_flips: int, test_alpha: float) -> str:
    """The note that `n` test items cannot reach p <= `test_alpha` in the sign-flip test, with the fewest that can."""
    needed = next(k for k in range(1, EXACT_UP_TO + 2) if smallest_flip_p(k, n_flips) <= test_alpha)
    return (
        f"{n} test items cannot give p <= {test_alpha:g} (smallest attainable p "
        f"{smallest_flip_p(n, n_flips):.3g}): this test cannot reject; use at least {needed}"
    )
