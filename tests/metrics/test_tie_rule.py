"""One P(own) and one tie rule: the run summary and `interp metrics run` agree on the same records."""

from __future__ import annotations

import numpy as np
import pytest

from interp.analysis.lenses import run_self_preference, run_self_records
from interp.data import Item
from interp.metrics.dbg import TIE_TOLERANCE, hard_wins, judge_reliability
from interp.run.records import JudgmentRecord
from interp.run.summary import judge_scores

MODELS = ("first-model", "judge-model")  # the judge is the second model: the summary computes 1 - P(first)


def tied_records(n: int = 300, seed: int = 0):
    """A judge that always picks slot A, with the same label masses in both orders: P(own) is a tie on every
    item, but p_a + p_b (each renormalised from the masses) is 1 only up to rounding, so the summary's
    1 - mean(P(first)) and the lens's mean(P(own)) land a few ulps either side of 0.5."""
    rng = np.random.default_rng(seed)
    masses = [(a, b) for a, b in rng.random((20 * n, 2)) if float(a / (a + b)) + float(b / (a + b)) > 1][:n]
    items = [Item(id=f"i{k:03d}", task="helpfulness", query="q") for k in range(len(masses))]
    records = []
    for item, (a, b) in zip(items, masses, strict=False):
        p_a, p_b = float(a / (a + b)), float(b / (a + b))
        for order, authors in (("ab", MODELS), ("ba", MODELS[::-1])):
            records.append(
                JudgmentRecord(
                    "judge-model", item.id, order, *authors, p_a=p_a, p_b=p_b, label_mass=0.9, top_is_label=True
                )
            )
    return items, records


def test_summary_and_run_lens_count_the_same_ties():
    items, records = tied_records()
    summary = judge_scores(records, items, MODELS, "judge-model", np.full(len(items), 0.5), n_boot=10, seed=0)
    lens = run_self_preference(run_self_records(records), n_boot=10)["judge-model"]
    assert summary["win_rate_own_hard"] == lens["win_rate_own_hard"] == 0.5


def test_the_ties_are_really_decided_by_rounding_without_the_tolerance():
    """The records above do land off 0.5 in the last bits, in opposite directions for the two computations,
    so an exact comparison would make the two lenses disagree (and the test above fail)."""
    items, records = tied_records()
    by = {(r.item_id, r.order): r for r in records}
    summary_p_own = np.array([1 - (by[i.id, "ab"].p_a + by[i.id, "ba"].p_b) / 2 for i in items])
    lens_p_own = np.array([(by[i.id, "ba"].p_a + by[i.id, "ab"].p_b) / 2 for i in items])
    assert len(items) > 50 and np.all(summary_p_own < 0.5) and np.all(lens_p_own > 0.5)
    assert np.all(np.abs(np.concatenate([summary_p_own, lens_p_own]) - 0.5) <= TIE_TOLERANCE)
    assert np.all(hard_wins(summary_p_own) == 0.5) and np.all(hard_wins(lens_p_own) == 0.5)


@pytest.mark.parametrize("consistency,mass,flagged", [(0.0, 0.19, 2), (0.9, 0.3, 1), (0.4, 0.9, 1), (0.8, 0.9, 0)])
def test_weak_judges_are_flagged(consistency, mass, flagged):
    assert len(judge_reliability(consistency, mass)) == flagged


def test_gold_agreement_uses_the_one_tie_rule():
    """A P(own) a few ulps from 0.5 is a tie in gold agreement too (np.sign read it as a pick)."""
    from interp.metrics.behaviour import agreement_per_item

    near = 0.5 + TIE_TOLERANCE / 10
    assert list(agreement_per_item(np.array([near, 0.9, 0.1]), np.array([0.8, 0.8, 0.8]))) == [0.5, 1.0, 0.0]
    assert list(agreement_per_item(np.array([0.9]), np.array([1 - near]))) == [0.5]  # gold's tie, the same rule


def test_figure8_ties_are_verdicts_that_change_when_the_answers_swap():
    from interp.metrics.dbg import swap_verdicts, tie_scores

    # own in slot A, own in slot B: agree own, agree other, flip (tie), one exact tie (the other order decides)
    verdicts = swap_verdicts([0.9, 0.2, 0.8, 0.5], [0.7, 0.1, 0.3, 0.6])
    assert verdicts.tolist() == [1, -1, 0, 1]
    gold = [1.0, 0.0, 0.0, 0.5]  # gold: own, other, other, tie
    scores = tie_scores(verdicts, gold)
    assert scores["tie_share"] == 0.25 and scores["own_share"] == 0.5
    assert scores["win_rate_own_no_ties"] == pytest.approx(2 / 3)  # the paper's 51.8 / (51.8 + 1.8)
    assert scores["gold_tie_share"] == 0.25 and scores["gold_win_rate_no_ties"] == pytest.approx(1 / 3)
    assert scores["dbg_no_ties"] == pytest.approx(1 / 3)
    all_tied = tie_scores(swap_verdicts([0.9, 0.1], [0.1, 0.9]), [1.0, 0.0])
    assert all_tied["tie_share"] == 1.0 and all_tied["win_rate_own_no_ties"] is None and all_tied["dbg_no_ties"] is None


def test_the_summary_counts_ties_with_the_one_tie_rule():
    items, records = tied_records(n=40)
    gold_first = np.full(len(items), 1.0)  # gold: the first model's answer wins every item
    scores = judge_scores(records, items, MODELS, "judge-model", gold_first, n_boot=10, seed=0)
    # always slot A: the verdict flips on every swap, every item is a tie, and gold decided all against the judge
    assert scores["tie_share"] == 1.0 and scores["win_rate_own_no_ties"] is None
    assert scores["gold_tie_share"] == 0.0 and scores["gold_win_rate_no_ties"] == 0.0
