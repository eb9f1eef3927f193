"""`interp grade`: one JSON line per item with --json, a table without, and bad input as one `error:` line."""

from __future__ import annotations

import json


def test_grade_code_json_is_one_line_per_item_in_order(tmp_path, forked_cli):
    path = tmp_path / "code.jsonl"
    rows = [
        {"id": "good", "answer": "def f(x):\n    return x + 1", "tests": ["assert f(1) == 2"]},
        {"id": "wrong", "answer": "def f(x):\n    return x", "tests": "assert f(1) == 2"},
        {"id": "broken", "answer": "def f(x:\n", "tests": ["assert f(1) == 2"]},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = forked_cli("grade", path, "--kind", "code", "--json", "--timeout", "5")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["id"], line["correct"]) for line in lines] == [("good", True), ("wrong", False), ("broken", False)]
    assert lines[2]["reason"].startswith("syntax error")


def test_grade_math_table_and_choice_json(tmp_path, forked_cli):
    math = tmp_path / "math.jsonl"
    math.write_text(json.dumps({"id": 1, "answer": "so \\boxed{\\frac{1}{2}}", "reference": "0.5"}) + "\n")
    choice = tmp_path / "choice.jsonl"
    choice.write_text(json.dumps({"id": "q", "answer": "The answer is (C)", "reference": "B"}) + "\n")
    table, as_json = forked_cli.run(
        [
            (["grade", str(math), "--kind", "math"], tmp_path),
            (["grade", str(choice), "--kind", "choice", "--json"], tmp_path),
        ]
    )
    assert table[0] == 0 and "1 of 1 correct" in table[1], table
    assert as_json[0] == 0 and json.loads(as_json[1]) == {"id": "q", "correct": False, "reason": "C != B"}


def test_grade_bad_input_is_one_error_line_exit_2(tmp_path, forked_cli):
    missing = tmp_path / "missing.jsonl"
    no_tests = tmp_path / "no_tests.jsonl"
    no_tests.write_text('{"id": 1, "answer": "x = 1"}\n')
    ran = forked_cli.run(
        [
            (["grade", str(missing), "--kind", "math"], tmp_path),
            (["grade", str(no_tests), "--kind", "code"], tmp_path),
            (["grade", str(no_tests), "--kind", "essay"], tmp_path),
        ]
    )
    expected = ["no such file", "no 'tests' field", "unknown grading kind 'essay'"]
    for (code, _, stderr), text in zip(ran, expected, strict=False):
        assert code == 2 and len(stderr.splitlines()) == 1 and stderr.startswith("error: ") and text in stderr, stderr


def test_grade_refuses_a_device_and_tests_that_check_nothing_in_one_line(tmp_path, forked_cli):
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"id": 1, "answer": "def f():\\n    return 1", "tests": []}\n')
    blank = tmp_path / "blank.jsonl"
    blank.write_text('{"id": 1, "answer": "def f():\\n    return 1", "tests": "  # nothing\\n"}\n')
    ran = forked_cli.run(
        [
            (["grade", "/dev/zero", "--kind", "math"], tmp_path),
            (["grade", str(empty), "--kind", "code", "--json"], tmp_path),
            (["grade", str(blank), "--kind", "code"], tmp_path),
        ]
    )
    expected = ["/dev/zero: not a regular file", "empty.jsonl:1: the tests check nothing", "blank.jsonl:1: the tests"]
    for (code, stdout, stderr), text in zip(ran, expected, strict=False):
        assert code == 2 and stdout == "" and len(stderr.splitlines()) == 1 and text in stderr, (code, stdout, stderr)


def test_grade_fails_an_exit_before_the_asserts_and_shows_odd_ids(tmp_path, forked_cli):
    path = tmp_path / "code.jsonl"
    rows = [
        {"id": "exit", "answer": "import os\nos._exit(0)\ndef f(x):\n    return x", "tests": ["assert f(1) == 2"]},
        {"id": "[red]\ud800", "answer": "x = '\ud800'", "tests": "assert x"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    as_json, table = forked_cli.run(
        [
            (["grade", str(path), "--kind", "code", "--json"], tmp_path),
            (["grade", str(path), "--kind", "code"], tmp_path),
        ]
    )
    lines = [json.loads(line) for line in as_json[1].splitlines()]
    assert as_json[0] == 0 and [line["correct"] for line in lines] == [False, False], as_json
    assert "before its tests finished" in lines[0]["reason"] and lines[1]["reason"].startswith("syntax error")
    assert table[0] == 0 and "[red]\\ud800" in table[1] and "0 of 2 correct" in table[1], table
