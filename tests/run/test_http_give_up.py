"""A server that hangs: once one request has failed for good, the client sends no other (no pool keeps retrying)."""

from __future__ import annotations

import socket
import threading

import pytest

from interp.config import HTTPJudgeConfig
from interp.data import builtin_items
from interp.errors import InterpError
from interp.run.server_responses import server_responses


class HangingServer:
    """Accepts connections and never answers; counts them (one per HTTP attempt: a timed-out one is closed)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def close(self) -> None:
        self.sock.close()
        for connection in self.accepted:
            connection.close()


def test_a_hanging_server_costs_one_item_s_attempts_not_the_whole_pool_s(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    server = HangingServer()
    try:
        endpoint = HTTPJudgeConfig(
            name="hanging",
            base_url=f"http://127.0.0.1:{server.port}/v1",
            model="m",
            timeout=0.3,
            retries=1,
            concurrency=1,
        )
        with pytest.raises(InterpError, match="unreachable after 2 attempts"):
            server_responses(endpoint, builtin_items()[:3], progress=False)
        assert len(server.accepted) == 2  # retries + 1 for the first item; the other two items are never sent
    finally:
        server.close()


def test_after_one_request_failed_for_good_no_other_is_sent(tmp_path):
    """The pool's race (a worker takes the next item before the pool is shut down) cannot cost requests: the
    client itself refuses to send once one request failed for good (whichever worker asks)."""
    from interp.run.gold.http import HTTPJudge, HTTPOptions

    server = HangingServer()
    try:
        client = HTTPJudge(
            "hanging",
            f"http://127.0.0.1:{server.port}/v1",
            "m",
            options=HTTPOptions(timeout=0.3, retries=1, backoff_base=0.01),
        )
        with pytest.raises(InterpError, match="unreachable after 2 attempts"):
            client.post({"model": "m"})
        assert len(server.accepted) == 2
        errors = []
        worker = threading.Thread(
            target=lambda: errors.append(pytest.raises(InterpError, client.post, {"model": "m"}).value)
        )
        worker.start()
        worker.join()
        assert len(server.accepted) == 2 and "unreachable after 2 attempts" in str(
            errors[0]
        )  # the same line, nothing sent
        client.close()
    finally:
        server.close()
