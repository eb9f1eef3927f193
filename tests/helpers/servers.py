"""A real OpenAI-compatible server for the tests: llama-cpp-python's, on the packaged SmolLM2 GGUF."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def closed_port() -> int:
    """A local port nothing listens on (free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def llama_server(log_dir: Path, *, n_ctx: int = 1024):
    """`python -m llama_cpp.server` on the packaged SmolLM2 GGUF, on 127.0.0.1; yields its base URL (…/v1);
    always terminated. Raises RuntimeError with the log's tail when it does not come up within 120 s."""
    from interp.core.models import ALIASES, alias_gguf_path

    gguf = alias_gguf_path(ALIASES["smollm2-135m-instruct"])
    port = closed_port()
    log_path = Path(log_dir) / "server.log"
    # n_ctx 1024, not 2048: judge prompts here are < 350 tokens, and llama-cpp-python 0.3.36 takes the
    # log-softmax of its whole n_ctx x vocab score buffer on every request that asks for logprobs
    # (measured 3.5 s at 2048 vs 0.3 s at 1024 on this 2-core machine).
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        "2",
    ]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    "llama_cpp.server exited with code "
                    f"{process.returncode}:\n{log_path.read_text(errors='replace')[-2000:]}"
                )
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"llama_cpp.server did not answer on {base_url} within 120 s:\n{log_path.read_text()[-2000:]}"
                )
            time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
