"""What the sandbox contains: no host socket file to connect to, no host file to read, a cap on the
answer's total disk use, a reason that cannot carry what it read, and a code answer that passes only when the
harness ran its tests to the end (no exit before the asserts, no forged sentinel, no empty tests)."""

from __future__ import annotations

import socket
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

from interp.errors import InterpError
from interp.grading import Limits, code_passes, isolation, run_python
from interp.grading.code_tests import check_tests
from interp.grading.sandbox import bounded, run_tests

LIMITS = Limits(cpu_s=2, wall_s=8.0, memory_bytes=1 << 30)  # one case (a read of stdin in the function) waits for it
GOOD = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]
namespaces = pytest.mark.skipif(isolation() != "namespaces", reason="only the namespaces mode confines files")


class UnixListener:
    """A unix socket file on the host with a thread accepting on it; `received` is what any client sent."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "host.sock"
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(self.path))
        self.server.listen()
        self.server.settimeout(8)
        self.received: list[bytes] = []
        self.thread = threading.Thread(target=self._accept)
        self.thread.start()

    def _accept(self) -> None:
        try:
            connection, _ = self.server.accept()
            self.received.append(connection.recv(1024) or b"<connected>")
        except OSError:
            pass

    def close(self) -> None:
        self.server.close()  # ends the accept
        self.thread.join()


@namespaces
@pytest.mark.parametrize("where", ["/tmp", "pytest"])
def test_a_unix_socket_file_of_the_host_is_out_of_reach(tmp_path, where):
    folder = Path(tempfile.mkdtemp(dir="/tmp")) if where == "/tmp" else tmp_path
    listener = UnixListener(folder)
    answer = (
        "import socket\n"
        "client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        f"client.connect({str(listener.path)!r})\n"
        "client.sendall(b'leak')\n" + GOOD
    )
    try:
        correct, reason = code_passes(answer, TESTS, LIMITS)
    finally:
        listener.close()
        listener.path.unlink()
        if where == "/tmp":
            folder.rmdir()
    assert listener.received == []
    assert not correct and reason.startswith("FileNotFoundError"), reason


@namespaces
def test_a_secret_of_the_host_does_not_come_back(tmp_path):
    secret = f"secret-{uuid.uuid4().hex}"
    home = tmp_path / "home"
    home.mkdir()
    (home / ".token").write_text(secret)
    for answer in (
        f"print(open({str(home / '.token')!r}).read())\n" + GOOD,
        f"raise ValueError(open({str(home / '.token')!r}).read())\n",
    ):
        execution = run_tests(answer, "\n".join(TESTS), LIMITS)
        assert not execution.passed and execution.reason.startswith("FileNotFoundError"), execution.reason
        assert secret not in execution.reason + execution.stdout + execution.stderr


@namespaces
def test_the_new_root_holds_no_host_secret_nor_socket_folder():
    answer = (
        "import os\n"
        "for path in ('/etc', '/home', '/tmp', '/run', '/var', '/sys', '/etc/shadow', '/etc/hostname'):\n"
        "    assert not os.path.exists(path), path\n"
        "assert not os.path.exists('/root') or os.listdir('/root') in ([], ['.pyenv']), os.listdir('/root')\n"
        "assert os.getcwd() == '/sandbox'\n" + GOOD
    )
    assert code_passes(answer, TESTS, LIMITS) == (True, "all tests passed")


def test_the_standard_library_imports():
    modules = "math, re, collections, itertools, json, fractions, decimal, heapq, functools, bisect, string, random"
    answer = f"import {modules}, datetime, hashlib, typing, dataclasses, statistics, tempfile, socket\n" + GOOD
    assert code_passes(answer, TESTS, LIMITS) == (True, "all tests passed")


@namespaces
def test_the_answers_total_disk_use_is_capped(tmp_path):
    limits = Limits(cpu_s=2, wall_s=5.0, disk_bytes=4 << 20)
    answer = "for index in range(8):\n    open(f'part{index}', 'wb').write(bytes(1 << 20))\n" + GOOD
    assert code_passes(answer, TESTS, limits) == (False, "disk limit (4 MiB in all)")
    many = "for index in range(100000):\n    open(f'empty{index}', 'w').close()\n" + GOOD
    assert code_passes(many, TESTS, limits) == (False, "disk limit (4 MiB in all)")


@pytest.mark.parametrize(
    "trick",
    [
        "import os\nos._exit(0)\n",
        "raise SystemExit(0)\n",
        "import sys\nsys.exit()\n",
        "import atexit, os\natexit.register(lambda: os._exit(0))\n",
        "import sys, os\nsys.excepthook = lambda *args: os._exit(0)\n",
        "import os\nfor n in range(64):\n    print(os.urandom(16).hex())\nos._exit(0)\n",
        "import os, sys\nprint(open(sys.argv[0] if sys.argv[0] else 'solution.py').read())\nos._exit(0)\n",
        "import os\nos.write(1, b'\\n' + os.read(0, 64) + b'\\n')\nos._exit(0)\n",
        "import builtins, os\nbuiltins.AssertionError = SystemExit\n",
    ],
)
def test_an_exit_before_the_asserts_is_not_a_pass(trick):
    correct, reason = code_passes(trick + WRONG, TESTS, LIMITS)
    assert not correct, reason
    late = f"def add(a, b):\n{''.join('    ' + line + chr(10) for line in trick.splitlines())}    return a - b\n"
    assert not code_passes(late, TESTS, LIMITS)[0]  # the same trick inside the function the tests call


def test_the_answers_prints_are_its_stderr_never_the_pipe():
    execution = run_tests("print('hello')\n" + GOOD, "\n".join(TESTS), LIMITS)
    assert (execution.passed, execution.reason, execution.stdout, execution.stderr) == (True, "ok", "", "hello\n")
    assert run_python("import os\nos._exit(0)\n", LIMITS).passed  # a plain program: its exit status is the result


@pytest.mark.parametrize("tests", ["", "   \n", [], ["   "], "# assert add(1, 2) == 3", "pass", "x = 1", ["assert ("]])
def test_tests_that_check_nothing_are_refused(tests):
    with pytest.raises(InterpError):
        code_passes(GOOD, tests, LIMITS)
    with pytest.raises(InterpError, match="item 'q1'"):
        check_tests(tests, "item 'q1'")


def test_tests_that_only_call_a_checker_are_accepted():
    assert check_tests("def check(f):\n    assert f(1, 2) == 3\ncheck(add)") != ""
    assert code_passes(GOOD, "def check(f):\n    assert f(1, 2) == 3\ncheck(add)", LIMITS)[0]


def test_a_lone_surrogate_is_an_incorrect_answer_not_a_crash():
    correct, reason = code_passes("x = '\ud800'\n" + GOOD, TESTS, LIMITS)
    assert not correct and reason.startswith("syntax error"), reason


def test_a_reason_is_the_error_type_and_a_bounded_message_without_host_paths():
    assert bounded("ValueError: " + "x" * 5000) == "ValueError: " + "x" * 200 + "..."
    assert bounded("FileNotFoundError: [Errno 2] No such file: '/root/.ssh/id_rsa'") == (
        "FileNotFoundError: [Errno 2] No such file: '<path>'"
    )
    assert bounded("OSError: /sandbox/out.txt and 1/2") == "OSError: /sandbox/out.txt and 1/2"
    assert bounded("AssertionError") == "AssertionError"
    assert "\x1b" not in bounded("ValueError: \x1b[31mred")
