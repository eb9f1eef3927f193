"""A run's `correctness.jsonl` as `interp metrics run` reads it: a hand-made file whose lines disagree about one
(item, model), or name an item or model the run does not have, is refused in one line naming the line (exit 2,
nothing printed), never read with the last line winning or the stranger dropped unseen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interp.analysis.lenses import read_run_correctness
from interp.errors import InterpError
from interp.run.records import read_judgments


def make_run(folder: Path, correctness: list[dict]) -> Path:
    """Judges x and y over items q0..q3, both orders; the given correctness lines."""
    folder.mkdir()
    rows = [
        {"judge": judge, "item_id": f"q{i}", "order": order, "model_a": a, "model_b": b, "p_a": 0.6, "p_b": 0.4}
        for judge in ("x", "y")
        for i in range(4)
        for order, a, b in (("ab", "x", "y"), ("ba", "y", "x"))
    ]
    (folder / "judgments.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "correctness.jsonl").write_text("".join(json.dumps(row) + "\n" for row in correctness))
    return folder


def full(correct: bool = True) -> list[dict]:
    return [{"item_id": f"q{i}", "model": m, "correct": correct} for i in range(4) for m in ("x", "y")]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"item_id": "q1", "model": "x", "correct": False}, r"line 9: item 'q1', model 'x' graded again"),
        ({"item_id": "q99", "model": "x", "correct": True}, r"line 9: item 'q99' is not one of this run's items"),
        ({"item_id": "q1", "model": "z", "correct": True}, r"line 9: model 'z' is not one of this run's models"),
    ],
)
def test_a_conflicting_or_stranger_line_is_refused(tmp_path, extra, message):
    run = make_run(tmp_path / "run", [*full(), extra])
    with pytest.raises(InterpError, match=message):
        read_run_correctness(run / "correctness.jsonl", read_judgments(run / "judgments.jsonl"))


def test_a_repeated_line_that_agrees_is_read(tmp_path):
    run = make_run(tmp_path / "run", [*full(), {"item_id": "q1", "model": "x", "correct": True}])
    read = read_run_correctness(run / "correctness.jsonl", read_judgments(run / "judgments.jsonl"))
    assert len(read) == 8 and all(read.values())


def test_metrics_run_refuses_it_in_one_line(tmp_path, forked_cli):
    run = make_run(tmp_path / "run", [*full(), {"item_id": "q1", "model": "nobody", "correct": True}])
    result = forked_cli("metrics", "run", run, "--json", "--n-boot", "10")
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr.count("\n") == 1 and "line 9: model 'nobody'" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("grader", "reference", "message"),
    [("choice", "Z", "names no letter"), ("math", "$ $", "is blank"), ("math", "\\boxed{}", "is blank")],
)
def test_a_run_refuses_a_reference_no_answer_could_match(grader, reference, message):
    """A run's grader refuses before any work an item whose reference no answer could match, as `interp grade`
    does; it graded every answer incorrect before."""
    from interp.data import Item
    from interp.run.correctness import check_gradable

    items = [
        Item("q1", "truthfulness", "What?", reference="B"),
        Item("q2", "truthfulness", "Why?", reference=reference),
    ]
    with pytest.raises(InterpError, match=message) as refused:
        check_gradable(items, grader)
    assert "'q2'" in str(refused.value)
    check_gradable(items[:1], grader)  # the good item alone is fine


def test_a_jsonl_line_with_a_key_twice_is_refused():
    """json keeps the last of two equal keys silently (an id read as another item's); refused, naming the line."""
    from interp.storage import jsonl_objects

    lines = ['{"id": "x", "answer": "1"}', '{"id": "x", "reference": 1, "id": "y"}']
    with pytest.raises(InterpError, match="line 2.*'id' appears twice"):
        list(jsonl_objects(lines, where=lambda n: f"line {n}"))
