"""The OpenAI-compatible HTTP gold judge.

Fast tests talk to a scripted HTTP server in a thread on 127.0.0.1 (real sockets, real httpx): label
logprobs in both orders, retries with backoff, a closed port, 5xx and 429, tokens that are not labels,
servers without logprobs, the API key's path, and a two-batch gold run that keeps the first batch when the
second fails. The slow test starts a real `llama-cpp-python` server on the packaged SmolLM2 GGUF and compares
its verdicts with the local HF judge on the same prompts.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

import pytest

import interp.run.gold.http as http_judge_module
from interp.core.prompts import judge_prompt
from interp.data import Item, builtin_items
from interp.errors import InterpError
from interp.run.gold import GoldJudge, Pair
from interp.run.gold.http import HTTPJudge, HTTPOptions, judge_raw_prompt, judge_user_message
from tests.helpers.servers import closed_port

ITEM = Item("help-x", "helpfulness", "Give three tips for falling asleep faster.", "Keep a regular schedule.")
GOOD = "Keep a regular schedule, avoid screens before bed, and keep the bedroom cool and dark."
BAD = "Bananas are yellow."
SECRET = "sk-test-0123456789abcdefSECRET"


# ---- a scripted OpenAI-compatible server -------------------------------------------------------------


class FakeServer:
    """`handler(path, headers, body) -> (status, payload, headers)`; every request is recorded."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.handler: Callable = lambda path, headers, body: (200, chat_answer({"A": 0.5, "B": 0.5}), {})
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                status, payload, headers = server.handler(self.path, dict(self.headers), body)
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    fake = FakeServer()
    yield fake
    fake.close()


def chat_answer(top: dict[str, float] | None, content: str | None = None) -> dict:
    """A chat completion whose first token has these top probabilities (None: no logprobs at all)."""
    if top is None:
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content or ""}, "logprobs": None}]}
    first = max(top, key=top.get)
    entries = [{"token": token, "logprob": math.log(p), "bytes": None} for token, p in top.items()]
    logprobs = {"content": [{"token": first, "logprob": math.log(top[first]), "bytes": None, "top_logprobs": entries}]}
    return {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content or first}, "logprobs": logprobs}]
    }


def completion_answer(top: dict[str, float]) -> dict:
    first = max(top, key=top.get)
    logprobs = {
        "tokens": [first],
        "token_logprobs": [math.log(top[first])],
        "top_logprobs": [{token: math.log(p) for token, p in top.items()}],
        "text_offset": [0],
    }
    return {"choices": [{"index": 0, "text": first, "logprobs": logprobs, "finish_reason": "length"}]}


def user_text(body: dict) -> str:
    return body["messages"][0]["content"] if "messages" in body else body["prompt"]


def good_first(body: dict) -> bool:
    """Whether the good response sits in slot A of this request (order "ab" of the pair (GOOD, BAD))."""
    text = user_text(body)
    return text.rindex(GOOD) < text.rindex(BAD)


def judge(server: FakeServer, **kwargs) -> HTTPJudge:
    kwargs.setdefault("backoff_base", 0.001)
    return HTTPJudge("fake-judge", server.url, "fake-model", options=HTTPOptions(**kwargs))


# ---- prompts -------------------------------------------------------------------------------------------


def test_user_message_is_the_user_turn_of_the_local_chat_prompt(smollm2_tokenizer):
    for task, item in {i.task: i for i in builtin_items()}.items():
        message = judge_user_message(task, item.query, GOOD, BAD)
        local = judge_prompt(smollm2_tokenizer, task, item.query, GOOD, BAD, kind="post").text
        rendered = smollm2_tokenizer.apply_chat_template(
            [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True
        )
        assert rendered == local
        assert (
            judge_raw_prompt(task, item.query, GOOD, BAD)
            == judge_prompt(None, task, item.query, GOOD, BAD, kind="pre").text
        )


# ---- label probabilities ---------------------------------------------------------------------------


def test_reads_label_logprobs_in_both_orders(server):
    # order ab (good first): P(A) = 0.5 + 0.1 (" A" counts as A) vs P(B) = 0.2 -> 0.75
    # order ba (good second): P(A) = 0.3 vs P(B) = 0.3 + 0.05 ("B\n") + 0.05 -> P(B) = 0.4 / 0.7
    server.handler = lambda path, headers, body: (
        200,
        chat_answer(
            {"A": 0.5, " A": 0.1, "B": 0.2, "The": 0.1}
            if good_first(body)
            else {"A": 0.3, "B": 0.3, "B\n": 0.05, " B": 0.05, "I": 0.2}
        ),
        {},
    )
    j = judge(server)
    assert isinstance(j, GoldJudge)
    (p,) = j.p_slot_a([Pair(ITEM, GOOD, BAD)])
    assert p == pytest.approx(0.5 * (0.6 / 0.8 + 0.4 / 0.7))
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 2
    bodies = [r["body"] for r in server.requests]
    assert [good_first(b) for b in bodies] == [True, False]
    for body in bodies:
        assert body["model"] == "fake-model"
        assert (body["max_tokens"], body["temperature"], body["logprobs"], body["top_logprobs"]) == (1, 0, True, 20)
        assert body["messages"] == [{"role": "user", "content": user_text(body)}]
    assert user_text(bodies[0]) == judge_user_message(ITEM.task, ITEM.query, GOOD, BAD)
    assert j.stats == {
        "n_pairs": 1,
        "n_requests": 2,
        "n_attempts": 2,
        "n_retries": 0,
        "n_logprobs": 2,
        "n_one_label": 0,
        "n_no_logprobs": 0,
        "n_non_label": 0,
    }
    assert [(r["order"], r["source"]) for r in j.last_judgments] == [("ab", "logprobs"), ("ba", "logprobs")]
    assert j.last_judgments[0]["mass_a"] == pytest.approx(0.6)


def test_swapped_pair_gives_the_complement(server):
    server.handler = lambda path, headers, body: (
        200,
        chat_answer({"A": 0.7, "B": 0.2} if good_first(body) else {"A": 0.4, "B": 0.5}),
        {},
    )
    j = judge(server)
    forward, backward = j.p_slot_a([Pair(ITEM, GOOD, BAD), Pair(ITEM, BAD, GOOD)])
    assert forward == pytest.approx(1 - backward)
    assert 0.5 < forward < 1


def test_completions_mode_for_base_models(server):
    server.handler = lambda path, headers, body: (
        200,
        completion_answer({" A": 0.6, " B": 0.2, "\n": 0.1} if good_first(body) else {" A": 0.3, " B": 0.3}),
        {},
    )
    j = judge(server, mode="completions", top_logprobs=5)
    (p,) = j.p_slot_a([Pair(ITEM, GOOD, BAD)])
    assert p == pytest.approx(0.5 * (0.75 + 0.5))
    body = server.requests[0]["body"]
    assert server.requests[0]["path"] == "/v1/completions"
    assert body["prompt"] == judge_raw_prompt(ITEM.task, ITEM.query, GOOD, BAD)
    assert (body["max_tokens"], body["temperature"], body["logprobs"]) == (1, 0, 5)
    assert "messages" not in body and "top_logprobs" not in body


def test_concurrent_requests_keep_the_order(server):
    pairs = [Pair(ITEM, GOOD, BAD), Pair(ITEM, BAD, GOOD)] * 3
    server.handler = lambda path, headers, body: (
        200,
        chat_answer({"A": 0.7, "B": 0.2} if good_first(body) else {"A": 0.4, "B": 0.5}),
        {},
    )
    assert judge(server, concurrency=4).p_slot_a(pairs) == pytest.approx(judge(server).p_slot_a(pairs))


def test_tokens_that_are_not_labels_are_counted_and_reported(server, caplog):
    server.handler = lambda path, headers, body: (
        200,
        chat_answer({"The": 0.6, "I": 0.3} if good_first(body) else {"A": 0.2, "B": 0.6}),
        {},
    )
    j = judge(server)
    with caplog.at_level(logging.WARNING, logger="interp.http_judge"):
        (p,) = j.p_slot_a([Pair(ITEM, GOOD, BAD)])
    assert p == pytest.approx(0.5 * (0.5 + 0.75))  # the unlabelled order counts 0.5
    assert j.stats["n_non_label"] == 1 and j.stats["n_requests"] == 2 and j.stats["n_logprobs"] == 2
    assert j.flagged == [{"item_id": ITEM.id, "order": "ab", "source": "logprobs", "tokens": ["The", "I"]}]
    assert j.last_judgments[0]["source"] == "none"
    assert "1 of 2 judgments had neither A nor B among the top 20 tokens" in caplog.text


def test_only_one_label_in_the_top_list_is_counted(server):
    server.handler = lambda path, headers, body: (200, chat_answer({"A": 0.4, "The": 0.3}), {})
    j = judge(server)
    assert j.p_slot_a([Pair(ITEM, GOOD, BAD)]) == [0.5]  # A first: P(A)=1; swapped: P(B)=0
    assert j.stats["n_one_label"] == 2 and j.stats["n_non_label"] == 0


def test_without_logprobs_the_generated_label_counts_one_or_zero(server, caplog):
    server.handler = lambda path, headers, body: (200, chat_answer(None, "A" if good_first(body) else " B."), {})
    j = judge(server)
    with caplog.at_level(logging.WARNING, logger="interp.http_judge"):
        assert j.p_slot_a([Pair(ITEM, GOOD, BAD)]) == [1.0]
    assert j.stats["n_no_logprobs"] == 2 and j.stats["n_non_label"] == 0
    assert "2 of 2 judgments came without logprobs" in caplog.text
    server.handler = lambda path, headers, body: (200, chat_answer(None, "Answer" if good_first(body) else "B"), {})
    assert j.p_slot_a([Pair(ITEM, GOOD, BAD)]) == [0.5 * (0.5 + 1.0)]  # "Answer" is not the label A
    assert j.stats["n_no_logprobs"] == 4 and j.stats["n_non_label"] == 1
    assert j.flagged[-1] == {"item_id": ITEM.id, "order": "ab", "source": "text", "tokens": ["Answer"]}


def test_a_server_refusing_logprobs_is_an_error_unless_logprobs_are_off(server):
    def handler(path, headers, body):
        if "logprobs" in body:
            return 400, {"error": {"message": "logprobs is not supported by this model"}}, {}
        return 200, chat_answer(None, "B"), {}

    server.handler = handler
    with pytest.raises(InterpError, match=r"HTTP 400 Bad Request: .*not supported.* \(the server refused the logprobs"):
        judge(server).p_slot_a([Pair(ITEM, GOOD, BAD)])
    j = judge(server, logprobs=False)
    assert j.p_slot_a([Pair(ITEM, GOOD, BAD)]) == [0.5]  # "B" in both orders: pure position bias
    assert ["logprobs" in r["body"] for r in server.requests] == [True, False, False]
    assert j.stats["n_no_logprobs"] == 2


# ---- failures --------------------------------------------------------------------------------------


def test_closed_port_retries_with_backoff_then_one_line_error(monkeypatch):
    delays: list[float] = []
    monkeypatch.setattr(http_judge_module.time, "sleep", delays.append)
    port = closed_port()
    j = HTTPJudge(
        "gold-x",
        f"http://127.0.0.1:{port}/v1",
        "m",
        options=HTTPOptions(retries=4, backoff_base=0.01, backoff_cap=0.05),
    )
    with pytest.raises(InterpError) as raised:
        j.p_slot_a([Pair(ITEM, GOOD, BAD)])
    message = str(raised.value)
    assert message.startswith(
        f"HTTP judge gold-x at http://127.0.0.1:{port}/v1/chat/completions unreachable after 5 attempts: "
    )
    assert "ConnectError" in message and "\n" not in message
    assert delays == [0.01, 0.02, 0.04, 0.05]  # exponential, capped
    assert j.stats["n_attempts"] == 5 and j.stats["n_retries"] == 4 and j.stats["n_requests"] == 0
    assert raised.value.__cause__ is None and raised.value.__context__ is None


def test_real_backoff_sleeps():
    port = closed_port()
    j = HTTPJudge("gold-x", f"http://127.0.0.1:{port}/v1", "m", options=HTTPOptions(retries=2, backoff_base=0.05))
    start = time.perf_counter()
    with pytest.raises(InterpError, match="unreachable after 3 attempts"):
        j.p_slot_a([Pair(ITEM, GOOD, BAD)])
    assert time.perf_counter() - start >= 0.05 + 0.1


def test_503_then_success(server):
    calls = []

    def handler(path, headers, body):
        calls.append(1)
        if len(calls) <= 2:
            return 503, {"error": "loading model"}, {}
        if len(calls) == 3:
            return 429, {"error": "rate limited"}, {"Retry-After": "0"}
        return 200, chat_answer({"A": 0.8, "B": 0.2} if good_first(body) else {"A": 0.2, "B": 0.8}), {}

    server.handler = handler
    j = judge(server, retries=3)
    assert j.p_slot_a([Pair(ITEM, GOOD, BAD)]) == [pytest.approx(0.8)]
    assert j.stats["n_attempts"] == 5 and j.stats["n_retries"] == 3 and j.stats["n_requests"] == 2


def test_persistent_5xx_is_unreachable(server):
    server.handler = lambda path, headers, body: (502, "bad gateway\nupstream down", {})
    j = judge(server, retries=2)
    with pytest.raises(InterpError) as raised:
        j.p_slot_a([Pair(ITEM, GOOD, BAD)])
    assert str(raised.value) == (
        f"HTTP judge fake-judge at {server.url}/chat/completions unreachable after 3 attempts: "
        "HTTP 502 Bad Gateway: bad gateway upstream down"
    )
    assert len(server.requests) == 3


def test_client_errors_and_malformed_answers_fail_at_once(server):
    server.handler = lambda path, headers, body: (404, {"error": "model 'fake-model' not found"}, {})
    with pytest.raises(InterpError, match=r"HTTP 404 Not Found: .*model 'fake-model' not found"):
        judge(server).p_slot_a([Pair(ITEM, GOOD, BAD)])
    assert len(server.requests) == 1
    server.handler = lambda path, headers, body: (200, {"object": "error"}, {})
    with pytest.raises(InterpError, match="unexpected answer"):
        judge(server).p_slot_a([Pair(ITEM, GOOD, BAD)])
    server.handler = lambda path, headers, body: (200, "<html>proxy login</html>", {})
    with pytest.raises(InterpError, match="answer is not JSON"):
        judge(server).p_slot_a([Pair(ITEM, GOOD, BAD)])


def test_bad_settings_are_refused():
    with pytest.raises(InterpError, match="unknown mode"):
        HTTPJudge("j", "http://127.0.0.1:1/v1", "m", options=HTTPOptions(mode="embeddings"))
    with pytest.raises(InterpError, match="must start with http"):
        HTTPJudge("j", "127.0.0.1:1/v1", "m")


# ---- the API key -----------------------------------------------------------------------------------


def test_api_key_is_sent_but_never_shown(server, monkeypatch, caplog):
    monkeypatch.setenv("INTERP_TEST_JUDGE_KEY", SECRET)
    server.handler = lambda path, headers, body: (200, chat_answer({"A": 0.6, "B": 0.4}), {})
    j = judge(server, api_key_env="INTERP_TEST_JUDGE_KEY", retries=1)
    with caplog.at_level(logging.DEBUG):
        j.p_slot_a([Pair(ITEM, GOOD, BAD)])
    assert {r["headers"]["Authorization"] for r in server.requests} == {f"Bearer {SECRET}"}
    shown = [repr(j), str(j), repr(vars(j)), caplog.text]

    # a server that echoes the key in its error, a closed port, a missing variable: none shows the key
    server.handler = lambda path, headers, body: (401, {"error": f"invalid key {headers['Authorization']}"}, {})
    with pytest.raises(InterpError) as unauthorized:
        j.p_slot_a([Pair(ITEM, GOOD, BAD)])
    assert "HTTP 401 Unauthorized" in str(unauthorized.value) and "invalid key Bearer ***" in str(unauthorized.value)
    server.handler = lambda path, headers, body: (500, {"error": f"crashed on {headers['Authorization']}"}, {})
    with pytest.raises(InterpError) as crashed:
        j.p_slot_a([Pair(ITEM, GOOD, BAD)])
    closed = HTTPJudge(
        "k",
        f"http://127.0.0.1:{closed_port()}/v1",
        "m",
        options=HTTPOptions(api_key_env="INTERP_TEST_JUDGE_KEY", retries=0),
    )
    with pytest.raises(InterpError) as unreachable:
        closed.p_slot_a([Pair(ITEM, GOOD, BAD)])
    monkeypatch.delenv("INTERP_TEST_JUDGE_KEY")
    with pytest.raises(InterpError, match="environment variable INTERP_TEST_JUDGE_KEY .* is not set"):
        judge(server, api_key_env="INTERP_TEST_JUDGE_KEY")
    for error in (unauthorized.value, crashed.value, unreachable.value):
        shown += [str(error), repr(error), repr(error.args)]
        assert error.__context__ is None and error.__cause__ is None
    shown.append(caplog.text)
    assert not [text for text in shown if SECRET in text]


def test_credentials_in_the_url_are_hidden():
    j = HTTPJudge("j", "https://user:pw@api.example.org/v1?key=abc", "m")
    assert j.endpoint == "https://user:pw@api.example.org/v1/chat/completions?key=abc"
    assert "pw" not in repr(j) and "abc" not in repr(j)


# ---- wiring ----------------------------------------------------------------------------------------


def test_from_config():
    from interp.config import HTTPJudgeConfig

    cfg = HTTPJudgeConfig(name="vllm-70b", base_url="http://127.0.0.1:8000/v1/", model="llama", timeout=5, retries=2)
    j = HTTPJudge.from_config(cfg)
    assert (j.name, j.endpoint, j.model, j.timeout, j.retries, j.mode) == (
        "vllm-70b",
        "http://127.0.0.1:8000/v1/chat/completions",
        "llama",
        5.0,
        2,
        "chat",
    )


def test_gold_run_keeps_finished_batches_when_the_server_goes_away(server, tmp_path, monkeypatch):
    from interp.config import GoldConfig, HTTPJudgeConfig, RunConfig
    from interp.run.pipeline import run_gold_step
    from interp.run.store import RunDir
    from interp.storage import read_jsonl

    monkeypatch.setattr(HTTPJudge, "backoff_base", 0.001)
    items = builtin_items()[:10]  # gold batches of max(batch_size, 8) = 8: two batches, 16 + 4 requests
    models = ("model-one", "model-two")
    responses = {models[0]: {i.id: GOOD for i in items}, models[1]: {i.id: BAD for i in items}}
    cfg = HTTPJudgeConfig(name="remote", base_url=server.url, model="fake-model", retries=1)
    config = RunConfig(n=10, models=models, gold=GoldConfig(reference=False, http=[cfg]))
    paths = RunDir(tmp_path / "run")
    up = {"requests_left": 16}

    def handler(path, headers, body):
        if up["requests_left"] <= 0:
            return 503, {"error": "down"}, {}
        up["requests_left"] -= 1
        return 200, chat_answer({"A": 0.9, "B": 0.1} if good_first(body) else {"A": 0.3, "B": 0.7}), {}

    server.handler = handler
    with pytest.raises(InterpError, match="HTTP judge remote at .* unreachable after 2 attempts: HTTP 503"):
        run_gold_step(config, paths, items, responses, {}, progress=False)
    kept = read_jsonl(paths.gold)
    assert [r["item_id"] for r in kept] == [i.id for i in items[:8]]
    assert [r["p_first_model"] for r in kept] == [pytest.approx(0.8)] * 8

    up["requests_left"] = 100
    server.requests.clear()
    gold = run_gold_step(config, paths, items, responses, {}, progress=False)
    assert len(server.requests) == 4  # only the two unfinished items, both orders
    assert gold == {"remote": [pytest.approx(0.8)] * 10}
    assert [r["item_id"] for r in read_jsonl(paths.gold)] == [i.id for i in items]


# ---- a real llama-cpp-python server ----------------------------------------------------------------


@pytest.mark.slow
def test_real_llama_cpp_server_agrees_with_the_local_judge(llama_server, smollm2):
    from interp.core.backends import make_backend
    from interp.core.judge import judge_batch, label_tokens
    from interp.core.spans import tokenize_prompt

    items = {i.id: i for i in builtin_items()}
    pairs = [
        Pair(items["help-001"], items["help-001"].reference, "I don't know. Maybe ask someone else."),
        Pair(
            items["fact-001"],
            items["fact-001"].reference,
            "I am not sure, maybe the answer is something else entirely.",
        ),
        Pair(items["trans-001"], items["trans-001"].reference, "The cat is sleeping on the red sofa in the garden."),
    ]
    j = HTTPJudge("llama-cpp-smollm2", llama_server, "smollm2", options=HTTPOptions(timeout=300, retries=2))
    remote = j.p_slot_a(pairs)
    assert all(0.0 <= p <= 1.0 for p in remote)
    assert j.stats["n_pairs"] == 3 and j.stats["n_requests"] == 6 == j.stats["n_logprobs"] + j.stats["n_no_logprobs"]
    assert j.stats["n_no_logprobs"] == 0  # this server does return chat logprobs
    assert j.stats["n_attempts"] == 6 + j.stats["n_retries"]
    assert [r["order"] for r in j.last_judgments] == ["ab", "ba"] * 3

    model = smollm2
    backend, labels = make_backend(model, "hf"), label_tokens(model.tokenizer)
    local_orders = []
    for pair in pairs:
        prompts = [
            tokenize_prompt(
                model.tokenizer, judge_prompt(model.tokenizer, pair.item.task, pair.item.query, a, b, kind="post")
            )
            for a, b in ((pair.response_a, pair.response_b), (pair.response_b, pair.response_a))
        ]
        local_orders += judge_batch(backend, prompts, labels, readout=None)
    local = [0.5 * (local_orders[2 * i].probs["A"] + local_orders[2 * i + 1].probs["B"]) for i in range(len(pairs))]

    # llama.cpp runs the Q4_1 weights with 8-bit quantised activations; HF runs the same weights dequantised
    # to float32; and the server lists only the top 20 tokens, so a label below them counts 0 (HF's P(B) of
    # ~0.003-0.009 becomes exactly 0 when "B" is not listed). Measured on 12 builtin pairs (these 3 and 9 more,
    # 24 orders): P(first better) within 0.022 of HF (mean 0.004; the largest gap is that truncation:
    # 0.5 * (0.949 + 0) vs 0.5 * (0.9525 + 0.0415)); the raw P(A) within -16 % / +11 % relative; the
    # renormalised P(A), where both labels are listed, within 0.020; the top token the same in 22 of 24
    # orders (the other two are near-ties of "A" and "You" at ~0.15 each). SmolLM2-135M answers "A" in either
    # order, so every P(first better) sits near 0.5 and the verdict direction is mostly position noise.
    # Tolerances, about twice the measured gaps: 0.05 absolute, 35 % relative, top token in 4 of 6 orders.
    for p_remote, p_local in zip(remote, local, strict=False):
        assert p_remote == pytest.approx(p_local, abs=0.05)
    same_top = 0
    for remote_order, local_order in zip(j.last_judgments, local_orders, strict=False):
        same_top += remote_order["top_token"].strip() == model.tokenizer.decode([local_order.top_token]).strip()
        p_a_local = local_order.probs["A"] * local_order.label_mass
        assert remote_order["mass_a"] == pytest.approx(p_a_local, rel=0.35)
        if remote_order["mass_b"] > 0:  # both labels among the top 20: the renormalised P(A) is comparable
            assert remote_order["p_a"] == pytest.approx(local_order.probs["A"], abs=0.05)
    assert same_top >= 4
    # where the local judge leans clearly one way, the server's verdict leans the same way
    for p_remote, p_local in zip(remote, local, strict=False):
        if abs(p_local - 0.5) > 0.05:
            assert (p_remote > 0.5) == (p_local > 0.5)
