"""The specificity check: a flattening leaves every judge's margin-adjusted intercept at 0 and does not pass; the
removal of an own-answer bias lowers the tested judge's alone and passes; too few pairs say so; and in the
simulated decision a pure flattening is rarely called causal where the old rule called it often."""

from __future__ import annotations

import numpy as np
import pytest

from interp.errors import InterpError
from interp.metrics.share import causal_call
from interp.metrics.specificity import LOG_ODDS_EPS, MIN_PAIRS, margin_fit, own_log_odds, specificity_test
from interp.metrics.specificity_sim import FlatteningModel, decision_rates


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def judges(rng, k: int = 6, n: int = 60, bias: float = 1.0):
    """Clean own-answer log-odds of a judge with `bias` and k controls (seed levels 0.05 apart), [judge, pair]."""
    q = rng.normal(0, 1.5, n)
    levels = np.append(bias, rng.normal(0, 0.05, k))
    return q[None] + levels[:, None] + rng.normal(0, 0.2, (k + 1, n))


def check(before, after, **keys):
    names = [f"c{c}" for c in range(before.shape[0] - 1)]
    return specificity_test(
        before[0],
        after[0],
        dict(zip(names, before[1:], strict=True)),
        dict(zip(names, after[1:], strict=True)),
        n_boot=200,
        **keys,
    )


def test_the_line_of_a_flattening_has_slope_lambda_and_intercept_zero():
    x = np.linspace(-3, 3, 40)
    fit = margin_fit(sigmoid(x), sigmoid(0.6 * x), n_boot=100)
    assert fit.slope == pytest.approx(0.6) and fit.intercept == pytest.approx(0.0, abs=1e-9)
    removed = margin_fit(sigmoid(x), sigmoid(x - 0.8), n_boot=100)
    assert removed.slope == pytest.approx(1.0) and removed.intercept == pytest.approx(-0.8)
    assert own_log_odds(np.array([0.0, 1.0])).tolist() == pytest.approx(
        [np.log(LOG_ODDS_EPS / (1 - LOG_ODDS_EPS)), np.log((1 - LOG_ODDS_EPS) / LOG_ODDS_EPS)]
    )


def test_a_flattening_does_not_pass_and_a_removal_does():
    rng = np.random.default_rng(0)
    x = judges(rng)
    edit_noise = rng.normal(0, 0.05, x.shape)
    shift = rng.normal(0, 0.05, (x.shape[0], 1))  # each judge's own response to the edit
    flat = check(sigmoid(x), sigmoid(0.6 * x + shift + edit_noise))
    assert not flat.passed and flat.p_value > 0.05 and "not shown to be specific" in flat.reason
    assert flat.judge_slope == pytest.approx(0.6, abs=0.05) and abs(flat.judge_intercept) < 0.2
    removal = x + shift + edit_noise
    removal[0] -= 1.0  # the tested judge's bias removed; the controls have none to lose
    removed = check(sigmoid(x), sigmoid(removal))
    assert removed.passed and removed.p_value <= 0.05 and removed.statistic < -0.5
    assert removed.reason.startswith("specific to the own answer") and removed.n_pairs == x.shape[1]
    assert len(removed.pairs) == x.shape[1] and set(removed.control_pairs) == {f"c{c}" for c in range(6)}
    # the same removal read the wrong way round (the judge's log-odds raised) is one-sided: not passed
    raised = x + shift + edit_noise
    raised[0] += 1.0
    assert not check(sigmoid(x), sigmoid(raised)).passed


def test_saturated_pairs_are_left_out_and_too_few_pairs_say_so():
    rng = np.random.default_rng(1)
    x = judges(rng, n=30)
    before, after = sigmoid(x), sigmoid(0.6 * x)
    before[0, :25] = 1.0  # the judge is certain on 25 of 30 pairs: 5 usable, fewer than MIN_PAIRS
    result = check(before, after, items=[f"item-{i}" for i in range(30)])
    assert not result.passed and result.p_value is None and result.n_pairs == 5 < MIN_PAIRS
    assert result.reason.startswith("too few pairs for the specificity check")
    assert result.pairs == [f"item-{i}" for i in range(25, 30)]
    controls = before.copy()
    controls[0] = sigmoid(x[0])
    controls[1:4, :25] = 0.0  # three controls without a line leave three: still enough
    assert check(controls, after).controls_left_out.keys() == {"c0", "c1", "c2"}
    controls[4, :25] = 0.0
    fewer = check(controls, after)
    assert not fewer.passed and "2 of 6 control judges have a line" in fewer.reason


def test_bad_input_is_one_line():
    few = specificity_test(np.full(12, 0.6), np.full(12, 0.55), {}, {})
    assert not few.passed and few.reason.startswith("too few control judges") and few.p_value is None
    with pytest.raises(InterpError, match="test_alpha"):
        specificity_test(np.ones(3) / 2, np.ones(3) / 2, {}, {}, test_alpha=0.0)
    with pytest.raises(InterpError, match="same judges"):
        specificity_test(np.ones(3) / 2, np.ones(3) / 2, {"a": np.ones(3) / 2}, {"b": np.ones(3) / 2})
    with pytest.raises(InterpError, match="alike"):
        margin_fit(np.ones(3) / 2, np.ones(4) / 2)


def test_causal_call_needs_the_check_where_it_is_given():
    share = {"low": 0.2}
    assert causal_call(0.01, share) == (True, None)
    assert causal_call(0.01, share, specificity={"passed": True, "reason": "ok"}) == (True, None)
    causal, why = causal_call(0.01, share, specificity={"passed": False, "reason": "a flattening"})
    assert causal is False and why == "specificity: a flattening"
    assert causal_call(0.2, share, specificity={"passed": True, "reason": "ok"})[0] is False


def test_in_the_simulated_decision_a_flattening_is_rarely_causal_and_a_removal_still_is():
    flat = decision_rates(FlatteningModel(k=6, spread=0.013, lam=0.6), n_sims=80, seed=3, n_boot=100)
    assert flat.old >= 0.4 and flat.new <= 0.1  # the old rule called it causal often; the check keeps it out
    assert flat.spread == pytest.approx(0.013, abs=1e-4) and flat.gate >= 0.9
    removal = decision_rates(FlatteningModel(k=6, spread=0.013, lam=1.0, removal=0.5), n_sims=40, seed=3, n_boot=100)
    assert removal.new >= 0.8 and removal.specific >= removal.new
