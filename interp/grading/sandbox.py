"""The code sandbox: model-written Python run in a subprocess that cannot harm the host, every failure a value.

One run (`run_python`) writes the program into a fresh temporary folder and runs `python -I -S` there (isolated
mode: no user site, no PYTHON* variables, no `site`) with an empty environment, in a session and process
group of its own, under limits on CPU time (RLIMIT_CPU), address space (RLIMIT_AS), processes (RLIMIT_NPROC),
file size (RLIMIT_FSIZE: its output files too) and wall-clock time. At the end the whole process group is
killed and the folder deleted; nothing the program started keeps running.

Isolation (`isolation()` says which one a run gets):
- "namespaces" (Linux with unprivileged user namespaces and util-linux `unshare`): new user, mount, network,
  IPC (no System V objects of the host), UTS and PID namespaces. No network interface but a down loopback (a connect
  fails); every mount but the sandbox folder read-only (`interp/grading/jail.py`), locked by a nested user namespace;
  the program runs under jail.py, PID 1 of its own PID namespace, so when it ends the kernel kills every process it
  left, and a program that leaves any running is not correct ("left N processes running"). RLIMIT_NPROC does not
  bind a caller that is root on the host (uid 0 is exempt); there the namespace's own pid_max (Linux >= 6.14) caps
  the processes at about 300.
- "guard" (no usable `unshare`): the same limits and process group, and a guard module run before the program
  that removes `socket` creation. It is not a security boundary: the filesystem is not confined (a write
  by absolute path reaches the host) and a determined program can undo the guard.

Reasons are short, one line: "ok", "timed out after 5 s", "CPU time limit (5 s)", "memory limit (1 GiB)",
"syntax error: ...", the last line of the traceback, or "killed by signal N".
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

JAIL = Path(__file__).with_name("jail.py")
SETUP_FAILED = 121  # jail.py's exit code when it could not confine the program
LEFT_RUNNING = 122  # jail.py's exit code when the program left processes running
GUARD = (
    "import socket as _s\n"
    "def _refuse(*args, **kwargs):\n"
    "    raise OSError('network access is disabled in the sandbox')\n"
    "for _name in ('socket', 'create_connection', 'create_server', 'socketpair', 'fromfd'):\n"
    "    setattr(_s, _name, _refuse)\n"
    "del _s, _name, _refuse\n"
)


@dataclass(frozen=True)
class Limits:
    """What one run may use. `memory_bytes` is address space (RLIMIT_AS), not resident memory."""

    cpu_s: int = 5
    wall_s: float = 10.0
    memory_bytes: int = 1 << 30
    processes: int = 64
    file_bytes: int = 1 << 20


@dataclass(frozen=True)
class Execution:
    """The outcome of one run: `passed` when the program exited with status 0 within its limits."""

    passed: bool
    reason: str
    returncode: int | None
    stdout: str
    stderr: str
    isolation: str


@functools.lru_cache(maxsize=1)
def isolation() -> str:
    """'namespaces' where a trial run in new user, mount, network and PID namespaces works, else 'guard'."""
    unshare = shutil.which("unshare", path="/usr/bin:/bin:/usr/sbin:/sbin")
    if unshare is None or not sys.platform.startswith("linux"):
        return "guard"
    try:
        probe = subprocess.run(
            [unshare, *_NAMESPACES, "--", "/bin/true"], env={}, capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "guard"
    return "namespaces" if probe.returncode == 0 else "guard"


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
        unshare = shutil.which("unshare", path="/usr/bin:/bin:/usr/sbin:/sbin") or "unshare"
        numbers = (limits.cpu_s, limits.memory_bytes, limits.processes, limits.file_bytes)
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
    program = _guard_prelude(limits) + GUARD + "exec(compile(open('solution.py').read(), 'solution.py', 'exec'))"
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


def _reason(returncode: int, stderr: str, limits: Limits) -> str:
    if returncode == 0:
        return "ok"
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if (returncode, last.split(" ")[0]) in ((SETUP_FAILED, "sandbox"), (LEFT_RUNNING, "left")):
        return last
    signal_number = _killed_by(returncode, last)
    if signal_number == signal.SIGXCPU:
        return f"CPU time limit ({limits.cpu_s} s)"
    if signal_number == signal.SIGXFSZ:
        return f"file size limit ({limits.file_bytes} bytes)"
    error = _last_error(stderr)
    if error.startswith("MemoryError") or "Cannot allocate memory" in error:
        return f"memory limit ({limits.memory_bytes / 2**30:g} GiB)"
    if error.startswith(("SyntaxError", "IndentationError", "TabError")):
        return f"syntax error: {error}"
    if signal_number is not None:
        return f"killed by signal {signal.Signals(signal_number).name}"
    return error or f"exit status {returncode}"


def run_python(program: str, limits: Limits | None = None, *, temp_root: Path | None = None) -> Execution:
    """Run `program` (Python source) in the sandbox; never raises for anything the program does. Its folder
    and logs are made under `temp_root` (default: the system's temporary folder) and deleted at the end."""
    limits = limits or Limits()
    mode = isolation()
    folder = Path(tempfile.mkdtemp(prefix="interp-sandbox-", dir=temp_root))
    logs = Path(
        tempfile.mkdtemp(prefix="interp-sandbox-logs-", dir=temp_root)
    )  # outside the folder the program can write
    try:
        (folder / "solution.py").write_text(program, encoding="utf-8")
        with open(logs / "stdout", "wb") as out, open(logs / "stderr", "wb") as err:
            process = subprocess.Popen(
                _command(folder, limits, mode),
                cwd=folder,
                env={},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                close_fds=True,
            )
            try:
                returncode: int | None = process.wait(timeout=limits.wall_s)
            except subprocess.TimeoutExpired:
                returncode = None
            finally:
                _kill_group(process)
                process.wait()
        stdout, stderr = _tail((logs / "stdout").read_bytes()), _tail((logs / "stderr").read_bytes())
    finally:
        _remove(folder)
        shutil.rmtree(logs, ignore_errors=True)
    if returncode is None:
        return Execution(False, f"timed out after {limits.wall_s:g} s", None, stdout, stderr, mode)
    return Execution(returncode == 0, _reason(returncode, stderr, limits), returncode, stdout, stderr, mode)
