"""The code sandbox against hostile answers: each is recorded incorrect with a reason, and the host is untouched
(no file written outside the sandbox's folder, no connection reached a host socket, no process left running,
the folder deleted). Limits are small so that each case ends in a few seconds."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from pathlib import Path

import pytest

from interp.errors import InterpError
from interp.grading import Limits, code_passes, isolation, run_python

LIMITS = Limits(cpu_s=2, wall_s=5.0, memory_bytes=1 << 30)
CPU_BOUND = Limits(cpu_s=2, wall_s=60.0)  # the CPU limit comes first even on a loaded machine
GOOD = "def add(a, b):\n    return a + b\n"
TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]
namespaces = pytest.mark.skipif(
    isolation() != "namespaces", reason="the guard fallback does not confine the filesystem"
)


def graded(answer: str, tmp_path: Path) -> tuple[bool, str]:
    """The answer against TESTS, its sandbox folder under tmp_path/'runs', which must be empty afterwards."""
    root = tmp_path / "runs"
    root.mkdir(exist_ok=True)
    execution = run_python(f"{answer}\n\n" + "\n".join(TESTS) + "\n", LIMITS, temp_root=root)
    assert list(root.iterdir()) == [], "the sandbox folder was not deleted"
    return execution.passed, execution.reason


def test_a_correct_answer_passes_and_a_wrong_one_fails_with_its_assertion(tmp_path):
    assert graded(GOOD, tmp_path) == (True, "ok")
    passed, reason = graded("def add(a, b):\n    return a - b\n", tmp_path)
    assert not passed and reason.startswith("AssertionError")


def test_syntax_errors_and_crashes_are_incorrect_not_raised(tmp_path):
    passed, reason = graded("def add(a, b:\n    return a + b\n", tmp_path)
    assert not passed and reason.startswith("syntax error")
    passed, reason = graded("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n" + GOOD, tmp_path)
    assert not passed and "SIGSEGV" in reason


@namespaces
def test_a_write_outside_its_folder_is_refused(tmp_path):
    outside = tmp_path / "outside.txt"
    passed, reason = graded(f"open({str(outside)!r}, 'w').write('pwned')\n" + GOOD, tmp_path)
    assert not passed and reason == "FileNotFoundError: [Errno 2] No such file or directory: '<path>'", reason
    assert not outside.exists()
    passed, reason = graded("open('/usr/pwned', 'w').write('pwned')\n" + GOOD, tmp_path)
    assert not passed and "Read-only file system" in reason


@namespaces
def test_a_write_inside_its_folder_is_allowed(tmp_path):
    passed, reason = graded(
        "open('scratch.txt', 'w').write('fine')\nassert open('scratch.txt').read() == 'fine'\n" + GOOD, tmp_path
    )
    assert (passed, reason) == (True, "ok")


def test_a_socket_to_the_host_reaches_nothing(tmp_path):
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(8)
    port = server.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    waiter = threading.Thread(target=accept)
    waiter.start()
    answer = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'leak')\n" + GOOD
    passed, reason = graded(answer, tmp_path)
    server.close()  # ends the accept
    waiter.join()
    assert not passed and ("unreachable" in reason or "disabled" in reason or "refused" in reason), reason
    assert accepted == []


@namespaces
def test_no_process_it_starts_survives(tmp_path):
    token = uuid.uuid4().hex
    answer = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', {token!r}])\n"
        "time.sleep(0.2)\n" + GOOD
    )
    passed, reason = graded(answer, tmp_path)
    assert not passed and reason == "PermissionError: [Errno 1] Operation not permitted"  # the fork is refused
    survivors = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                survivors.append(pid)
        except OSError:
            pass
    assert survivors == []


def test_allocating_8_gib_is_a_memory_failure(tmp_path):
    passed, reason = graded("blob = bytearray(8 * 2**30)\n" + GOOD, tmp_path)
    assert not passed and reason == "memory limit (1 GiB)"


def test_an_endless_loop_hits_the_cpu_limit(tmp_path):
    execution = run_python("while True:\n    pass\n" + GOOD, CPU_BOUND, temp_root=tmp_path)
    assert (execution.passed, execution.reason) == (False, "CPU time limit (2 s)")


def test_sleeping_forever_hits_the_wall_clock_limit(tmp_path):
    passed, reason = graded("import time\ntime.sleep(600)\n" + GOOD, tmp_path)
    assert not passed and reason == "timed out after 5 s"


def test_the_environment_is_empty(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERP_SECRET_FOR_TEST", "leak")
    passed, reason = graded("import os\nassert 'INTERP_SECRET_FOR_TEST' not in os.environ, 'leaked'\n" + GOOD, tmp_path)
    assert (passed, reason) == (True, "ok")


def test_code_passes_reads_fenced_answers():
    assert code_passes(f"Here it is:\n```python\n{GOOD}```\nDone.", TESTS, LIMITS) == (True, "all tests passed")


def test_the_guard_fallback_keeps_the_limits_and_refuses_sockets(tmp_path, monkeypatch):
    """Where user namespaces are missing a run is refused unless the caller opts in; then no network by the socket
    guard, the rlimits, the wall clock."""
    from interp.grading import sandbox

    monkeypatch.setattr(sandbox, "isolation", lambda: "guard")
    monkeypatch.delenv("INTERP_SANDBOX", raising=False)
    with pytest.raises(InterpError, match="INTERP_SANDBOX=guard runs them unconfined"):
        run_python(GOOD, LIMITS, temp_root=tmp_path)
    monkeypatch.setenv("INTERP_SANDBOX", "guard")
    run = run_python("import socket\nsocket.create_connection(('127.0.0.1', 9))\n", LIMITS, temp_root=tmp_path)
    assert (run.passed, run.isolation) == (False, "guard") and "disabled in the sandbox" in run.reason
    assert run_python("blob = bytearray(8 * 2**30)\n", LIMITS, temp_root=tmp_path).reason == "memory limit (1 GiB)"
    assert run_python("while True:\n    pass\n", CPU_BOUND, temp_root=tmp_path).reason == "CPU time limit (2 s)"
    assert run_python(GOOD + "\n".join(TESTS), LIMITS, temp_root=tmp_path).passed
    assert code_passes(GOOD, TESTS, LIMITS) == (True, "all tests passed")
    assert not code_passes("import os\nos._exit(0)\n" + GOOD, TESTS, LIMITS)[0]
    assert list(tmp_path.iterdir()) == []


@namespaces
def test_kernel_settings_and_devices_of_the_host_are_out_of_reach(tmp_path):
    """Where the caller is root on the host, the namespace's root is uid 0 to the kernel's permission checks:
    /proc/sys, /sys and cgroups must be read-only and /dev must hold only the harmless nodes."""
    answer = (
        "import os\n"
        "for path in ('/proc/sys/kernel/hostname', '/proc/sys/vm/swappiness', '/sys/kernel', '/sys/fs/cgroup'):\n"
        "    assert not os.path.exists(path) or not os.access(path, os.W_OK), path\n"
        "assert sorted(os.listdir('/dev')) == ['full', 'null', 'random', 'urandom', 'zero'], os.listdir('/dev')\n"
        "open('/dev/null', 'w').write('discarded')\n" + GOOD
    )
    assert graded(answer, tmp_path) == (True, "ok")
