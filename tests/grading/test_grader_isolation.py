"""Issue 77's grader cheats (fifth probe) and a hostile re-probe of the fix: the answer runs alone in the sandbox,
the tests in a trusted process, every call over a pipe as plain data. Each cheat (tests `assert f(2) == 5`, a
wrong `f` plus one trick) is incorrect; honest answers of every shape the tests compare stay correct. One
sandbox process per answer, so each case is a fraction of a second but the ones that wait for a limit."""

from __future__ import annotations

import pytest

from interp.grading import Limits, code_passes, isolation
from interp.grading.sandbox import run_tests

needs_sandbox = pytest.mark.skipif(isolation() != "namespaces", reason="needs the namespaces sandbox")
pytestmark = needs_sandbox
LIMITS = Limits(cpu_s=3, wall_s=30.0)  # no case here waits for the clock
TESTS = "assert f(2) == 5\n"
WRONG = "def f(x):\n    return -1\n"

# the six tricks, and item 7; each made of the public reproduction, on top of the wrong answer
CHEATS = {
    "1 audit hook reads the token from the harness's frame": (
        "import os, sys\n"
        "_busy = []\n"
        "def _hook(event, args):\n"
        "    if event != 'sys._getframe' or _busy:\n"
        "        return\n"
        "    _busy.append(1)\n"
        "    frame = sys._getframe(0)\n"
        "    while frame is not None:\n"
        "        token = frame.f_locals.get('token')\n"
        "        if isinstance(token, bytes):\n"
        "            os.write(1, b'\\n' + token + b'\\n')\n"
        "            os._exit(0)\n"
        "        frame = frame.f_back\n"
        "    _busy.pop()\n"
        "sys.addaudithook(_hook)\n"
        "globals()['__interp_tests_done__']()\n"
    ),
    "2 /proc/self/mem through a symbolic link and dir_fd": (
        "import os, re\n"
        "os.mkdir('d')\n"
        "os.symlink('/proc/self/mem', 'd/m')\n"
        "_fd = os.open('m', os.O_RDONLY, dir_fd=os.open('d', os.O_RDONLY))\n"
        "_found = set()\n"
        "for _line in open('/proc/self/maps'):\n"
        "    _span, _perms = _line.split()[:2]\n"
        "    if 'r' not in _perms or 'vvar' in _line or 'vsyscall' in _line:\n"
        "        continue\n"
        "    _lo, _hi = (int(_x, 16) for _x in _span.split('-'))\n"
        "    try:\n"
        "        _found.update(re.findall(rb'(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])', os.pread(_fd, _hi - _lo, _lo)))\n"
        "    except OSError:\n"
        "        pass\n"
        "for _token in _found:\n"
        "    os.write(1, b'\\n' + _token + b'\\n')\n"
        "os._exit(0)\n"
    ),
    "3 a fresh interpreter by _posixsubprocess.fork_exec reads the parent's memory": (
        "import os, sys, _posixsubprocess\n"
        "_code = '''import os, re\n"
        "pid = os.getppid()\n"
        "fd = os.open(f'/proc/{pid}/mem', os.O_RDONLY)\n"
        "for line in open(f'/proc/{pid}/maps'):\n"
        "    span, perms = line.split()[:2]\n"
        "    if 'r' not in perms or 'vvar' in line or 'vsyscall' in line:\n"
        "        continue\n"
        "    lo, hi = (int(x, 16) for x in span.split('-'))\n"
        "    try:\n"
        "        for token in set(re.findall(rb'[0-9a-f]{32}', os.pread(fd, hi - lo, lo))):\n"
        "            os.write(1, b'\\\\n' + token + b'\\\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "'''\n"
        "_r, _w = os.pipe()\n"
        "_pid = _posixsubprocess.fork_exec([sys.executable, '-I', '-S', '-c', _code], [sys.executable.encode()],\n"
        "    True, (_w,), None, None, -1, -1, -1, -1, -1, -1, _r, _w, False, False, -1, None, None, None, -1, None,\n"
        "    False)\n"
        "os.waitpid(_pid, 0)\n"
        "os._exit(0)\n"
    ),
    "4 the answer reads the tests' file and answers from a table": (
        "import ast\n"
        "_table = {}\n"
        "for _node in ast.parse(open('/sandbox/tests.py').read()).body:\n"
        "    if isinstance(_node, ast.Assert) and isinstance(_node.test, ast.Compare):\n"
        "        _call = _node.test.left\n"
        "        _table[ast.literal_eval(_call.args[0])] = ast.literal_eval(_node.test.comparators[0])\n"
        "def f(x):\n"
        "    return _table.get(x, -1)\n"
    ),
    "6 the exec event re-runs the tests' code with always-equal objects": (
        "import os, sys\n"
        "class _Equal:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    def __ne__(self, other):\n"
        "        return False\n"
        "class _Scope(dict):\n"
        "    def __missing__(self, name):\n"
        "        return lambda *args, **kwargs: _Equal()\n"
        "_busy = []\n"
        "def _hook(event, args):\n"
        "    if event == 'exec' and not _busy and getattr(args[0], 'co_filename', '') == 'tests.py':\n"
        "        _busy.append(1)\n"
        "        scope = _Scope(__builtins__=__builtins__)\n"
        "        scope['__interp_tests_done__'] = globals()['__interp_tests_done__']\n"
        "        exec(args[0], scope)\n"
        "        os._exit(0)\n"
        "sys.addaudithook(_hook)\n"
    ),
    "7 a returned object whose == is always true": (
        "class _Equal:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    def __ne__(self, other):\n"
        "        return False\n"
        "def f(x):\n"
        "    return _Equal()\n"
    ),
}
# trick 5: the tests' own modules and builtins made always true, with the tests that read them
SHADOWED = {
    "math.isclose": (
        "import math\nmath.isclose = lambda *a, **k: True\n",
        "import math\nassert math.isclose(f(1), .25)",
    ),
    "abs": ("abs = lambda x: 0\n", "assert abs(f(1) - 0.25) < 1e-9"),
    "sorted": ("sorted = lambda x: [1, 2]\n", "assert sorted(f(1)) == [1, 2]"),
    "set": ("set = lambda x=(): {1, 2}\n", "assert set(f(1)) == {1, 2}"),
    "list": ("list = lambda x=(): [3]\n", "assert list(f(1)) == [3]"),
    "isinstance": ("isinstance = lambda *a: True\n", "assert isinstance(f(1), str)"),
    "builtins.abs": ("import builtins\nbuiltins.abs = lambda x: 0\n", "assert abs(f(1) - 0.25) < 1e-9"),
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_a_cheat_of_the_fifth_probe_is_incorrect(name):
    execution = run_tests(CHEATS[name] + ("" if "def f(" in CHEATS[name] else WRONG), TESTS, LIMITS)
    assert not execution.passed, (name, execution.reason)


@pytest.mark.parametrize("name", sorted(SHADOWED))
def test_shadowing_what_the_tests_call_is_incorrect(name):
    trick, tests = SHADOWED[name]
    execution = run_tests(trick + "def f(x):\n    return -1\n", tests, LIMITS)
    assert not execution.passed, (name, execution.reason)


def test_the_tests_file_is_not_in_the_sandbox():
    answer = "import os\ndef f(x):\n    return sorted(os.listdir('.'))\n"
    execution = run_tests(answer, "assert f(0) == ['answer.py', 'solution.py']", LIMITS)
    assert execution.passed, execution.reason


def test_six_forked_children_of_200_mb_under_256_mib_are_refused():
    """The sandbox is one process: fork fails, so the memory cap (its address space) is the whole sandbox's."""
    answer = (
        "import os\n"
        "_kids = []\n"
        "for _ in range(6):\n"
        "    _pid = os.fork()\n"
        "    if _pid == 0:\n"
        "        _blob = bytearray(200 << 20)\n"
        "        os._exit(0)\n"
        "    _kids.append(_pid)\n"
        "for _pid in _kids:\n"
        "    os.waitpid(_pid, 0)\n"
        "def f(x):\n"
        "    return x + 3\n"
    )
    limits = Limits(cpu_s=3, wall_s=30.0, memory_bytes=256 << 20)
    execution = run_tests(answer, TESTS, limits)
    assert (execution.passed, execution.reason) == (False, "PermissionError: [Errno 1] Operation not permitted")
    spawn = "import subprocess, sys\ndef f(x):\n    return subprocess.run([sys.executable, '-c', '1']).returncode\n"
    assert not run_tests(spawn, "assert f(0) == 0", limits).passed
    # memory outside the address space: a memory file (refused), many pipe buffers (256 open files at most)
    memfd = "import os\ndef f(x):\n    return os.memfd_create('m')\n"
    execution = run_tests(memfd, "assert f(0) > 0", limits)
    assert (execution.passed, execution.reason) == (False, "PermissionError: [Errno 1] Operation not permitted")
    pipes = "import os\ndef f(x):\n    return [os.pipe() for _ in range(x)]\n"
    execution = run_tests(pipes, "assert len(f(1000)) == 1000", limits)
    assert (execution.passed, execution.reason) == (False, "OSError: [Errno 24] Too many open files")
    # threads share the one address space, and still work
    threads = (
        "import threading\n_out = []\n_t = [threading.Thread(target=_out.append, args=(n,)) for n in range(4)]\n"
        "for _x in _t:\n    _x.start()\nfor _x in _t:\n    _x.join()\ndef f(x):\n    return sorted(_out)\n"
    )
    assert run_tests(threads, "assert f(0) == [0, 1, 2, 3]", limits).passed


HONEST = {
    "tuples, sets, dicts, bytes, None": (
        "def f(x):\n    return (x, {1, 2}, {'a': [1.5, None]}, b'x', frozenset({3}), {(1, 2): 'k'})\n",
        "assert f(2) == (2, {1, 2}, {'a': [1.5, None]}, b'x', frozenset({3}), {(1, 2): 'k'})",
    ),
    "floats with math.isclose": (
        "def f(x):\n    return 0.1 + 0.2\n",
        "import math\nassert math.isclose(f(1), 0.3)\nassert abs(f(1) - 0.3) < 1e-9",
    ),
    "math of the answer's import": ("import math\ndef f(x):\n    return 0.1 + 0.2\n", "assert math.isclose(f(1), 0.3)"),
    "an exception the tests expect": (
        "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n",
        "try:\n    f(-1)\nexcept ValueError as e:\n    assert str(e) == 'negative'\nelse:\n    raise AssertionError\n"
        "assert f(3) == 3",
    ),
    "a subclass of a built-in exception": (
        "class Bad(KeyError):\n    pass\ndef f(x):\n    raise Bad(x)\n",
        "try:\n    f(1)\nexcept KeyError:\n    pass\nelse:\n    raise AssertionError",
    ),
    "a namedtuple against a tuple": (
        "import collections\nP = collections.namedtuple('P', 'a b')\ndef f(x):\n    return P(x, x + 1)\n",
        "assert f(1) == (1, 2)",
    ),
    "a generator read by list()": ("def f(n):\n    yield from range(n)\n", "assert list(f(3)) == [0, 1, 2]"),
    "a range, a Fraction, a Decimal, a complex": (
        "import fractions, decimal\n"
        "def f(x):\n    return [range(x), fractions.Fraction(1, x), decimal.Decimal('1.5'), 1j]\n",
        "import fractions, decimal\nassert f(3) == [range(3), fractions.Fraction(1, 3), decimal.Decimal('1.5'), 1j]",
    ),
    "a list sorted in place": ("def f(a):\n    a.sort()\n", "a = [3, 1, 2]\nf(a)\nassert a == [1, 2, 3]"),
    "a class the tests instantiate": (
        "class Solution:\n    def __init__(self):\n        self.n = 1\n"
        "    def add(self, a, b):\n        return a + b + self.n\n",
        "s = Solution()\nassert s.add(1, 2) == 4\nassert s.n == 1",
    ),
    "HumanEval's check(candidate)": (
        "def f(x):\n    return x + 3\n",
        "def check(candidate):\n    assert candidate(2) == 5\n    assert candidate(0) == 3\ncheck(f)",
    ),
    "a big integer": (
        "import math\ndef f(n):\n    return math.factorial(n)\n",
        "import math\nassert f(2000) == math.factorial(2000)",
    ),
    "a keyword argument and a default": (
        "def f(x, y=1):\n    return x * y\n",
        "assert f(2, y=3) == 6\nassert f(2) == 2",
    ),
    "the answer's constant": ("LIMIT = 7\ndef f(x):\n    return x\n", "assert f(LIMIT) == 7"),
    "the answer's own function passed back": (
        "def g(x):\n    return x + 1\ndef f(h, x):\n    return h(x)\n",
        "assert f(g, 1) == 2",
    ),
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_an_honest_answer_is_still_correct(name):
    answer, tests = HONEST[name]
    execution = run_tests(answer, tests, LIMITS)
    assert execution.passed, (name, execution.reason)


def test_the_honest_answers_wrong_twins_are_incorrect():
    assert not run_tests("def f(x):\n    return (x, {1})\n", "assert f(2) == (2, {1, 2})", LIMITS).passed
    assert not run_tests("def f(a):\n    a.reverse()\n", "a = [3, 1, 2]\nf(a)\nassert a == [1, 2, 3]", LIMITS).passed
    no_raise = "def f(x):\n    return x\n"
    expects = "try:\n    f(-1)\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError('no ValueError')"
    execution = run_tests(no_raise, expects, LIMITS)
    assert (execution.passed, execution.reason) == (False, "AssertionError: no ValueError")


# the re-probe: attacks on the new design itself, each incorrect or bounded
EVERY_FD = "import os\nfor _fd in range(3, 10):\n    try:\n        {}\n    except OSError:\n        pass\n"
REPROBE = {
    "json monkeypatched to forge an always-equal reply": (
        "import json\n_dumps = json.dumps\n"
        "json.dumps = lambda message, **k: _dumps({'desc': ['value', {'equal': 'always'}]}) if 'desc' in message "
        "else _dumps(message, **k)\n" + WRONG
    ),
    "json monkeypatched to crash the replies": "import json\njson.dumps = None\n" + WRONG,
    "a forged reply written on the pipe before the real one": EVERY_FD.format(
        'os.write(_fd, b\'{"names": {"f": ["value", 5]}}\\n\')'
    )
    + WRONG,
    "garbage past the size of a message on the pipe": EVERY_FD.format("os.write(_fd, b'[' * (17 << 20))") + WRONG,
    "a reply nested 10000 deep": (
        "def f(x):\n    out = []\n    for _ in range(10000):\n        out = [out]\n    return out\n"
    ),
    "a list that holds itself": "def f(x):\n    a = []\n    a.append(a)\n    return a\n",
    "ten million values": "def f(x):\n    return [0] * 10_000_000\n",
    "a 20 MB string": "def f(x):\n    return 'x' * (20 << 20)\n",
    "an int subclass whose == is always true": (
        "class _T(int):\n    def __eq__(self, other):\n        return True\ndef f(x):\n    return _T(-1)\n"
    ),
    "an object made true": "def f(x):\n    return object()\n",
    "SystemExit raised in the function": "def f(x):\n    raise SystemExit(0)\n",
    "an exit on the second call": (
        "import os\n_calls = []\ndef f(x):\n    _calls.append(x)\n    if len(_calls) == 2:\n        os._exit(0)\n"
        "    return x + 3\n"
    ),
    "an infinite generator": "import itertools\ndef f(x):\n    return itertools.count()\n",
    "a range of 10**12 values the tests would list": "def f(x):\n    return range(10**12)\n",
    "a Decimal whose int() takes forever": "import decimal\ndef f(x):\n    return decimal.Decimal('1e999999999')\n",
    "a dict key that is not hashable after decoding": (
        "import json\n_dumps = json.dumps\n"
        "json.dumps = lambda message, **k: _dumps({'desc': ['value', {'dict': [[[1], 5]]}]}) if 'desc' in message "
        "else _dumps(message, **k)\n" + WRONG
    ),
}
REPROBE_TESTS = {
    "an object made true": "assert f(2)",
    "an exit on the second call": "assert f(2) == 5\nassert f(3) == 6",
    "an infinite generator": "assert next(iter(f(2))) == 0",
    "a range of 10**12 values the tests would list": "assert list(f(2))[:1] == [0]",
    "a Decimal whose int() takes forever": "assert int(f(2)) > 0",
}


@pytest.mark.parametrize("name", sorted(REPROBE))
def test_an_attack_on_the_pipe_is_incorrect(name):
    execution = run_tests(REPROBE[name], REPROBE_TESTS.get(name, TESTS), LIMITS)
    assert not execution.passed, (name, execution.reason)


def test_an_answer_that_closes_its_pipe_and_sleeps_is_bounded_by_the_wall_clock():
    answer = EVERY_FD.format("os.close(_fd)") + "import time\ntime.sleep(600)\n" + WRONG
    execution = run_tests(answer, TESTS, Limits(cpu_s=3, wall_s=2.0))
    assert (execution.passed, execution.reason) == (False, "timed out after 2 s")


def test_a_failure_the_tests_catch_is_still_a_failure():
    tests = "try:\n    assert f(2) == 5\nexcept BaseException:\n    pass\nassert True"
    assert not run_tests("def f(x):\n    return object()\n", tests, LIMITS).passed
    execution = run_tests("def f(x):\n    raise SystemExit(0)\n", tests, LIMITS)
    assert not execution.passed and execution.reason == "the answer ended before its tests finished"


def test_an_answer_that_sleeps_after_answering_is_graded_without_waiting():
    """Right answers, then a thread and an atexit hook that sleep past the wall clock: the grade is the tests'
    (correct), not a timeout."""
    answer = (
        "import atexit, threading, time\n"
        "atexit.register(time.sleep, 600)\n"
        "def f(x):\n"
        "    threading.Thread(target=time.sleep, args=(600,)).start()\n"
        "    return x + 3\n"
    )
    execution = run_tests(answer, TESTS, Limits(cpu_s=3, wall_s=10.0))
    assert (execution.passed, execution.reason) == (True, "ok")


def test_code_passes_keeps_its_interface():
    assert code_passes("```python\ndef f(x):\n    return x + 3\n```", [TESTS], LIMITS) == (True, "all tests passed")
    assert code_passes(WRONG, [TESTS], LIMITS) == (False, "AssertionError")


def test_a_loop_that_ignores_sigxcpu_is_reported_at_the_cpu_limit():
    """Decided: the kernel's SIGKILL at the hard CPU limit (one second past the soft one) is the CPU limit."""
    answer = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\ndef f(x):\n    while True:\n        pass\n"
    execution = run_tests(answer, TESTS, Limits(cpu_s=1, wall_s=60.0))
    assert (execution.passed, execution.reason) == (False, "CPU time limit (1 s)")


def test_a_reply_past_the_message_size_is_named_so():
    execution = run_tests("def f(x):\n    return 'x' * (17 << 20)\n", TESTS, LIMITS)
    assert (execution.passed, execution.reason) == (
        False,
        "the answer's reply is not plain data: a message over 16 MiB",
    )


def test_an_answer_that_reads_stdin_reads_nothing_not_the_requests():
    execution = run_tests("n = input()\ndef f(x):\n    return x + 3\n", TESTS, LIMITS)
    assert (execution.passed, execution.reason) == (False, "EOFError: EOF when reading a line")
