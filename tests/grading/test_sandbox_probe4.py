"""Held-out variants of issue 69's grading defects (fourth probe, hostile user): an answer that makes the harness
skip its tests by ordinary monkeypatching or a trace function, or reads the token from the harness's frames;
tests that use nothing of the answer; references no answer could match; limits out of range. Each is incorrect
or refused in one line. The sandbox cases need the namespaces sandbox (Linux with user namespaces)."""

from __future__ import annotations

import json
import math

import pytest

from interp.errors import InterpError
from interp.grading import Limits, read_items
from interp.grading.code_tests import check_tests
from interp.grading.sandbox import isolation, run_tests

needs_sandbox = pytest.mark.skipif(isolation() != "namespaces", reason="needs the namespaces sandbox")
LIMITS = Limits(cpu_s=2, wall_s=30.0)  # no case here waits for the clock
WRONG = "def f():\n    return 1\n"
TESTS = "assert f() == 2\nassert f() == 1\n"  # the first assert fails for WRONG, the second holds

# Each answer below is wrong (f() is 1, the first test wants 2) and tries to pass anyway, or takes a route
# to the token (the garbage collector, ctypes, process memory, a fresh interpreter) that is refused.
CHEATS = {
    # replacing what the harness calls after a failed assert or to run the tests
    "os._exit made a no-op": "import os\nos._exit = lambda *args: None\n",
    "builtins.exec made a no-op": "import builtins\nbuiltins.exec = lambda *args, **kwargs: None\n",
    "builtins.compile made empty": (
        "import builtins\n_c = builtins.compile\nbuiltins.compile = lambda *a, **k: _c('pass', 'x', 'exec')\n"
    ),
    "traceback.print_exc made a no-op": "import traceback\ntraceback.print_exc = lambda *a, **k: None\n",
    # a trace function that jumps over the failing assert
    "trace jump": (
        "import sys\n"
        "def _trace(frame, event, arg):\n"
        "    if frame.f_code.co_filename == 'tests.py' and event == 'line' and frame.f_lineno == 1:\n"
        "        frame.f_lineno = 2\n"
        "    return _trace\n"
        "sys.settrace(_trace)\n"
    ),
    # the token from the harness's frame, its generator's frame, the garbage collector, process memory
    "the harness's frame": (
        "import os, sys\n"
        "_f = sys._getframe(1)\n"
        "while _f is not None:\n"
        "    for _v in _f.f_locals.values():\n"
        "        if isinstance(_v, bytes) and len(_v) == 32:\n"
        "            os.write(1, b'\\n' + _v + b'\\n')\n"
        "    _f = _f.f_back\n"
        "os._exit(0)\n"
    ),
    "the sealed generator's frame": (
        "import os, sys\n"
        "_done = sys._getframe(0).f_globals['__interp_tests_done__']\n"
        "_token = _done.args[0].gi_frame.f_locals['token']\n"
        "os.write(1, b'\\n' + _token + b'\\n')\n"
        "os._exit(0)\n"
    ),
    "the done call made by the answer": (
        "import sys\n_done = sys._getframe(0).f_globals['__interp_tests_done__']\n_done()\n"
    ),
    "the garbage collector": "import gc\n_all = gc.get_objects()\n",
    "ctypes": "import ctypes\n",
    "/proc/self/mem": "open('/proc/self/mem', 'rb')\n",
    "a fresh interpreter": "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'pass'])\n",
}


@needs_sandbox
@pytest.mark.parametrize("name", sorted(CHEATS))
def test_an_answer_cannot_make_the_harness_skip_or_forge_its_tests(name):
    execution = run_tests(CHEATS[name] + WRONG, TESTS, LIMITS)
    assert not execution.passed, (name, execution.reason)


@needs_sandbox
def test_an_honest_answer_still_passes_with_the_stdlib_that_reads_frames():
    # namedtuple, enum and typing read their caller's frame; traceback.format_exc reads a traceback's frames
    answer = (
        "import collections, dataclasses, enum, traceback, typing\n"
        "P = collections.namedtuple('P', 'a b')\n"
        "class E(enum.Enum):\n    A = 1\n"
        "@dataclasses.dataclass\nclass D:\n    x: int\n"
        "T = typing.TypeVar('T')\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError:\n    TEXT = traceback.format_exc()\n"
        "def f():\n    return P(2, 3).a\n"
    )
    tests = "def check(candidate):\n    assert candidate() == 2\nfor _ in range(2):\n    check(f)"
    execution = run_tests(answer, tests, LIMITS)
    assert execution.passed, execution.reason
    assert not run_tests(answer, tests + "\nassert f() == 3", LIMITS).passed


@pytest.mark.parametrize("tests", ["assert True", "print(1)", "x = 1\nassert x == 1", "import math\nassert math.pi"])
def test_tests_that_use_nothing_of_the_answer_are_refused(tests):
    with pytest.raises(InterpError, match="use nothing an answer could define"):
        check_tests(tests)


@pytest.mark.parametrize(
    "tests", ["assert f() == 1", "def check(c):\n    assert c(1)\ncheck(g)", ["assert   Solution().run()", " "]]
)
def test_tests_that_read_a_name_of_the_answer_are_kept(tests):
    check_tests(tests)


@pytest.mark.parametrize(
    ("kind", "reference"), [("math", ""), ("math", "  $ $ "), ("math", "\\boxed{}"), ("choice", "Z"), ("choice", "")]
)
def test_a_reference_no_answer_could_match_is_refused(tmp_path, kind, reference):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"id": "a", "answer": "B", "reference": reference}) + "\n")
    with pytest.raises(InterpError, match="refusing to grade"):
        read_items(path, kind)


def test_a_non_finite_numeric_reference_is_refused(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text('{"id": "a", "answer": "1", "reference": NaN}\n{"id": "b", "answer": "1", "reference": 1e999}\n')
    with pytest.raises(InterpError, match="finite number"):
        read_items(path, "math")


@pytest.mark.parametrize(
    "limits",
    [
        {"wall_s": math.inf},
        {"wall_s": math.nan},
        {"cpu_s": 10**20},
        {"cpu_s": 0},
        {"cpu_s": 2.5},
        {"memory_bytes": -1},
        {"memory_bytes": 1 << 70},
        {"disk_bytes": 1 << 62},
        {"processes": True},
    ],
)
def test_limits_out_of_range_are_refused(limits):
    with pytest.raises(InterpError, match="sandbox limit"):
        Limits(**limits)


@pytest.mark.parametrize(
    "option",
    [
        ["--timeout", "inf"],
        ["--timeout", "1e400"],
        ["--cpu", "99999999999999999999"],
        ["--memory-mib", "99999999999999"],
        ["--disk-mib", "99999999999"],
        ["--workers", "100000"],
    ],
)
def test_grade_refuses_limits_out_of_range_in_one_line(tmp_path, forked_cli, option):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"id": "a", "answer": WRONG, "tests": TESTS}) + "\n")
    result = forked_cli("grade", path, "--kind", "code", "--json", *option)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("error: "), result.stderr


def test_braces_around_the_whole_math_answer_only_group_it():
    from interp.grading.math_answer import math_equal

    assert math_equal("\\boxed{{{{1}}}}", "1")[0]
    assert math_equal("\\boxed{" + "{" * 100_000 + "1" + "}" * 100_000 + "}", "1")[0]  # one pass, not quadratic
    assert math_equal("\\boxed{{1}+{2}}", "{1}+{2}")[0]
    assert not math_equal("\\boxed{{}}", "1")[0]
