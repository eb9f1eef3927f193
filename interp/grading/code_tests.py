"""Code answers: the answer's Python run in the sandbox, its item's tests (assert statements) outside it.

The answer's code is the first fenced block that defines something, else the first fenced block, else the
whole answer. The answer runs alone in the sandbox; the tests run in a trusted process of their own on the
host, with the answer's names bound to proxies that call it over a pipe, arguments and results as plain data
(`interp.grading.serve`): correct only when the tests ran to their end, every call answered with plain data.
Anything else (a failed assert, a syntax error, a crash, a limit, an object that is not plain data, an exit
before the tests finished) is incorrect with its reason. Tests with nothing to check (empty, blank, comments
only, no assert and no call) or that are not valid Python, and tests that read no name an answer could define
(`assert True`, `print(1)`: every name a builtin or their own) are the data's fault: refused in one line
(`check_tests`), never graded.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Sequence

from interp.errors import InterpError
from interp.grading.sandbox import Limits, run_tests
from interp.grading.serve import free_names

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def answer_code(answer: str) -> str:
    """The code of an answer: see the module's rule."""
    blocks = _FENCE.findall(answer)
    if not blocks:
        return answer
    defining = [block for block in blocks if re.search(r"^\s*(?:def|class|import|from)\s", block, re.MULTILINE)]
    return (defining or blocks)[0]


def tests_source(tests: str | Sequence[str]) -> str:
    """The tests as one block of source: a string as it is, a list one statement a line."""
    return tests if isinstance(tests, str) else "\n".join(tests)


def check_tests(tests: str | Sequence[str], where: str = "code tests") -> str:
    """The tests' source; an `InterpError` naming `where` when they are not Python or check nothing (no
    assert statement and no call anywhere: empty, blank, comments, `pass`)."""
    source = tests_source(tests)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(source.encode("utf-8", errors="surrogatepass"))
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        at = f" (line {line})" if line else ""
        raise InterpError(f"{where}: the tests are not valid Python{at}: {getattr(exc, 'msg', exc)}") from None
    if not any(isinstance(node, (ast.Assert, ast.Call)) for node in ast.walk(tree)):
        raise InterpError(f"{where}: the tests check nothing (no assert statement and no call); refusing to grade")
    if not free_names(tree):
        raise InterpError(
            f"{where}: the tests use nothing an answer could define (every name they read is a builtin or their "
            "own, as in `assert True`); refusing to grade"
        )
    return source


def code_passes(answer: str, tests: str | Sequence[str], limits: Limits | None = None) -> tuple[bool, str]:
    """(correct, reason): the answer run against its tests in the sandbox; never raises for the answer's doing
    (tests that check nothing are refused, see `check_tests`)."""
    execution = run_tests(answer_code(answer), check_tests(tests), limits)
    return execution.passed, "all tests passed" if execution.passed else execution.reason
