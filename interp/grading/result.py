"""The outcome of grading one answer: correct or not, and one line that says why."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

GradeKind = Literal["code", "math", "choice"]
GRADE_KINDS: tuple[str, ...] = ("code", "math", "choice")


@dataclass(frozen=True)
class Grade:
    """One graded answer. `reason` is one line: what was compared, or why the answer failed."""

    id: str
    correct: bool
    reason: str

    def to_json(self) -> dict:
        return asdict(self)
