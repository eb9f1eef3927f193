"""The route tested between judges (`interp.metrics.route_test`) on synthetic numbers: the tested judge's own item
variance counts, equal shares are not called, half of the total is needed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from interp.errors import InterpError
from interp.metrics.route_test import RouteModel, route_between_judges, route_call, route_call_rates
from interp.metrics.student_t import student_t_two_sided_p


def _judges(rng, *, k=6, n=90, gap=0.15, pattern=0.6, content=0.6, judge_noise=0.05, spread=0.002):
    """Per-item DBG [stage, item] (before, pattern, content) for a judge `gap` above k controls that hardly move."""
    before = gap + rng.normal(0, 0.05, n)
    judge = np.stack(
        [
            before,
            before - pattern * gap + rng.normal(0, judge_noise, n),
            before - content * gap + rng.normal(0, judge_noise, n),
        ]
    )
    controls = []
    for _ in range(k):
        b = rng.normal(0, 0.05, n)
        shift = rng.normal(0, spread, 2)
        controls.append(np.stack([b, b - shift[0] + rng.normal(0, 0.001, n), b - shift[1] + rng.normal(0, 0.001, n)]))
    return judge, np.stack(controls)


def test_the_judges_own_item_variance_keeps_a_noisy_contrast_from_being_called():
    """Controls that agree to a fraction of a point, a judge whose parts remove the same share but whose item
    noise is large: Crawford-Howell on the contrast alone (no judge variance) rejects; with it, it does not."""
    rng = np.random.default_rng(3)
    judge, controls = _judges(rng, n=30, judge_noise=0.3)
    test = route_between_judges(judge, controls)
    xs = np.asarray(test.contrast_controls)
    k = xs.size
    without = (test.contrast_judge - xs.mean()) / (xs.std(ddof=1) * np.sqrt((k + 1) / k))
    # the judge's item noise alone, read as a contrast between judges: "rejected" at 0.01
    assert float(student_t_two_sided_p(without, k - 1)) < 0.01
    assert test.judge_variance > 100 * xs.var(ddof=1)
    assert test.p_route > 0.05 and abs(test.t) < 3
    route, reason, _ = route_call(1.2 * 0.15 / 0.15, 0.5, 0.001, test, test.p_route)
    assert route == "neither" and "not told apart" in reason


def test_a_clear_pattern_route_is_called_and_recorded():
    rng = np.random.default_rng(0)
    judge, controls = _judges(rng, pattern=0.9, content=0.0)
    test = route_between_judges(judge, controls)
    assert test.direction == "pattern" and test.p_pattern < 1e-3 and test.p_route == pytest.approx(2 * test.p_pattern)
    assert test.pattern_share == pytest.approx(0.9, abs=0.1) and test.content_share == pytest.approx(0.0, abs=0.1)
    assert test.df == 5 and test.difference == pytest.approx(test.pattern_share - test.content_share)
    route, reason, half = route_call(0.9, 0.6, 0.001, test, test.p_route)
    assert (route, half) == ("pattern", True) and "at least half of the total" in reason
    assert set(test.to_dict()) >= {"t", "df", "p_pattern", "p_content", "p_route", "judge_variance"}


def test_a_small_route_share_against_a_negative_one_is_not_pattern():
    """Pattern 0.1 against content -0.1 (told apart between judges) with a total of 0.8: the pattern part carries
    an eighth of the total, not half of it, so the route is neither."""
    rng = np.random.default_rng(1)
    judge, controls = _judges(rng, pattern=0.1, content=-0.1, judge_noise=0.001)
    test = route_between_judges(judge, controls)
    assert test.direction == "pattern" and test.p_route < 0.01
    route, reason, half = route_call(0.8, 0.6, 0.001, test, test.p_route)
    assert route == "neither" and half is False and "less than half" in reason
    # the same contrast with a total it can carry half of is pattern
    assert route_call(0.15, 0.05, 0.001, test, test.p_route)[0] == "pattern"


def test_a_route_needs_a_causal_total_and_an_adjusted_p_at_the_level():
    rng = np.random.default_rng(0)
    judge, controls = _judges(rng, pattern=0.9, content=0.0)
    test = route_between_judges(judge, controls)
    assert route_call(0.9, 0.6, 0.2, test, test.p_route)[0] == "neither"  # total not causal after adjustment
    assert route_call(0.9, -0.1, 0.001, test, test.p_route)[0] == "neither"  # its interval reaches 0
    assert route_call(0.9, 0.6, 0.001, test, 0.06)[0] == "neither"  # the contrast's adjusted p above the level
    assert route_call(None, None, None, test, test.p_route)[0] == "neither"


def test_too_few_controls_give_no_route_test():
    rng = np.random.default_rng(0)
    judge, controls = _judges(rng, k=2)
    test = route_between_judges(judge, controls)
    assert test.p_route is None and "3 control judges" in test.reason
    route, reason, _ = route_call(0.9, 0.6, 0.001, test, None)
    assert route == "neither" and "no between-judge test" in reason
    with pytest.raises(InterpError, match="route_between_judges"):
        route_between_judges(judge[:2], controls)


@pytest.mark.parametrize("spread", [0.01, 0.02, 0.04])
def test_equal_shares_name_each_route_at_most_five_percent_of_the_time(spread):
    """The calibration of docs/causal-test.md, smaller: equal pattern and content shares at between-control
    spreads of 1, 2 and 4 points, 6 controls, 400 draws; the old rule named each route 6.5 to 26.5 %."""
    rates = route_call_rates(6, dataclasses.replace(RouteModel(), spread=spread), n_draws=400, seed=7)
    assert rates.pattern <= 0.05 and rates.content <= 0.05


def test_a_planted_pattern_route_is_found_where_the_controls_agree():
    model = dataclasses.replace(RouteModel(), spread=0.01, pattern=0.8, content=0.0)
    assert route_call_rates(6, model, n_draws=50).pattern > 0.3
