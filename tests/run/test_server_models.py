"""Models that are not local weights: answers imported from files, answers and DBG judging from a server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from interp.config import HTTPJudgeConfig, RunConfig, run_config_from_dict
from interp.data import builtin_items, sample_items
from interp.errors import InterpError
from interp.run.imported import imported_responses
from interp.run.pipeline import run_dbg
from interp.run.responses import Decoding, response_cache_path
from interp.run.server_responses import (
    server_cache_key,
    server_prompt,
    server_responses,
)
from interp.run.store import RunDir
from tests.helpers import REPO
from tests.run.test_gold_http import FakeServer

ITEMS = sample_items(builtin_items(), n=3, seed=0)


def alpaca_outputs(path, items, generator="gpt-x"):
    path.write_text(
        json.dumps(
            [{"instruction": f"  {i.query} ", "output": f"answer to {i.id}", "generator": generator} for i in items]
        )
    )
    return path


def test_alpacaeval_model_outputs_match_items_by_instruction(tmp_path):
    path = alpaca_outputs(tmp_path / "model_outputs.json", list(reversed(ITEMS)))
    responses = imported_responses(path, ITEMS, "gpt-x", max_words=200)
    assert [(r.item_id, r.text, r.model) for r in responses] == [(i.id, f"answer to {i.id}", "gpt-x") for i in ITEMS]


def test_jsonl_answers_by_item_id_and_model(tmp_path):
    path = tmp_path / "answers.jsonl"
    lines = [{"item_id": i.id, "model": m, "text": f"{m} on {i.id}"} for i in ITEMS for m in ("x", "y")]
    path.write_text("\n".join(json.dumps(line) for line in lines))
    assert [r.text for r in imported_responses(path, ITEMS, "y", max_words=200)] == [f"y on {i.id}" for i in ITEMS]


@pytest.mark.parametrize(
    "name,text,message",
    [
        ("outputs.json", json.dumps([{"instruction": "something else", "output": "x"}]), "has no answer"),
        ("outputs.json", json.dumps({"instruction": "x"}), "expected a JSON list"),
        ("outputs.json", "[{", "not valid JSON"),
        ("answers.jsonl", json.dumps({"text": "x"}), "item_id"),
        ("answers.txt", "x", "use a .json file"),
    ],
)
def test_bad_response_files_are_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InterpError, match=message):
        imported_responses(path, ITEMS, "x", max_words=200)


def test_config_checks_servers_and_imports():
    server = {"name": "s", "base_url": "http://127.0.0.1:1/v1", "model": "m"}
    with pytest.raises(InterpError, match="neither one of the models"):
        run_config_from_dict({"imports": {"elsewhere": "f.json"}})
    with pytest.raises(InterpError, match="no weights or server"):
        run_config_from_dict({"models": ["a", "b"], "imports": {"a": "f.json"}, "judges": ["a"]})
    config = run_config_from_dict({"models": ["s", "b"], "imports": {"b": "f.json"}, "servers": [server]})
    assert config.judge_specs == ["s"]  # imported answers cannot judge
    moved = run_config_from_dict(
        {
            "models": ["s", "b"],
            "imports": {"b": "f.json"},
            "servers": [server | {"base_url": "http://10.0.0.2/v1", "concurrency": 8}],
        }
    )
    assert moved.identity() == config.identity()  # where the server lives is not the run's identity


def test_a_local_judge_reads_attention_over_imported_answers(tmp_path, tiny_llama_dir):
    x, y = alpaca_outputs(tmp_path / "x.json", ITEMS, "x"), tmp_path / "y.jsonl"
    y.write_text("\n".join(json.dumps({"item_id": i.id, "response": f"I think {i.id} is hard."}) for i in ITEMS))
    config = RunConfig(
        n=3,
        models=("x", "y"),
        imports={"x": str(x), "y": str(y)},
        judges=[str(tiny_llama_dir)],
        n_boot=10,
        batch_size=4,
    )
    run_dbg(config, tmp_path / "run", progress=False)
    paths = RunDir(tmp_path / "run")
    assert paths.read_responses()["x"] == {i.id: f"answer to {i.id}" for i in paths.read_items()}
    assert len(paths.read_judgments()) == 6 and list(paths.root.glob("attention*"))


def test_server_answers_are_cached_and_never_asked_twice(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    server = FakeServer()
    server.handler = lambda path, headers, body: (
        200,
        {"choices": [{"message": {"content": "  An answer.  "}}], "usage": {"completion_tokens": 3}},
        {},
    )
    endpoint = HTTPJudgeConfig(name="served", base_url=server.url, model="m", concurrency=2)
    first = server_responses(endpoint, ITEMS, Decoding(), progress=False)
    assert [r.text for r in first] == ["An answer."] * 3 and len(server.requests) == 3
    sent = sorted(r["body"]["messages"][0]["content"] for r in server.requests)
    assert sent == sorted(server_prompt(endpoint, i, Decoding()) for i in ITEMS)
    again = server_responses(
        endpoint.model_copy(update={"base_url": server.url + "/", "concurrency": 1}), ITEMS, Decoding(), progress=False
    )
    assert again == first and len(server.requests) == 3


def test_unreachable_server_fails_in_one_line_and_keeps_finished_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    server = FakeServer()
    asked: list[str] = []

    def handler(path, headers, body):
        asked.append(body["messages"][0]["content"])
        return (200, {"choices": [{"message": {"content": "ok"}}]}, {}) if len(asked) <= 2 else (503, "down", {})

    server.handler = handler
    endpoint = HTTPJudgeConfig(name="served", base_url=server.url, model="m", retries=2)
    monkeypatch.setattr("interp.run.gold.http.HTTPJudge.backoff_base", 0.001)
    with pytest.raises(InterpError, match="unreachable after 3 attempts"):
        server_responses(endpoint, ITEMS, Decoding(), progress=False)
    kept = [
        response_cache_path(server_cache_key(endpoint, server_prompt(endpoint, i, Decoding()), Decoding())).exists()
        for i in ITEMS
    ]
    assert kept == [True, True, False]


@pytest.mark.slow
def test_a_run_on_a_real_llama_cpp_server_resumes_after_sigkill_without_asking_again(
    tmp_path, llama_server, monkeypatch
):
    """Answers and DBG judging from the server; a SIGKILL mid-generation; the resume asks only for the
    answers not yet cached, then judges."""
    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))  # here and in the runs below
    env = dict(os.environ, TQDM_DISABLE="1")
    other = alpaca_outputs(tmp_path / "other.json", sample_items(builtin_items(), n=4, seed=0), "other")
    config = {
        "name": "served",
        "n": 4,
        "models": ["smollm2-server", "other"],
        "max_new_tokens": 48,
        "max_words": 40,
        "attention": "none",
        "n_boot": 10,
        "imports": {"other": str(other)},
        "servers": [
            {
                "name": "smollm2-server",
                "base_url": llama_server,
                "model": "smollm2",
                "concurrency": 1,
                "top_logprobs": 10,
            }
        ],
    }
    import tomli_w

    path = tmp_path / "run.toml"
    path.write_text(tomli_w.dumps(config))
    out = tmp_path / "run"
    command = [sys.executable, "-m", "interp.cli", "dbg", str(path), "--out", str(out), "--no-report"]
    endpoint = HTTPJudgeConfig(**config["servers"][0])
    items = sample_items(builtin_items(), n=4, seed=0)
    decoding = Decoding(max_words=40, max_new_tokens=48, batch_size=8)
    cached = [
        response_cache_path(server_cache_key(endpoint, server_prompt(endpoint, i, decoding), decoding)) for i in items
    ]
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while sum(p.exists() for p in cached) < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, process.stderr.read().decode()[-2000:]
    before = {p: p.stat().st_mtime_ns for p in cached if p.exists()}
    assert 2 <= len(before) < 4, "the kill should land mid-generation"
    finished = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert {p: p.stat().st_mtime_ns for p in before} == before  # finished answers were not asked for again
    assert all(p.exists() for p in cached)
    summary = json.loads((out / "summary.json").read_text())
    assert "dbg_hard" in summary["judges"]["smollm2-server"]
    records = RunDir(out).read_judgments("smollm2-server")
    assert len(records) == 8 and all(0 <= r.p_a <= 1 and abs(r.p_a + r.p_b - 1) < 1e-6 for r in records)
