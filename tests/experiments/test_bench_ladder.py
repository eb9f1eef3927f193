"""The explain ladder's cost bench (experiments/bench_ladder.py) in its pure parts: the count of a ladder's
judgments from `interp explain`'s defaults, the top-8 figure over a test's group, the derived minutes and the
printed lines. Nothing is loaded or judged; no time is asserted."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "experiments" / "bench_ladder.py"
BENCH = runpy.run_path(str(SCRIPT))
ladder_count = BENCH["ladder_count"]
default_ladder = BENCH["default_ladder"]
derived = BENCH["derived"]
figure_lines = BENCH["figure_lines"]

HEAD_METHODS = {"attention": "attention", "atp": "attention", "atp-output": "head_output"}
FIVE = ("attention", "atp", "atp-output", "atp-mlp", "direction")


def test_the_default_ladder_is_29_tests_of_7_judges_on_90_items_in_both_orders():
    """5 chosen candidates, 3 random sets (attention, head_output, MLP), 3 head sets x (4 + 3) route parts; each
    test the judge and 6 controls on the 90 test items of 150 (selection share 0.4), both orders."""
    ladder = default_ladder()
    assert ladder["ladder_test_items"] == 90
    assert ladder["ladder_candidate_tests"] == 8
    assert ladder["ladder_route_tests"] == 21
    assert ladder["ladder_judgments_per_test"] == 7 * 90 * 2
    assert ladder["ladder_judgments"] == 29 * 1260 == 36540


def test_the_count_follows_the_methods_random_sets_and_routes():
    common = dict(head_methods=HEAD_METHODS, route_parts=4, alt_route_parts=3)
    assert ladder_count(6, 90, methods=FIVE, random_sets=1, **common)["ladder_tests"] == 29
    # no routes: the candidates alone
    assert ladder_count(6, 90, methods=FIVE, random_sets=1, routes=False, **common)["ladder_tests"] == 8
    # two random sets: three more tests
    assert ladder_count(6, 90, methods=FIVE, random_sets=2, **common)["ladder_tests"] == 32
    # attention alone: its candidate, one random attention set, one head set's 7 route parts
    only = ladder_count(0, 10, methods=("attention",), random_sets=1, **common)
    assert only == {
        "ladder_candidate_tests": 2,
        "ladder_route_tests": 7,
        "ladder_tests": 9,
        "ladder_judgments_per_test": 20,
        "ladder_judgments": 180,
    }
    # direction alone: no head site, no MLP set, no route
    assert ladder_count(6, 90, methods=("direction",), random_sets=1, **common)["ladder_tests"] == 1


def test_top8_is_the_groups_mean_and_the_minutes_are_judgments_times_seconds():
    ladder = {"ladder_judgments": 600}
    figures = derived({"full": 0.4, "top8_first": 0.4, "top8_reader": 0.1}, ladder, controls=2)
    assert abs(figures["seconds_per_judgment_top8"] - 0.2) < 1e-12  # (0.4 + 2 x 0.1) / 3
    assert abs(figures["top8_speedup_ratio"] - 2.0) < 1e-12
    assert abs(figures["ladder_minutes_full"] - 4.0) < 1e-12  # 600 x 0.4 / 60
    assert abs(figures["ladder_minutes_top8"] - 2.0) < 1e-12
    alone = derived({"full": 0.4, "top8_first": 0.5, "top8_reader": 0.1}, ladder, controls=0)
    assert alone["seconds_per_judgment_top8"] == 0.5  # no control: the first judge pays the trunk alone
    assert "final_cached_speedup_ratio" not in alone  # not timed: not printed


def test_the_cached_figures_are_full_over_cached_and_the_ladder_at_the_cached_rate():
    seconds = {"full": 0.4, "top8_first": 0.4, "top8_reader": 0.1, "final_cached": 0.02}
    figures = derived(seconds, {"ladder_judgments": 600}, controls=2)
    assert figures["seconds_per_judgment_final_cached"] == 0.02
    assert abs(figures["final_cached_speedup_ratio"] - 20.0) < 1e-9
    assert abs(figures["ladder_minutes_final"] - 0.2) < 1e-12  # 600 x 0.02 / 60


def test_each_figure_is_one_name_value_line():
    lines = figure_lines({"model": "m", "items": 16, "seconds_per_judgment_full": 0.123456, "top8_speedup_ratio": 2.5})
    assert lines == ["model: m", "items: 16", "seconds_per_judgment_full: 0.1235", "top8_speedup_ratio: 2.500"]
    assert all(re.fullmatch(r"[a-z0-9_]+: \S+", line) for line in lines)
