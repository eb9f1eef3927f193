"""A run with `grader` set grades its answers into correctness.jsonl, and `interp metrics run` then gives Chen et
al.'s SPR/JA/LSPR/HSPP from the run alone."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from interp.analysis.lenses import run_lenses, run_self_records
from interp.config import RunConfig, run_config_from_dict
from interp.core.models import load_model
from interp.data import Item, load_items
from interp.errors import InterpError
from interp.grading import final_answer
from interp.metrics import chen2025_judge_table
from interp.run.pipeline import run_dbg
from interp.run.responses import Decoding, generate_responses
from interp.run.store import RunDir
from interp.storage import read_jsonl

N = 6


@pytest.fixture(scope="module")
def graded_run(tmp_path_factory, tiny_llama_dir) -> tuple[Path, dict]:
    """The tiny judge answers N sums; its answer is the reference on even items (correct) and not on odd ones.
    The other author's answers are imported: right on items 0-2, wrong on 3-5. D_diff: items 1, 2 (judge wrong,
    other right) and 4 (judge right, other wrong)."""
    root = tmp_path_factory.mktemp("graded")
    judge = str(tiny_llama_dir)
    items = [Item(f"m{i}", "helpfulness", f"What is {i} + {i}?") for i in range(N)]
    decoding = Decoding(max_words=10, max_new_tokens=6, batch_size=4)
    own = {
        r.item_id: r.text for r in generate_responses(load_model(judge), items, decoding, name=judge, progress=False)
    }
    references = {item.id: (final_answer(own[item.id]) if i % 2 == 0 else "12345") for i, item in enumerate(items)}
    data = root / "items.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": i.id, "task": i.task, "query": i.query, "reference": references[i.id]}) + "\n"
            for i in items
        )
    )
    answers = root / "key.jsonl"
    answers.write_text(
        "".join(
            json.dumps({"item_id": i.id, "text": f"The answer is \\boxed{{{references[i.id] if n < 3 else 'no'}}}"})
            + "\n"
            for n, i in enumerate(items)
        )
    )
    config = RunConfig(
        name="graded",
        data=f"jsonl:{data}",
        n=N,
        models=(judge, "key"),
        judges=[judge],
        imports={"key": str(answers)},
        grader="math",
        attention="none",
        max_new_tokens=6,
        max_words=10,
        batch_size=4,
        n_boot=20,
        empty_answers="judge",
    )
    run_dbg(config, root / "run", progress=False)
    return root / "run", {"judge": judge, "references": references, "own": own}


def test_every_answer_with_a_reference_is_graded_into_correctness_jsonl(graded_run):
    out, facts = graded_run
    lines = {(row["item_id"], row["model"]): row for row in read_jsonl(RunDir(out).correctness)}
    assert len(lines) == 2 * N and all(row["grader"] == "math" and row["reason"] for row in lines.values())
    judge = facts["judge"]
    assert [lines[(f"m{i}", judge)]["correct"] for i in range(N)] == [i % 2 == 0 for i in range(N)]
    assert [lines[(f"m{i}", "key")]["correct"] for i in range(N)] == [True, True, True, False, False, False]
    summary = RunDir(out).read_summary()
    counts = summary.correctness.authors
    assert counts[judge].to_json() == {"graded": N, "correct": 3} == counts["key"].to_json()
    assert summary.correctness.no_target == 0


def test_metrics_run_gives_chen_metrics_from_the_run_alone(graded_run, forked_cli):
    out, facts = graded_run
    chen = run_lenses(out, n_boot=20)["chen2025"]
    judge = facts["judge"]
    assert chen is not None and set(chen) == {judge}
    row = chen[judge]
    assert {"SPR", "JA", "LSPR", "HSPP"} <= set(row)
    # the same table from the flags the fixture planted (not from correctness.jsonl)
    truth = {(f"m{i}", judge): i % 2 == 0 for i in range(N)} | {(f"m{i}", "key"): i < 3 for i in range(N)}
    expected = chen2025_judge_table(run_self_records(RunDir(out).read_judgments(), truth), "paper")[judge]
    for metric in ("SPR", "JA", "LSPR", "HSPP"):
        assert row[metric] == pytest.approx(expected[metric], nan_ok=True)
    assert not math.isnan(row["JA"]) and not math.isnan(row["HSPP"])  # LSPR needs a hard "self" verdict in D_diff
    result = forked_cli("metrics", "run", str(out), "--json", "--n-boot", "20")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["chen2025"][judge]["JA"] == pytest.approx(row["JA"] * 100)


def test_resuming_a_graded_run_grades_nothing_again(graded_run, tiny_llama_dir):
    out, _ = graded_run
    before = RunDir(out).correctness.read_text()
    run_dbg(RunDir(out).read_config(), out, progress=False)
    assert RunDir(out).correctness.read_text() == before


def test_a_grader_with_nothing_to_grade_is_one_line_before_any_work(tmp_path, tiny_llama_dir):
    config = RunConfig(
        name="g",
        n=2,
        models=(str(tiny_llama_dir), "x"),
        judges=[str(tiny_llama_dir)],
        imports={"x": "none.jsonl"},
        grader="code",
    )
    with pytest.raises(InterpError, match="grader = 'code' but none of the run's 2 items has a 'tests'"):
        run_dbg(config, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


def test_items_carry_tests_and_the_default_grader_keeps_old_identities(tmp_path):
    data = tmp_path / "code.jsonl"
    data.write_text(
        json.dumps({"id": "c1", "task": "helpfulness", "query": "add", "tests": ["assert add(1, 2) == 3"]}) + "\n"
    )
    (item,) = load_items(f"jsonl:{data}")
    assert item.tests == ("assert add(1, 2) == 3",) and item.record()["tests"] == ["assert add(1, 2) == 3"]
    assert "tests" not in Item("x", "helpfulness", "q").record()
    plain = run_config_from_dict({"name": "a"})
    assert (
        "grader" not in plain.identity()
        and run_config_from_dict({"name": "a", "grader": "code"}).identity()["grader"] == "code"
    )


def test_the_report_shows_the_graded_answers_and_chen_table(graded_run):
    from interp.report.build import build_report
    from interp.report.judging_modes import mode_payload

    out, _ = graded_run
    html = build_report(out).read_text()
    assert "Graded answers and Chen et al.&#39;s metrics" in html and "HSPP" in html
    assert mode_payload(RunDir(out).read_summary()).correctness.authors["key"].to_json() == {"graded": N, "correct": 3}


def test_code_answers_are_run_against_the_items_tests_in_the_sandbox(tmp_path):
    from interp.run.correctness import grade_run_answers

    items = [
        Item("c1", "helpfulness", "Write add(a, b).", tests=("assert add(1, 2) == 3", "assert add(-1, 1) == 0")),
        Item("c2", "helpfulness", "Write add(a, b).", tests=("assert add(2, 2) == 4",)),
        Item("c3", "helpfulness", "No tests here."),
    ]
    responses = {
        "m": {
            "c1": "```python\ndef add(a, b):\n    return a + b\n```",
            "c2": "def add(a, b):\n    return a - b",
            "c3": "anything",
        }
    }
    counts = grade_run_answers(tmp_path / "correctness.jsonl", items, responses, ["m"], "code")
    lines = {row["item_id"]: row for row in read_jsonl(tmp_path / "correctness.jsonl")}
    assert set(lines) == {"c1", "c2"} and lines["c1"]["correct"] and not lines["c2"]["correct"]
    assert "AssertionError" in lines["c2"]["reason"] and counts == {"m": {"graded": 2, "correct": 1}, "no_target": 1}
