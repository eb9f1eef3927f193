"""Many `interp` command lines at the price of one import: a server process imports the toolkit once, then
forks one child per command line, which runs `interp.cli.main` with its stdout and stderr sent to files and
exits with its code. A child is a process of its own, as `python -m interp.cli` would be (its state dies with
it), minus the seconds of imports a fresh interpreter pays on the 2-core CI machine.

    with ForkedCLI() as cli:                                  # the `forked_cli` session fixture holds one
        results = cli.run([(args, cwd), ...], parallel=3)     # [(exit code, stdout, stderr), ...] in order
        result = cli("models", "--json")                      # one command: .returncode, .stdout, .stderr

The server is this module run as `python -m tests.helpers.forked_cli`: it reads one batch of jobs per line of
JSON on stdin and answers each with one line of exit codes. It runs with HF_HUB_OFFLINE=1, as every caller
wants: the hub's settings are read when huggingface_hub is imported, which the server does once.
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


class ForkedCLI:
    """A running fork server (started on entering, stopped on exit)."""

    def __enter__(self) -> ForkedCLI:
        self._folder = tempfile.TemporaryDirectory(prefix="forked-cli-")
        self._batches = 0
        self._server_err = open(Path(self._folder.name) / "server.err", "w")  # noqa: SIM115 (closed on exit)
        self._server = subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.forked_cli"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._server_err,
            text=True,
            cwd=REPO,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        return self

    def run(self, jobs: Sequence[tuple], *, parallel: int = 3) -> list[tuple[int, str, str]]:
        """Each job is (args, cwd) or (args, cwd, env): variables the child sets before it runs (read at run time
        by the toolkit, as INTERP_CACHE is; not by what the server imported)."""
        self._batches += 1
        prefix = f"{self._folder.name}/{self._batches}-"
        spec = [
            {
                "args": list(job[0]),
                "cwd": str(job[1]),
                "env": dict(job[2]) if len(job) > 2 else {},
                "out": f"{prefix}{i}.out",
                "err": f"{prefix}{i}.err",
            }
            for i, job in enumerate(jobs)
        ]
        self._server.stdin.write(json.dumps({"jobs": spec, "parallel": parallel}) + "\n")
        self._server.stdin.flush()
        line = self._server.stdout.readline()
        if not line:
            error = Path(self._server_err.name).read_text()
            raise RuntimeError(f"forked-cli server failed ({self._server.poll()}):\n{error[-3000:]}")
        codes = json.loads(line)
        return [
            (code, Path(job["out"]).read_text(), Path(job["err"]).read_text())
            for code, job in zip(codes, spec, strict=False)
        ]

    def __call__(self, *args, cwd: Path = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
        """One command line (paths welcome), run as `interp ARGS` would be: .returncode, .stdout, .stderr."""
        args = [str(arg) for arg in args]
        ((code, stdout, stderr),) = self.run([(args, cwd, env or {})], parallel=1)
        return subprocess.CompletedProcess(["interp", *args], code, stdout, stderr)

    def __exit__(self, *exc) -> None:
        self._server.stdin.close()
        try:
            self._server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._server.kill()
            self._server.wait()
        self._server_err.close()
        self._folder.cleanup()


def _child(job: dict) -> None:
    """In the forked child: run one command line, never return."""
    code = 1
    try:
        os.chdir(job["cwd"])
        os.environ.update(job["env"])
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


def _import_what_commands_load() -> None:
    """Every module of the toolkit, and the libraries' parts the commands reach lazily (transformers' model
    classes, matplotlib's pyplot, peft), imported once before any fork: a child that imported them itself paid
    ~0.8 s a command line, 70 s over the bad-input catalogue."""
    import importlib
    import pkgutil

    import interp

    for module in pkgutil.walk_packages(interp.__path__, "interp."):
        if not module.name.endswith("__main__"):  # `python -m interp.cli` would run the CLI
            importlib.import_module(module.name)
    import matplotlib.pyplot  # noqa: F401
    import peft  # noqa: F401
    import transformers

    for name in (
        "AutoConfig",
        "AutoTokenizer",
        "AutoModelForCausalLM",
        "LlamaForCausalLM",
        "Gemma3ForCausalLM",
        "PreTrainedTokenizerFast",
    ):
        getattr(transformers, name)


def _serve(jobs: list[dict], parallel: int) -> list[int]:
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
    _import_what_commands_load()
    for line in sys.stdin:
        batch = json.loads(line)
        print(json.dumps(_serve(batch["jobs"], batch["parallel"])), flush=True)
