"""The familiarity lens' statistics on constructed judges: the logistic fit, DBG held at equal familiarity (exact where
the preference is all familiarity, unchanged where it is none), the strata, and an organism against its nulls."""

from __future__ import annotations

import numpy as np
import pytest

from interp.errors import InterpError
from interp.metrics.familiarity import familiarity_lens, line_intercept, logistic_fit, null_comparison


def sigmoid(x):
    return 1 / (1 + np.exp(-np.asarray(x, dtype=float)))


def test_logistic_fit_recovers_soft_outcomes() -> None:
    x = np.linspace(-1.5, 2.0, 40)
    intercept, slope = logistic_fit(x, sigmoid(-0.4 + 1.7 * x))
    assert intercept == pytest.approx(-0.4, abs=1e-4) and slope == pytest.approx(1.7, abs=1e-4)
    flat_intercept, flat_slope = logistic_fit(np.zeros(5), np.full(5, 0.8))
    assert np.isnan(flat_slope) and flat_intercept == pytest.approx(np.log(4))


def familiar_items(n: int = 20):
    """Half the items with equally familiar answers (delta 0), half with the own answer 1 nat/token likelier."""
    delta = np.repeat([0.0, 1.0], n // 2)
    other = np.full(n, -2.0)
    return other + delta, other, delta


def test_a_preference_for_familiar_text_vanishes_at_equal_familiarity() -> None:
    own, other, delta = familiar_items()
    p_own = sigmoid(3 * delta)  # a judge that reads only familiarity: P(own) = 0.5 where delta = 0
    lens = familiarity_lens(own, other, p_own, np.full(delta.size, 0.5), n_strata=2, n_boot=200)
    assert lens["difference"]["value"] == pytest.approx(0.5)
    assert lens["dbg_hard"]["value"] == pytest.approx(0.25)  # 0 on the matched items, +0.5 on the others
    assert lens["dbg_soft"]["value"] == pytest.approx(0.5 * (sigmoid(3.0) - 0.5))
    for key in ("adjusted_dbg_hard", "adjusted_dbg_soft", "matched_dbg_hard", "matched_dbg_soft"):
        assert lens[key]["value"] == pytest.approx(0.0, abs=1e-12), key
    assert lens["matched_n"] == 10 and lens["matched_mean_abs_difference"] == 0.0
    assert lens["p_own_at_zero"]["value"] == pytest.approx(0.5, abs=1e-3)
    assert lens["slope"]["value"] > 2.5  # logit(sigmoid(3)) = 3, the ridge takes a little
    assert [s["dbg_hard"]["value"] for s in lens["strata"]] == pytest.approx([0.0, 0.5])
    assert lens["own_perplexity"] == pytest.approx(np.exp(1.5)) and lens["other_perplexity"] == pytest.approx(np.exp(2))


def test_a_preference_for_its_own_answers_survives_equal_familiarity() -> None:
    own, other, delta = familiar_items()
    lens = familiarity_lens(own, other, np.full(delta.size, 0.8), np.full(delta.size, 0.5), n_boot=200)
    assert lens["dbg_hard"]["value"] == pytest.approx(0.5)
    assert lens["adjusted_dbg_hard"]["value"] == pytest.approx(0.5)
    assert lens["matched_dbg_hard"]["value"] == pytest.approx(0.5)
    assert lens["slope"]["value"] == pytest.approx(0.0, abs=1e-6)
    low, high = lens["dbg_hard"]["ci"]
    assert low <= 0.5 <= high


def test_organism_gap_split_into_familiarity_and_the_rest() -> None:
    _, _, delta = familiar_items()
    organism = (0.2 + 0.4 * delta, delta)  # half its gap over the nulls rides on familiarity
    null = (np.zeros(delta.size), delta)
    out = null_comparison(organism, [null], n_boot=200)
    assert out["gap_hard"]["value"] == pytest.approx(0.4)
    assert out["adjusted_gap_hard"]["value"] == pytest.approx(0.2)
    assert out["explained_share"]["value"] == pytest.approx(0.5)
    assert line_intercept(organism[0], delta) == pytest.approx(0.2)


def test_bad_input_is_one_error() -> None:
    with pytest.raises(InterpError, match="one own and one other"):
        familiarity_lens([-1.0, -2.0], [-1.0], [0.5, 0.5], [0.5, 0.5])
    with pytest.raises(InterpError, match="finite"):
        familiarity_lens([-1.0, float("nan")], [-1.0, -1.0], [0.5, 0.5], [0.5, 0.5])
    with pytest.raises(InterpError, match="same items"):
        null_comparison((np.zeros(3), np.zeros(3)), [(np.zeros(2), np.zeros(2))])
