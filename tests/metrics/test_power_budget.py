"""The multiplicity plan of an explanation (`interp.metrics.power_budget`) on synthetic p-values: Holm across the
primaries only, fixed-sequence gate-keeping behind them, identical tests once, random sets outside; the removal
p one-sided; and the whole decision's simulation (`interp.metrics.decision_power`) on a few draws."""

from __future__ import annotations

import pytest

from interp.errors import InterpError
from interp.metrics.causal_test import holm
from interp.metrics.decision_power import DecisionModel, decision_rates
from interp.metrics.power_budget import graphical_adjusted, multiplicity_plan, removal_p
from interp.metrics.student_t import student_t_two_sided_p


def _plan(sequences, **kw):
    return multiplicity_plan(
        {m: [(key, p, key) for key, p in chain] for m, chain in sequences.items()}, test_alpha=0.05, **kw
    )


def test_primaries_alone_are_holm():
    p = [0.01, 0.04, 0.03, 0.2, 0.005]
    plan = _plan({f"m{i}": [(f"c{i}", x)] for i, x in enumerate(p)})
    assert [h.p_adjusted for h in plan.hypotheses] == pytest.approx(holm(p))
    assert all(h.role == "primary" for h in plan.hypotheses)


def test_gate_kept_tests_wait_for_their_primary_in_a_fixed_sequence():
    """A route test with a tiny raw p behind a primary that fails is never rejected before it; behind one that
    passes, it is tested at the level its primary passed with, and a failing second test stops the sequence."""
    plan = _plan({"a": [("A", 0.3), ("A-route", 1e-6)], "b": [("B", 0.001), ("B-total", 0.004), ("B-contrast", 0.2)]})
    adjusted = {h.key: h.p_adjusted for h in plan.hypotheses}
    assert adjusted["A-route"] >= adjusted["A"] > 0.05  # gate-kept: never below its primary's
    assert adjusted["B"] == pytest.approx(0.002) and adjusted["B-total"] == pytest.approx(0.008)
    assert adjusted["B-contrast"] > 0.05
    roles = {h.key: h.role for h in plan.hypotheses}
    assert roles["B"] == "primary" and roles["B-total"] == roles["B-contrast"] == "gate-kept"
    # once B's whole sequence is rejected, its level passes on to A's: with B-contrast rejected too, A gains
    done = _plan({"a": [("A", 0.04)], "b": [("B", 0.001), ("B-total", 0.004)]})
    assert {h.key: h.p_adjusted for h in done.hypotheses}["A"] == pytest.approx(0.04)


def test_an_identical_set_chosen_by_two_methods_is_tested_once_and_counted_once():
    plan = _plan({"attention": [("same", 0.02)], "atp": [("same", 0.02)], "atp-output": [("other", 0.5)]})
    (same,) = [h for h in plan.hypotheses if h.key == "same"]
    assert same.methods == ["attention", "atp"] and len(plan.hypotheses) == 2
    assert same.p_adjusted == pytest.approx(holm([0.02, 0.5])[0])  # Holm over two distinct tests, not three
    with pytest.raises(InterpError, match="two p-values"):
        _plan({"a": [("same", 0.02)], "b": [("same", 0.03)]})


def test_random_sets_stay_outside_the_correction():
    primaries = {"a": [("A", 0.02)], "b": [("B", 0.03)]}
    alone = _plan(primaries)
    with_randoms = _plan(primaries, negative_controls=["random 0", "random 1", "random 2"])
    assert [h.p_adjusted for h in alone.hypotheses] == [h.p_adjusted for h in with_randoms.hypotheses]
    assert with_randoms.negative_controls == ["random 0", "random 1", "random 2"]
    assert {h.key for h in with_randoms.hypotheses} == {"A", "B"}


def test_a_test_not_run_is_never_rejected():
    plan = _plan({"a": [("A", None)], "b": [("B", 0.01)]})
    adjusted = {h.key: h.p_adjusted for h in plan.hypotheses}
    assert adjusted["A"] is None and adjusted["B"] == pytest.approx(0.02)


def test_graphical_refuses_weights_that_spend_more_than_the_level():
    with pytest.raises(InterpError):
        graphical_adjusted([0.1, 0.2], [0.7, 0.7], [[0, 1], [1, 0]])


def test_the_removal_p_is_one_sided_half_the_two_sided_in_the_removal_direction():
    t, df = -2.3, 5
    two = float(student_t_two_sided_p(t, df))
    assert removal_p(t, df, two) == pytest.approx(two / 2)
    assert removal_p(-t, df, two) == pytest.approx(1 - two / 2)  # an edit that widens the gap: no removal
    assert removal_p(None, 5, 1.0) == 1.0 and removal_p(t, df, None) is None


def test_the_whole_decision_finds_a_large_effect_and_holds_its_level_without_one():
    large = decision_rates(6, DecisionModel(effect=0.15, spread=0.004), n_draws=30, seed=1)
    assert large.rates["new"] >= 0.8 and large.rates["new"] >= large.rates["old"]
    none = decision_rates(6, DecisionModel(effect=0.0, spread=0.004), n_draws=60, seed=2)
    assert none.rates["new_false"] <= 0.15 and none.rates["new"] <= 0.15


def test_the_whole_decision_needs_the_specificity_check():
    """A call with the check is a call without it that also passed the check: never more power or more false
    positives; a planted removal (a shift of the own-answer log-odds) passes the check most of the time."""
    rates = decision_rates(6, DecisionModel(effect=0.16, spread=0.02), n_draws=30, seed=4).rates
    assert rates["new"] <= rates["new_no_specificity"] and rates["new"] <= rates["specific"]
    assert rates["specific"] >= 0.6 and rates["new"] >= 0.5
    assert rates["new_false"] <= rates["new_no_specificity_false"]


def test_the_share_interval_level_follows_the_test_level():
    """`--test-alpha 0.01` gives the share a 99 % interval (wider than the 95 % one at 0.05), through the judge-level
    test every causal test runs."""
    import numpy as np

    from interp.causal.judge_test import JudgeTestOptions, judge_level_test
    from interp.metrics.share import share_level, simulate_share_judges

    jb, ja, cb, ca = simulate_share_judges(np.random.default_rng(0), 6)
    gold = np.zeros_like(jb)
    shares = {}
    for alpha in (0.05, 0.01):
        options = JudgeTestOptions(test_alpha=alpha, n_flips=200, n_boot=200, seed=0)
        _, gap = judge_level_test(jb, ja, gold, gold, cb, ca, options)
        shares[alpha] = gap.share_removed
    assert shares[0.05].level == pytest.approx(0.95) and shares[0.01].level == pytest.approx(0.99)
    assert shares[0.01].low < shares[0.05].low and shares[0.01].high > shares[0.05].high
    assert share_level(0.1) == pytest.approx(0.9)
    with pytest.raises(InterpError):
        share_level(1.5)
