"""Grading a file of answers: each line's `id` and `answer`, plus `tests` (code) or `reference` (math,
choice), read strictly (one `InterpError` line naming the line and field), then graded one by one.

Code items run in the sandbox, several at once with `workers` > 1 (each run is a subprocess; threads only
wait). Results come back in the file's order.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from interp.errors import InterpError
from interp.grading.choice import choice_equal, reference_choice
from interp.grading.code_tests import check_tests, code_passes
from interp.grading.math_answer import last_boxed, math_equal, normalise
from interp.grading.result import GRADE_KINDS, Grade
from interp.grading.sandbox import Limits
from interp.storage import jsonl_objects, read_user_text


@dataclass(frozen=True)
class GradeItem:
    """One answer to grade: `target` is the tests (code: a string or a list of assert lines) or the reference."""

    id: str
    answer: str
    target: str | tuple[str, ...]


def _target_field(kind: str) -> str:
    return "tests" if kind == "code" else "reference"


def check_kind(kind: str) -> None:
    """InterpError unless `kind` is a grading kind (code, math or choice)."""
    if kind not in GRADE_KINDS:
        raise InterpError(f"unknown grading kind {kind!r}; use one of {', '.join(GRADE_KINDS)}")


def _item(record: dict, kind: str, where: str) -> GradeItem:
    field = _target_field(kind)
    for name in ("id", "answer", field):
        if name not in record:
            raise InterpError(f"{where}: no {name!r} field (each line needs id, answer and {field} for --kind {kind})")
    if not isinstance(record["id"], (str, int)) or isinstance(record["id"], bool):
        raise InterpError(f"{where}: 'id' must be a string or an integer")
    if not isinstance(record["answer"], str):
        raise InterpError(f"{where}: 'answer' must be a string (got {type(record['answer']).__name__})")
    target = record[field]
    if kind == "code" and isinstance(target, list) and all(isinstance(line, str) for line in target):
        target = tuple(target)
        check_tests(target, where)
    elif kind == "code" and isinstance(target, str):
        check_tests(target, where)
    elif isinstance(target, (int, float)) and not isinstance(target, bool) and kind != "code":
        if not math.isfinite(target):
            raise InterpError(f"{where}: 'reference' must be a finite number (got {target!r})")
        target = str(target)
    elif not isinstance(target, str):
        expected = "a string or a list of strings" if kind == "code" else "a string or a number"
        raise InterpError(f"{where}: {field!r} must be {expected}")
    if kind != "code":
        check_reference(target, kind, where)
    return GradeItem(str(record["id"]), record["answer"], target)


def check_reference(reference: str, kind: str, where: str = "reference") -> None:
    """A reference that no answer could match is the data's fault, refused in one line: a math reference with
    nothing left after normalising (blank, `$ $`, `\\boxed{}`), a choice reference that names no letter A-E."""
    boxed = last_boxed(reference)
    if kind == "math" and not normalise(reference if boxed is None else boxed):
        raise InterpError(f"{where}: the math reference {reference[:60]!r} is blank; refusing to grade")
    if kind == "choice" and reference_choice(reference) is None:
        raise InterpError(f"{where}: the choice reference {reference[:60]!r} names no letter A-E; refusing to grade")


def read_items(path: Path, kind: str) -> list[GradeItem]:
    """The items of a JSONL file for `kind`; duplicate ids, code tests that check nothing and a path that is
    not a regular file (a device, a pipe: endless) are refused."""
    check_kind(kind)
    path = Path(path)
    if path.exists() and not path.is_file():
        raise InterpError(f"{path}: not a regular file (answers to grade are a JSONL file)")
    text = read_user_text(path, "answers to grade")
    items: list[GradeItem] = []
    seen: set[str] = set()
    for number, record in jsonl_objects(text.splitlines(), where=lambda n: f"{path}:{n}"):
        item = _item(record, kind, f"{path}:{number}")
        if item.id in seen:
            raise InterpError(f"{path}:{number}: id {item.id!r} appears twice; ids must be unique")
        seen.add(item.id)
        items.append(item)
    if not items:
        raise InterpError(f"{path}: no items (one JSON object per line: id, answer, {_target_field(kind)})")
    return items


def grade_item(item: GradeItem, kind: str, limits: Limits | None = None) -> Grade:
    """One item graded; a code answer runs in the sandbox."""
    if kind == "code":
        correct, reason = code_passes(item.answer, item.target, limits)
    elif kind == "math":
        correct, reason = math_equal(item.answer, str(item.target))
    else:
        correct, reason = choice_equal(item.answer, str(item.target))
    return Grade(item.id, correct, reason)


def grade_items(
    items: Sequence[GradeItem], kind: str, *, limits: Limits | None = None, workers: int = 1
) -> Iterator[Grade]:
    """Every item graded, in order; code items `workers` at a time."""
    check_kind(kind)
    if kind != "code" or workers <= 1:
        yield from (grade_item(item, kind, limits) for item in items)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(lambda item: grade_item(item, kind, limits), items)
