"""Unjustified/legitimate self-preference and the Evaluator Quality Baseline on hand-made verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from interp.errors import InterpError
from interp.metrics.bias_lenses import evaluator_quality_baseline, self_preference_rates, subset_rate

# gold: own answer wins on items 0-3, loses on 4-8, tie on 9
GOLD = [0.9, 1.0, 0.7, 0.6, 0.1, 0.0, 0.2, 0.3, 0.4, 0.5]
# judge: picks own on 0, 1, 2 (of the 4 legitimate) and on 4, 5 (of the 5 unjustified); 3 and 8 are ties
JUDGE = [0.8, 0.6, 0.9, 0.5, 0.7, 0.55, 0.2, 0.1, 0.5, 0.9]


def test_unjustified_and_legitimate_rates():
    rates = self_preference_rates(JUDGE, GOLD, n_boot=200)
    assert rates["legitimate"]["n"] == 4 and math.isclose(rates["legitimate"]["value"], 3 / 4)
    assert rates["unjustified"]["n"] == 5 and math.isclose(rates["unjustified"]["value"], 2 / 5)
    for rate in rates.values():
        low, high = rate["ci"]
        assert 0.0 <= low <= rate["value"] <= high <= 1.0 and low < high


def test_evaluator_quality_baseline_rates_and_difference():
    eqb = evaluator_quality_baseline(JUDGE, GOLD, n_boot=300, seed=2)
    # own wrong (gold loser is the own answer: items 4-8): judge votes own on 4, 5 -> 2/5
    assert eqb["own_wrong"]["n"] == 5 and math.isclose(eqb["own_wrong"]["value"], 2 / 5)
    # other wrong (gold loser is the other answer: items 0-3): judge votes other on none (3 is a tie) -> 0/4
    assert eqb["other_wrong"]["n"] == 4 and eqb["other_wrong"]["value"] == 0.0
    diff = eqb["difference"]
    assert math.isclose(diff["value"], 2 / 5) and diff["n"] == 10
    assert diff["ci"][0] <= diff["value"] <= diff["ci"][1] and diff["ci"][0] < diff["ci"][1]
    assert evaluator_quality_baseline(JUDGE, GOLD, n_boot=300, seed=2) == eqb  # seeded


def test_a_judge_that_errs_equally_on_both_has_no_excess():
    gold = [1.0] * 6 + [0.0] * 6
    judge = [0.9, 0.9, 0.9, 0.1, 0.1, 0.1] + [0.9, 0.9, 0.9, 0.1, 0.1, 0.1]  # half wrong either way
    eqb = evaluator_quality_baseline(judge, gold, n_boot=200)
    assert eqb["own_wrong"]["value"] == eqb["other_wrong"]["value"] == 0.5 and eqb["difference"]["value"] == 0.0
    rates = self_preference_rates(judge, gold, n_boot=200)
    # two authors per pair: own-wrong is the unjustified rate, other-wrong is 1 - legitimate (no ties here)
    assert rates["unjustified"]["value"] == eqb["own_wrong"]["value"]
    assert 1 - rates["legitimate"]["value"] == eqb["other_wrong"]["value"]


def test_empty_subsets_are_none_not_errors():
    all_own = [1.0, 0.8, 0.6]
    rates = self_preference_rates([0.9, 0.1, 0.9], all_own, n_boot=50)
    assert rates["unjustified"] == {"value": None, "n": 0, "ci": [None, None]}
    eqb = evaluator_quality_baseline([0.9, 0.1, 0.9], all_own, n_boot=50)
    assert eqb["own_wrong"]["value"] is None and eqb["difference"]["value"] is None
    assert subset_rate(np.zeros(3, dtype=bool), np.ones(3))["n"] == 0


def test_bad_input_is_one_error():
    with pytest.raises(InterpError):
        self_preference_rates([0.5, 1.2], [0.5, 0.5])
    with pytest.raises(InterpError):
        evaluator_quality_baseline([0.5, 0.5], [0.5])
