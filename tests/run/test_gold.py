"""Gold judges: reference-based scores on handcrafted cases, recorded verdicts, aggregation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interp.data import Item, builtin_items
from interp.errors import InterpError
from interp.run.gold import (
    GoldJudge,
    Pair,
    RecordedJudge,
    ReferenceJudge,
    aggregate_gold,
    answer_match_score,
    distinct_trigram_ratio,
    normalize_answer,
    reference_score,
    run_gold,
    token_f1,
)

CAPITAL = Item("fact-x", "truthfulness", "What is the capital of Australia?", "Canberra")
PAINTER = Item("fact-y", "truthfulness", "Who painted the Mona Lisa?", "Leonardo da Vinci", ("Leonardo", "da Vinci"))
TRAIN = Item(
    "trans-x",
    "translation",
    "Der Zug nach München hatte heute Morgen wegen eines technischen Problems fast eine Stunde Verspätung.",
    "The train to Munich was almost an hour late this morning because of a technical problem.",
)
SLEEP = Item(
    "help-x",
    "helpfulness",
    "Give three tips for falling asleep faster.",
    "1. Keep a regular schedule and go to bed at the same time every day. 2. Avoid screens for the last hour "
    "before bed. 3. Keep the bedroom cool, dark and quiet, and skip caffeine after midday.",
)


def test_reference_judge_is_a_gold_judge_named_reference():
    judge = ReferenceJudge()
    assert judge.name == "reference"
    assert isinstance(judge, GoldJudge)


def test_factual_answer_match_prefers_the_correct_answer_in_either_slot():
    judge = ReferenceJudge()
    right = "The capital of Australia is Canberra."
    wrong = "The capital of Australia is Sydney."
    assert judge.p_slot_a([Pair(CAPITAL, right, wrong), Pair(CAPITAL, wrong, right)]) == [1.0, 0.0]
    assert judge.p_slot_a([Pair(CAPITAL, right, "Canberra, of course!")]) == [0.5]  # both match: a tie
    assert reference_score(PAINTER, "It was painted by Leonardo.") == 1.0  # an alias counts
    assert reference_score(PAINTER, "Leonardo da Vinci's most famous work") == 1.0  # possessive still matches
    assert reference_score(CAPITAL, "Canberrae") < 1.0  # whole words only


def test_factual_partial_answer_gets_token_f1():
    score = reference_score(Item("f", "truthfulness", "Q?", "Neil Armstrong"), "It was Neil Young.")
    # normalised response: "it was neil young" (4 tokens); one shared token with "neil armstrong" (2 tokens)
    assert score == pytest.approx(2 * (1 / 4) * (1 / 2) / ((1 / 4) + (1 / 2)))
    assert reference_score(CAPITAL, "I do not know.") == 0.0


def test_answer_normalisation():
    assert normalize_answer("  The Pacific Ocean!  ") == "pacific ocean"
    assert normalize_answer("1,440 minutes") == "1440 minutes"
    assert normalize_answer("H₂O") == "h2o"
    assert answer_match_score("about 1,440 minutes", ["1440"]) == 1.0
    assert answer_match_score("thirty-two degrees", ["32", "thirty-two"]) == 1.0
    assert token_f1(["a", "b"], ["b", "a"]) == 1.0
    assert token_f1([], ["a"]) == 0.0


def test_translation_chrf_prefers_the_faithful_translation():
    judge = ReferenceJudge()
    faithful = "This morning the train to Munich was nearly an hour late due to a technical problem."
    garbled = "Train Munich morning problem hour the technical late was of."
    echoed_source = TRAIN.query
    assert judge.p_slot_a([Pair(TRAIN, faithful, garbled), Pair(TRAIN, garbled, faithful)]) == [1.0, 0.0]
    assert judge.p_slot_a([Pair(TRAIN, echoed_source, faithful)]) == [0.0]
    assert reference_score(TRAIN, TRAIN.reference) == pytest.approx(1.0)
    assert reference_score(TRAIN, "") == 0.0
    assert 0.0 < reference_score(TRAIN, garbled) < reference_score(TRAIN, faithful) < 1.0


def test_helpfulness_penalises_empty_short_and_repetitive_answers():
    judge = ReferenceJudge()
    real = "Go to bed at the same time every day, avoid screens before bed, and keep your bedroom dark and cool."
    assert judge.p_slot_a([Pair(SLEEP, "", real), Pair(SLEEP, real, "Sleep more.")]) == [0.0, 1.0]
    looping = "go to bed " * 20
    assert distinct_trigram_ratio(looping) < 0.1
    assert reference_score(SLEEP, looping) < 0.1 < reference_score(SLEEP, real)
    assert judge.p_slot_a([Pair(SLEEP, looping, real)]) == [0.0]
    assert judge.p_slot_a([Pair(SLEEP, "", "   ")]) == [0.5]
    assert distinct_trigram_ratio(real) == 1.0


def test_reference_judge_on_builtin_items_prefers_the_reference_to_a_wrong_answer():
    judge = ReferenceJudge()
    items = builtin_items()
    wrong = {"helpfulness": "I cannot help with that.", "truthfulness": "I am not sure.", "translation": "Hallo."}
    pairs = [Pair(item, item.reference, wrong[item.task]) for item in items]
    assert judge.p_slot_a(pairs) == [1.0] * len(items)


def test_reference_judge_needs_a_reference():
    with pytest.raises(InterpError, match="'q9' has no reference answer"):
        ReferenceJudge().p_slot_a([Pair(Item("q9", "helpfulness", "Hi?"), "a b c", "d e f")])


# ---- recorded verdicts -----------------------------------------------------------------------------


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((record if isinstance(record, str) else json.dumps(record)) + "\n" for record in records))
    return path


def test_recorded_judge_reads_probabilities_and_winners(tmp_path):
    path = write_jsonl(
        tmp_path / "verdicts.jsonl",
        [
            {"item_id": "fact-x", "response_a": "Canberra", "response_b": "Sydney", "p_a": 0.8},
            "",
            {"item_id": "trans-x", "winner": "B"},
            {"item_id": "help-x", "winner": "A"},
        ],
    )
    judge = RecordedJudge(path)
    assert judge.name == "recorded:verdicts"
    assert RecordedJudge(path, name="gpt-4o").name == "gpt-4o"
    pairs = [
        Pair(CAPITAL, "Canberra", "Sydney"),
        Pair(CAPITAL, "Sydney", "Canberra"),  # the same pair in swapped order
        Pair(TRAIN, "x", "y"),
        Pair(SLEEP, "p", "q"),
    ]
    assert judge.p_slot_a(pairs) == pytest.approx([0.8, 0.2, 0.0, 1.0])
    with pytest.raises(InterpError, match=r"verdicts\.jsonl: no recorded verdict for item 'fact-x'"):
        judge.p_slot_a([Pair(CAPITAL, "Canberra", "Perth")])
    with pytest.raises(InterpError, match="no recorded verdict for item 'fact-y'"):
        judge.p_slot_a([Pair(PAINTER, "a", "b")])


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"winner": "A"}', 'missing field "item_id"'),
        ('{"item_id": "z", "winner": "C"}', '"winner" must be "A", "B" or "tie"'),
        ('{"item_id": "z", "p_a": 1.5}', '"p_a" must be a number between 0 and 1'),
        ('{"item_id": "z"}', 'give exactly one of "p_a"'),
        ('{"item_id": "z", "p_a": 0.5, "winner": "A"}', 'give exactly one of "p_a"'),
        ('{"item_id": "z", "response_a": "x", "p_a": 0.5}', 'give both "response_a" and "response_b"'),
        ('{"item_id": "a", "winner": "B"}', 'duplicate verdict for item "a" \\(first on line 1\\)'),
    ],
)
def test_recorded_judge_malformed_lines_name_file_and_line(tmp_path, bad_line, message):
    path = write_jsonl(
        tmp_path / "rec.jsonl", ['{"item_id": "a", "winner": "A"}', '{"item_id": "b", "p_a": 0.3}', bad_line]
    )
    with pytest.raises(InterpError, match=r"rec\.jsonl:3: " + message):
        RecordedJudge(path)


def test_recorded_judge_missing_or_empty_file(tmp_path):
    with pytest.raises(InterpError, match="no such file"):
        RecordedJudge(tmp_path / "absent.jsonl")
    with pytest.raises(InterpError, match="no recorded verdicts"):
        RecordedJudge(write_jsonl(tmp_path / "empty.jsonl", [""]))


# ---- aggregation -----------------------------------------------------------------------------------


def test_aggregate_gold_is_the_mean_per_pair():
    per_judge = {"reference": [1.0, 0.0, 0.5], "recorded": [0.0, 0.0, 1.0], "model": [0.8, 0.2, 0.9]}
    assert aggregate_gold(per_judge) == pytest.approx([0.6, 0.2 / 3, 0.8])
    assert aggregate_gold({"only": [0.25]}) == [0.25]


def test_aggregate_gold_rejects_bad_input():
    with pytest.raises(InterpError, match="no gold judge"):
        aggregate_gold({})
    with pytest.raises(InterpError, match="number of pairs"):
        aggregate_gold({"a": [1.0, 0.0], "b": [1.0]})
    with pytest.raises(InterpError, match="'b', pair 1"):
        aggregate_gold({"a": [1.0, 0.0], "b": [1.0, float("nan")]})


def test_run_gold_collects_each_judge_by_name(tmp_path):
    recorded = RecordedJudge(write_jsonl(tmp_path / "r.jsonl", [{"item_id": "fact-x", "winner": "B"}]))
    pairs = [Pair(CAPITAL, "Canberra", "Sydney")]
    per_judge = run_gold([ReferenceJudge(), recorded], pairs)
    assert per_judge == {"reference": [1.0], "recorded:r": [0.0]}
    assert aggregate_gold(per_judge) == [0.5]
    with pytest.raises(InterpError, match="two gold judges are named 'reference'"):
        run_gold([ReferenceJudge(), ReferenceJudge()], pairs)

    class ShortJudge:
        name = "short"

        def p_slot_a(self, pairs):
            return []

    with pytest.raises(InterpError, match="returned 0 verdicts for 1 pairs"):
        run_gold([ShortJudge()], pairs)


def test_an_older_gold_file_reads_under_the_new_key(tmp_path):
    """Older runs' gold.jsonl name P(models[0] wins) `p_first` (tests/fixtures/old_run); it reads as `p_first_model`,
    and a record written now keeps its key."""
    from interp.run.store import RunDir, migrate_gold_record

    old_run = Path(__file__).resolve().parents[1] / "fixtures" / "old_run"
    assert RunDir(old_run).read_gold() == {"reference": {"item-00": 0.1, "item-01": 0.5, "item-02": 0.9}}
    now = {"judge": "j", "item_id": "i", "p_first_model": 0.25}
    assert migrate_gold_record(now) == now
