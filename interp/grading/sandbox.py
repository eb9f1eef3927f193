"""The code sandbox: model-written Python run in a subprocess that cannot harm the host, every failure a value.

One run (`run_python`, or `run_tests` for an answer and its tests) writes the program into a fresh temporary
folder and runs `python -I -S` on it (isolated mode: no user site, no PYTHON* variables, no `site`) with an
empty environment, in a session and process group of its own, under limits on CPU time (RLIMIT_CPU), address
space (RLIMIT_AS), processes (RLIMIT_NPROC), each file's size (RLIMIT_FSIZE: its output files too), its total
disk use and wall-clock time. The program is one process: before any of it runs, `serve.py` sets a seccomp
filter that refuses fork, vfork, clone3 and clone of a new process (threads work), so RLIMIT_AS bounds the
whole sandbox's memory. At the end the whole process group is killed and the folder deleted.

`run_tests` runs the answer alone in the sandbox (`serve.py` in it answers calls over a pipe) and its tests in a
second, trusted process on the host (`serve.py test`) that calls the answer's names over that pipe with plain
data only; the tests' file is never in the sandbox.

Isolation (`isolation()` says which one a run gets):
- "namespaces" (Linux with unprivileged user namespaces and util-linux `unshare`): new user, mount, network,
  IPC (no System V objects of the host), UTS and PID namespaces, and a new root (`interp/grading/jail.py`) that
  holds only /usr, /bin, /sbin, /lib* and the interpreter's installation, read-only, a fresh /dev and /proc,
  and the program's folder /sandbox, a tmpfs of `Limits.disk_bytes`: no host /etc, /root, /home, /tmp, /run or
  /var, so no host secret to read and no socket file to connect to; no network interface but a down loopback.
  The mounts are locked by a nested user namespace; the program runs under jail.py, PID 1 of its own PID
  namespace, so when it ends the kernel kills every process it left, and a program that leaves any running is
  not correct ("left N processes running"). RLIMIT_NPROC does not bind a caller that is root on the host
  (uid 0 is exempt); there the namespace's own pid_max (Linux >= 6.14) caps the processes at about 300.
- "guard" (no usable `unshare`): the same limits and process group, and a guard module run before the program
  that removes `socket` creation. It is not a security boundary (the program sees the host's files as the
  caller does), so it runs only where the caller opts in with INTERP_SANDBOX=guard; otherwise a run is refused.

Reasons are short, one line: "ok", "timed out after 5 s", "CPU time limit (5 s)", "memory limit (1 GiB)",
"disk limit (32 MiB in all)", "syntax error: ...", the exception of the last traceback (its type and at most
200 characters of its message, absolute paths outside /sandbox replaced by "<path>"), or "killed by signal N".
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from interp.errors import InterpError
from interp.grading.serve import GONE

JAIL = Path(__file__).with_name("jail.py")
SERVE = Path(__file__).with_name("serve.py")  # both ends of a code answer's grading
SETUP_FAILED = 121  # jail.py's exit code when it could not confine the program
LEFT_RUNNING = 122  # jail.py's exit code when the program left processes running
OPT_IN = "INTERP_SANDBOX"  # INTERP_SANDBOX=guard: run answers without namespaces (not a security boundary)
MESSAGE_CHARS = 200  # of an exception's message in a reason
DAY_S = 86_400  # the most CPU or wall-clock seconds one run may be given
GUARD = (
    "import socket as _s\n"
    "def _refuse(*args, **kwargs):\n"
    "    raise OSError('network access is disabled in the sandbox')\n"
    "for _name in ('socket', 'create_connection', 'create_server', 'socketpair', 'fromfd'):\n"
    "    setattr(_s, _name, _refuse)\n"
    "del _s, _name, _refuse\n"
)
_PATH = re.compile(r"(?<![\w./~-])/(?!sandbox\b)[\w.~+-][^\s'\":,;()\[\]{}]*")


@dataclass(frozen=True)
class Limits:
    """What one run may use. `memory_bytes` is address space (RLIMIT_AS), not resident memory; `file_bytes`
    each file, `disk_bytes` all its files together (the size of its folder, namespaces mode)."""

    cpu_s: int = 5
    wall_s: float = 10.0
    memory_bytes: int = 1 << 30
    processes: int = 64
    file_bytes: int = 1 << 20
    disk_bytes: int = 32 << 20

    def __post_init__(self) -> None:
        """Refused in one line, before any run: a limit that is not a number in its range (NaN, infinite, zero,
        negative, or past what the kernel's limits hold; the disk, a tmpfs, past the machine's memory)."""
        memory = _physical_memory()
        bounds = {
            "cpu_s": (1, DAY_S),
            "wall_s": (0.1, DAY_S),
            "memory_bytes": (1 << 20, 1 << 62),
            "processes": (1, 1 << 22),
            "file_bytes": (1, 1 << 62),
            "disk_bytes": (1 << 20, memory or 1 << 62),
        }
        for name, (low, high) in bounds.items():
            value = getattr(self, name)
            kinds = (int, float) if name == "wall_s" else int  # the kernel's limits are whole numbers
            if isinstance(value, bool) or not isinstance(value, kinds) or not (low <= value <= high):
                whole = "a number" if name == "wall_s" else "a whole number"
                raise InterpError(f"sandbox limit {name} = {value!r} is not {whole} from {low} to {high}")


@dataclass(frozen=True)
class Execution:
    """The outcome of one run: `passed` when the program exited with status 0 within its limits (and, for
    `run_tests`, its tests ran to their end). `stdout` and `stderr` are the program's own (their last 4000
    bytes), which in namespaces mode cannot hold a host file the program could not see."""

    passed: bool
    reason: str
    returncode: int | None
    stdout: str
    stderr: str
    isolation: str


def _physical_memory() -> int | None:
    """The machine's memory in bytes (None where unknown): the most a run's tmpfs folder may be given."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


_NAMESPACES = (
    "--user",
    "--map-root-user",
    "--mount",
    "--net",
    "--ipc",
    "--uts",
    "--pid",
    "--fork",
    "--kill-child",
    "--mount-proc",
)


def _unshare() -> str | None:
    return shutil.which("unshare", path="/usr/bin:/bin:/usr/sbin:/sbin")


@functools.lru_cache(maxsize=1)
def isolation() -> str:
    """'namespaces' where a trial run in new user, mount, network and PID namespaces works, else 'guard'."""
    unshare = _unshare()
    if unshare is None or not sys.platform.startswith("linux"):
        return "guard"
    try:
        probe = subprocess.run(
            [unshare, *_NAMESPACES, "--", "/bin/true"], env={}, capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "guard"
    return "namespaces" if probe.returncode == 0 else "guard"


def require_isolation() -> str:
    """The isolation a run gets; refused in one line where it would be the guard and the caller has not opted in."""
    mode = isolation()
    if mode == "guard" and os.environ.get(OPT_IN) != "guard":
        raise InterpError(
            "code answers run only in the namespaces sandbox, which this machine lacks (util-linux `unshare` and "
            f"unprivileged user namespaces); {OPT_IN}=guard runs them unconfined, with the host's files in reach"
        )
    return mode


def _guard_prelude(limits: Limits) -> str:
    """Guard mode: the limits, set by the interpreter itself before the guard and the program (no preexec_fn,
    which is unsafe in a process with threads)."""
    cpu, memory, processes, files = limits.cpu_s, limits.memory_bytes, limits.processes, limits.file_bytes
    return (
        "import resource as _r\n"
        f"_r.setrlimit(_r.RLIMIT_CPU, ({cpu}, {cpu + 1}))  # SIGXCPU at the soft limit\n"
        f"_r.setrlimit(_r.RLIMIT_AS, ({memory}, {memory}))\n"
        f"_r.setrlimit(_r.RLIMIT_NPROC, ({processes}, {processes}))\n"
        f"_r.setrlimit(_r.RLIMIT_FSIZE, ({files}, {files}))\n"
        "_r.setrlimit(_r.RLIMIT_CORE, (0, 0))\n"
        "del _r\n"
    )


def _command(folder: Path, limits: Limits, mode: str) -> list[str]:
    if mode == "namespaces":
        unshare = _unshare() or "unshare"
        numbers = (limits.cpu_s, limits.memory_bytes, limits.processes, limits.file_bytes, limits.disk_bytes)
        return [
            unshare,
            *_NAMESPACES,
            "--",
            sys.executable,
            "-I",
            "-S",
            str(JAIL),
            str(folder),
            *map(str, numbers),
            unshare,
        ]
    scope = "{'__name__': '__main__', '__interp_guard__': 1}"
    run = f"exec(compile(open('solution.py').read(), 'solution.py', 'exec'), {scope})"
    program = _guard_prelude(limits) + GUARD + run
    return [sys.executable, "-I", "-S", "-c", program]


def _remove(folder: Path) -> None:
    def writable_then_retry(function, path, _exc) -> None:
        os.chmod(os.path.dirname(path) or path, 0o700)
        function(path)

    shutil.rmtree(folder, onerror=writable_then_retry)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(text: bytes, limit: int = 4000) -> str:
    return text[-limit:].decode("utf-8", errors="replace")


def _killed_by(returncode: int, last: str) -> int | None:
    """The signal that ended the program: a negative status (guard mode) or jail.py's 128 + N and its line."""
    if returncode < 0:
        return -returncode
    if returncode > 128 and last == f"killed by signal {returncode - 128}":
        return returncode - 128
    return None


def _last_error(stderr: str) -> str:
    """The exception line of the last traceback (`Name: message`), else the last non-blank line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        name = line.split(":", 1)[0]
        if name.isidentifier() and (
            name.endswith(("Error", "Exception", "Exit", "Interrupt")) or name == "killed by signal"
        ):
            return line
    return lines[-1] if lines else ""


def bounded(error: str) -> str:
    """An error line as a reason: its exception type and at most MESSAGE_CHARS characters of its message,
    printable, with absolute paths outside /sandbox replaced by "<path>"."""
    name, colon, message = error.partition(":")
    if not colon:
        name, message = "", error
    message = _PATH.sub("<path>", "".join(char if char.isprintable() else " " for char in message.strip()))
    if len(message) > MESSAGE_CHARS:
        message = message[:MESSAGE_CHARS] + "..."
    return f"{name[:80]}: {message}" if name and message else (name[:80] or message)


def _reason(returncode: int, stderr: str, limits: Limits) -> str:
    if returncode == 0:
        return "ok"
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if (returncode, last.split(" ")[0]) in ((SETUP_FAILED, "sandbox"), (LEFT_RUNNING, "left")):
        return bounded(last)
    if returncode == 128 + signal.SIGKILL and last == "CPU time limit":  # SIGXCPU ignored, SIGKILL at the hard limit
        return f"CPU time limit ({limits.cpu_s} s)"
    signal_number = _killed_by(returncode, last)
    if signal_number == signal.SIGXCPU:
        return f"CPU time limit ({limits.cpu_s} s)"
    if signal_number == signal.SIGXFSZ:
        return f"file size limit ({limits.file_bytes} bytes)"
    error = _last_error(stderr)
    if error.startswith("MemoryError") or "Cannot allocate memory" in error:
        return f"memory limit ({limits.memory_bytes / 2**30:g} GiB)"
    if "No space left on device" in error:
        return f"disk limit ({limits.disk_bytes / 2**20:g} MiB in all)"
    if error.startswith(("SyntaxError", "IndentationError", "TabError")):
        return f"syntax error: {bounded(error)}"
    if signal_number is not None:
        return f"killed by signal {signal.Signals(signal_number).name}"
    return bounded(error) or f"exit status {returncode}"


@dataclass(frozen=True)
class _Finished:
    returncode: int | None  # None: timed out
    stdout: bytes
    stderr: bytes
    mode: str


def _launch(folder: Path, logs: Path, limits: Limits, mode: str, stdin: bytes) -> int | None:
    """The program started in `folder`, `stdin` written to it, waited for; its exit status or None (timed out)."""
    with open(logs / "stdout", "wb") as out, open(logs / "stderr", "wb") as err:
        process = subprocess.Popen(
            _command(folder, limits, mode),
            cwd=folder,
            env={},
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            start_new_session=True,
            close_fds=True,
        )
        try:
            process.stdin.write(stdin)
            process.stdin.close()
        except OSError:  # it ended before reading
            pass
        try:
            return process.wait(timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            return None
        finally:
            _kill_group(process)
            process.wait()


def _run(files: dict[str, str], limits: Limits, temp_root: Path | None, stdin: bytes = b"") -> _Finished:
    """`files` (solution.py the program) run in the sandbox; the folder and logs deleted afterwards."""
    mode = require_isolation()
    encoded = {name: text.encode("utf-8", errors="surrogatepass") for name, text in files.items()}
    folder = Path(tempfile.mkdtemp(prefix="interp-sandbox-", dir=temp_root))
    logs = Path(tempfile.mkdtemp(prefix="interp-sandbox-logs-", dir=temp_root))  # outside the program's reach
    try:
        for name, data in encoded.items():
            (folder / name).write_bytes(data)
        returncode = _launch(folder, logs, limits, mode, stdin)
        return _Finished(returncode, (logs / "stdout").read_bytes(), (logs / "stderr").read_bytes(), mode)
    finally:
        _remove(folder)
        shutil.rmtree(logs, ignore_errors=True)


def _execution(run: _Finished, limits: Limits, stdout: bytes | None = None) -> Execution:
    out, err = _tail(run.stdout if stdout is None else stdout), _tail(run.stderr)
    if run.returncode is None:
        return Execution(False, f"timed out after {limits.wall_s:g} s", None, out, err, run.mode)
    reason = _reason(run.returncode, err, limits)
    return Execution(run.returncode == 0, reason, run.returncode, out, err, run.mode)


def run_python(program: str, limits: Limits | None = None, *, temp_root: Path | None = None) -> Execution:
    """Run `program` (Python source) in the sandbox; passed when it exits with status 0. Never raises for
    anything the program does (refused in one line where the sandbox is missing, see `require_isolation`).
    Its folder and logs are made under `temp_root` (default: the system's temporary folder), deleted at the end.
    It runs as one process (`serve.forbid_new_processes`: fork and the like fail)."""
    limits = limits or Limits()
    files = {"solution.py": SERVE.read_text(encoding="utf-8"), "program.py": program}
    return _execution(_run(files, limits, temp_root), limits)


def run_tests(code: str, tests: str, limits: Limits | None = None, *, temp_root: Path | None = None) -> Execution:
    """Run an answer's `code` in the sandbox and its `tests` outside it, in a trusted process of their own
    (`serve.py test`), every call the tests make to the answer's names sent over a pipe as plain data; passed
    only when the tests ran to their end and every call got a plain reply. The answer's prints are its stderr
    (its stdout is the pipe); `stdout` is empty."""
    limits = limits or Limits()
    mode = require_isolation()
    folder = Path(tempfile.mkdtemp(prefix="interp-sandbox-", dir=temp_root))
    logs = Path(tempfile.mkdtemp(prefix="interp-sandbox-logs-", dir=temp_root))  # outside the answer's reach
    try:
        (folder / "solution.py").write_bytes(SERVE.read_bytes())
        (folder / "answer.py").write_bytes(code.encode("utf-8", errors="surrogatepass"))
        (logs / "tests.py").write_bytes(tests.encode("utf-8", errors="surrogatepass"))  # never in the sandbox
        return _graded(folder, logs, limits, mode)
    finally:
        _remove(folder)
        shutil.rmtree(logs, ignore_errors=True)


def _graded(folder: Path, logs: Path, limits: Limits, mode: str) -> Execution:
    """The answer's sandbox and the tests' process started with two pipes between them, the tests waited for
    (the wall clock), both process groups killed at the end; the verdict as an Execution."""
    deadline = time.monotonic() + limits.wall_s
    to_answer, from_tests = os.pipe()
    from_answer, to_tests = os.pipe()
    pipes = [to_answer, from_tests, from_answer, to_tests]
    started: list[subprocess.Popen] = []
    try:
        runner = [sys.executable, "-I", "-S", str(SERVE), "test", str(logs / "tests.py"), str(logs / "verdict")]
        with open(logs / "stderr", "wb") as err, open(logs / "tests.err", "wb") as tests_err:
            for command, cwd, stdin, stdout, stderr in (
                (_command(folder, limits, mode), folder, to_answer, to_tests, err),
                (runner, logs, from_answer, from_tests, tests_err),
            ):
                started.append(
                    subprocess.Popen(
                        command,
                        cwd=cwd,
                        env={},
                        stdin=stdin,
                        stdout=stdout,
                        stderr=stderr,
                        start_new_session=True,
                        close_fds=True,
                    )
                )
        _close(pipes)
        answer, tester = started
        try:
            tester.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            return Execution(
                False, f"timed out after {limits.wall_s:g} s", None, "", _tail(_read(logs / "stderr")), mode
            )
        verdict = _verdict(logs / "verdict", logs / "tests.err")
        ended = verdict == ("gone", GONE)
        if ended:  # the answer ended of itself: its reason (a limit, a crash) is the one to give
            try:
                answer.wait(timeout=min(1.0, max(deadline - time.monotonic(), 0.01)))
            except subprocess.TimeoutExpired:
                pass
        returncode = answer.poll()
    finally:
        for process in started:
            _kill_group(process)
            process.wait()
        _close(pipes)  # once: another thread may have the same numbers for its own pipes afterwards
    err = _tail(_read(logs / "stderr"))
    if verdict[0] == "passed":
        return Execution(True, "ok", returncode, "", err, mode)
    if ended and returncode not in (None, 0):
        return Execution(False, _reason(returncode, err, limits), returncode, "", err, mode)
    return Execution(False, bounded(verdict[1]), returncode, "", err, mode)


def _close(fds: list[int]) -> None:
    """Close each of `fds` and empty the list, so that none is closed twice."""
    while fds:
        os.close(fds.pop())


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _verdict(path: Path, errors: Path) -> tuple[str, str]:
    """The tests' process's verdict ("passed" | "failed" | "gone", reason); a failure where it wrote none."""
    try:
        kind, reason = json.loads(path.read_text())
    except (OSError, ValueError, TypeError):
        last = _last_error(_tail(_read(errors)))
        return "failed", f"the tests' process failed: {last or 'no verdict'}"
    return str(kind), str(reason)
