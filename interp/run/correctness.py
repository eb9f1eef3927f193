"""A run's answers graded (Chen et al. 2025): `correctness.jsonl`, from which `interp metrics run` computes
SPR, JA, LSPR and HSPP with no file from elsewhere.

With `grader` set in the run config, every author's answer to every item that carries a target is graded by
`interp.grading`: "math" and "choice" against the item's `reference`, "code" against its `tests` (run in the
sandbox). One line per (item, author): `{item_id, model, correct, reason, grader}`. Items without a target are
left out (the Chen lenses drop them) and counted. Grading is resumable: lines already on disk are kept, the
rest are appended; an answer's grade depends only on the answer, the target and the grader, all fixed by the
run's identity.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from interp.data import Item
from interp.errors import InterpError
from interp.grading import GradeItem, grade_items
from interp.grading.code_tests import check_tests
from interp.grading.grade import check_reference
from interp.grading.sandbox import require_isolation
from interp.results.codec import append_records, read_records


def grading_target(item: Item, grader: str) -> str | tuple[str, ...] | None:
    """What an answer to `item` is graded against: its tests (code) or its reference; None when it has none."""
    if grader == "code":
        return item.tests or None
    return item.reference or None


def check_gradable(items: Sequence[Item], grader: str) -> None:
    """A grader with no item to grade, or code tests that check nothing (`check_tests`), is a mistake in the
    config or the data: one line, before any work; so is a code grader without the namespaces sandbox."""
    if grader == "none":
        return
    if not any(grading_target(item, grader) for item in items):
        field = "tests" if grader == "code" else "reference"
        raise InterpError(
            f"grader = {grader!r} but none of the run's {len(items)} items has a {field!r}; nothing to grade"
        )
    if grader == "code":  # tests that check nothing would pass every answer; no sandbox, no code grading
        for item in items:
            if grading_target(item, grader):
                check_tests(grading_target(item, grader), f"item {item.id!r}")
        require_isolation()
        return
    for item in items:  # a reference no answer could match (blank math, a choice naming no letter): the data's fault
        if target := grading_target(item, grader):
            check_reference(target, grader, f"item {item.id!r}")


def read_correctness_lines(path: Path) -> dict[tuple[str, str], dict]:
    """`{(item_id, model): line}` of a run's correctness.jsonl (empty when there is none)."""
    return {(str(row["item_id"]), str(row["model"])): row for row in read_records(path)} if Path(path).is_file() else {}


def grade_run_answers(
    path: Path,
    items: Sequence[Item],
    responses: dict[str, dict[str, str]],
    authors: Sequence[str],
    grader: str,
    *,
    workers: int = 1,
) -> dict:
    """Grade every (item, author) answer not yet in `path` and append the lines; returns counts per author:
    `{author: {"graded", "correct"}}` and `"no_target"`, the items without a target."""
    if grader == "none":
        return {}
    have = read_correctness_lines(path)
    gradable = [item for item in items if grading_target(item, grader)]
    for author in authors:
        todo = [item for item in gradable if (item.id, author) not in have]
        if not todo:
            continue
        batch = [GradeItem(item.id, responses[author][item.id], grading_target(item, grader)) for item in todo]
        lines = [
            {"item_id": grade.id, "model": author, "correct": grade.correct, "reason": grade.reason, "grader": grader}
            for grade in grade_items(batch, grader, workers=workers)
        ]
        append_records(path, lines)
        have.update({(line["item_id"], author): line for line in lines})
    counts: dict = {
        author: {
            "graded": sum((item.id, author) in have for item in gradable),
            "correct": sum(bool(have.get((item.id, author), {}).get("correct")) for item in gradable),
        }
        for author in authors
    }
    counts["no_target"] = len(items) - len(gradable)
    return counts
