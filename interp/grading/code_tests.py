"""Code answers: the answer's Python run against the item's tests (assert statements) in the sandbox.

The program is the answer's code (the first fenced block that defines something, else the first fenced
block, else the whole answer), then the tests. Correct when it exits with status 0 within the limits;
anything else (a failed assert, a syntax error, a crash, a limit) is incorrect with the sandbox's reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from interp.grading.sandbox import Limits, run_python

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def answer_code(answer: str) -> str:
    """The code of an answer: see the module's rule."""
    blocks = _FENCE.findall(answer)
    if not blocks:
        return answer
    defining = [block for block in blocks if re.search(r"^\s*(?:def|class|import|from)\s", block, re.MULTILINE)]
    return (defining or blocks)[0]


def test_program(answer: str, tests: str | Sequence[str]) -> str:
    """The program the sandbox runs: the answer's code, then the tests."""
    body = tests if isinstance(tests, str) else "\n".join(tests)
    return f"{answer_code(answer)}\n\n\n{body}\n"


def code_passes(answer: str, tests: str | Sequence[str], limits: Limits | None = None) -> tuple[bool, str]:
    """(correct, reason): the answer run against its tests in the sandbox; never raises for the answer's doing."""
    execution = run_python(test_program(answer, tests), limits)
    return execution.passed, "all tests passed" if execution.passed else execution.reason
