"""Many `interp` command lines at the price of one import: a server process imports `interp.cli` once, then
forks one child per command line, which runs `interp.cli.main` with its stdout and stderr sent to files and
exits with its code. A child is a process of its own, as `python -m interp.cli` would be (its state dies with
it), minus the ~5 s of imports a fresh interpreter pays on the 2-core CI machine.

    results = run_forked([(args, cwd), ...], parallel=3)   # [(exit code, stdout, stderr), ...] in order

The server is this module run as `python -m tests.helpers.forked_cli`, reading the jobs as JSON on stdin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from tests.helpers import REPO


def run_forked(jobs: Sequence[tuple[Sequence[str], Path]], *, parallel: int = 3, env: dict | None = None) -> list[tuple[int, str, str]]:
    with tempfile.TemporaryDirectory(prefix="forked-cli-") as folder:
        spec = [{"args": list(args), "cwd": str(cwd), "out": f"{folder}/{i}.out", "err": f"{folder}/{i}.err"} for i, (args, cwd) in enumerate(jobs)]
        server = subprocess.run(
            [sys.executable, "-m", "tests.helpers.forked_cli", str(parallel)],
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, **(env or {})},
            timeout=1800,
        )
        if server.returncode != 0:
            raise RuntimeError(f"forked-cli server failed ({server.returncode}):\n{server.stderr[-3000:]}")
        codes = json.loads(server.stdout.strip().splitlines()[-1])
        return [(code, Path(job["out"]).read_text(), Path(job["err"]).read_text()) for code, job in zip(codes, spec)]


def _child(job: dict) -> None:
    """In the forked child: run one command line, never return."""
    code = 1
    try:
        os.chdir(job["cwd"])
        for fd, path in ((1, job["out"]), (2, job["err"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        from interp.cli import main

        sys.argv = ["interp", *job["args"]]
        try:
            main(job["args"])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _serve(jobs: list[dict], parallel: int) -> list[int]:
    import interp.cli  # noqa: F401  (imported once, before any fork; so is what most commands load next)
    import interp.run.pipeline  # noqa: F401

    codes: dict[int, int] = {}
    running: dict[int, int] = {}  # pid -> job index
    pending = list(range(len(jobs)))
    while pending or running:
        while pending and len(running) < parallel:
            index = pending.pop(0)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(jobs[index])
            running[pid] = index
        pid, status = os.wait()
        codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
    return [codes[i] for i in range(len(jobs))]


if __name__ == "__main__":
    print(json.dumps(_serve(json.loads(sys.stdin.read()), int(sys.argv[1]))))
