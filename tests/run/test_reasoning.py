"""Reasoning authors (DBG paper, Table 2): reasoning blocks are removed before judging and kept on disk."""

from __future__ import annotations

import json

import pytest

from interp.config import RunConfig
from interp.data import Item
from interp.errors import InterpError
from interp.run.imported import imported_responses
from interp.run.pipeline import run_dbg
from interp.run.reasoning import KNOWN_MARKERS, markers_for_template, split_reasoning
from interp.run.store import RunDir
from interp.storage import read_jsonl

ITEMS = [  # id, query, reference, the reasoning author's raw answer (as R1-distill and Sky-T1 write them)
    (
        "capital",
        "What is the capital of France?",
        "Paris.",
        "<think>\nFrance... its capital is Paris.\n</think>\n\nThe capital of France is Paris.",
    ),
    (
        "boil",
        "At what temperature does water boil?",
        "100 C.",
        "Boiling point at sea level, 100 C I recall.\n</think>\nWater boils at 100 degrees Celsius.",
    ),
    (
        "legs",
        "How many legs does a spider have?",
        "Eight.",
        "<|begin_of_thought|>Arachnids: eight.<|end_of_thought|>\n<|begin_of_solution|>A spider has eight "
        "legs.<|end_of_solution|>",
    ),
    ("sky", "Why is the sky blue?", "Rayleigh.", "Air scatters blue light more than red."),
]
MARK = ("<think>", "</think>", "begin_of_thought", "end_of_thought", "begin_of_solution")


@pytest.mark.parametrize(
    ("raw", "answer", "removed"),
    [
        ("<think>a b</think>\n\nHello", "Hello", "a b"),
        ("inside already\n</think>\nAnswer", "Answer", "inside already"),  # R1-distill: the prompt opened the block
        ("Answer <think>cut off while reasoning", "Answer", "cut off while reasoning"),
        ("<think>one</think>A<think>two</think>B", "AB", "one\n\ntwo"),
        ("<think></think>ok", "ok", ""),  # Qwen3's empty block when thinking is off
        ("[THINK]plan[/THINK]Done.", "Done.", "plan"),
        ("no markers  ", "no markers  ", ""),
    ],
)
def test_split_reasoning(raw, answer, removed):
    split = split_reasoning(raw)
    assert (split.answer, split.removed) == (answer, removed)
    assert split_reasoning(split.answer).answer == split.answer  # idempotent: a judged answer has nothing left


def test_markers_come_from_the_chat_template():
    r1 = "{% if add_generation_prompt %}{{'<｜Assistant｜><think>\\n'}}{% endif %}{% set c = c.split('</think>')[-1] %}"
    assert markers_for_template(r1) == (("<think>", "</think>"),)
    own = "{{ '<reflect_step>' }}...{{ '</reflect_step>' }} <|begin_of_thought|>"
    found = markers_for_template(own)
    assert ("<|begin_of_thought|>", "<|end_of_thought|>") in found and (
        "<reflect_step>",
        "</reflect_step>",
    ) not in found
    custom = "{{ '<deep_reasoning>' }} ... {{ '</deep_reasoning>' }}"
    assert ("<deep_reasoning>", "</deep_reasoning>") in markers_for_template(custom)
    assert markers_for_template(None) == (KNOWN_MARKERS[0],)
    assert split_reasoning("<deep_reasoning>x</deep_reasoning>y", markers_for_template(custom)).answer == "y"


def test_an_answer_that_is_all_reasoning_is_refused_as_empty(tmp_path):
    path = tmp_path / "model_outputs.json"
    path.write_text(json.dumps([{"instruction": "q?", "output": "<think>only thoughts, cut off"}]))
    with pytest.raises(InterpError, match="empty \\(all of it reasoning\\)"):
        imported_responses(path, [Item("q", "helpfulness", "q?", "r")], "r1", max_words=20)


def test_reasoning_does_not_count_against_the_word_cap(tmp_path):
    path = tmp_path / "model_outputs.json"
    path.write_text(
        json.dumps([{"instruction": "q?", "output": "<think>" + "word " * 500 + "</think>The short answer."}])
    )
    [response] = imported_responses(path, [Item("q", "helpfulness", "q?", "r")], "r1", max_words=20)
    assert response.text == "The short answer." and len(response.reasoning.split()) == 500


def test_imported_think_blocks_are_judged_without_them_and_kept_on_disk(tmp_path, tiny_llama_dir, monkeypatch):
    from interp.run import judging

    (tmp_path / "items.jsonl").write_text(
        "".join(json.dumps({"id": i, "task": "helpfulness", "query": q, "reference": r}) + "\n" for i, q, r, _ in ITEMS)
    )
    (tmp_path / "model_outputs.json").write_text(
        json.dumps([{"instruction": q, "output": raw, "generator": "r1"} for _, q, _, raw in ITEMS])
    )
    prompts: list[str] = []
    real = judging.tokenized_judge_prompt
    monkeypatch.setattr(
        judging, "tokenized_judge_prompt", lambda *a, **k: prompts.append(real(*a, **k).text) or real(*a, **k)
    )
    judge = str(tiny_llama_dir)
    config = RunConfig(
        n=len(ITEMS),
        data=str(tmp_path / "items.jsonl"),
        models=(judge, "r1-distill"),
        judges=[judge],
        n_boot=20,
        device="cpu",
        max_new_tokens=4,
        max_words=30,
        imports={"r1-distill": str(tmp_path / "model_outputs.json")},
        empty_answers="judge",
        attention="none",
    )
    out = tmp_path / "run"
    summary = run_dbg(config, out, progress=False)
    assert len(prompts) == 2 * len(ITEMS)
    assert not [p for p in prompts if any(mark in p for mark in MARK)]  # no judge prompt holds reasoning or its tags
    assert any("The capital of France is Paris." in p for p in prompts)
    paths = RunDir(out)
    judged = paths.read_responses()["r1-distill"]
    assert judged["legs"] == "A spider has eight legs." and judged["sky"] == "Air scatters blue light more than red."
    kept = paths.read_reasoning()["r1-distill"]
    assert set(kept) == {"capital", "boil", "legs"}  # "sky" had none: no line
    assert kept["boil"]["text"] == "Boiling point at sea level, 100 C I recall." and kept["boil"]["chars"] == len(
        kept["boil"]["text"]
    )
    assert paths.reasoning("r1-distill").parent == out / "reasoning"
    rows = {(r["model"], r["item_id"]): r for r in read_jsonl(paths.responses)}
    assert rows[("r1-distill", "legs")]["reasoning_words"] == 2 and rows[("r1-distill", "sky")]["reasoning_chars"] == 0
    assert summary.reasoning["r1-distill"].n_answers == 3 and judge not in summary.reasoning
    from interp.report.build import build_report
    from interp.report.terminal import results_payload

    line = "r1-distill: reasoning removed before judging from 3 of 4 answers"
    assert results_payload(summary).reasoning[0].startswith(line) and line in build_report(out).read_text()


def test_a_served_reasoning_model_is_judged_on_its_answer_and_its_reasoning_kept(tmp_path, monkeypatch):
    """A server that returns the reasoning apart (`reasoning_content`) and one that leaves `<think>` in the text."""
    from interp.config import HTTPJudgeConfig
    from interp.data import builtin_items, sample_items
    from interp.run.responses import Decoding
    from interp.run.server_responses import server_responses
    from tests.run.test_gold_http import FakeServer

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    items = sample_items(builtin_items(), n=2, seed=0)
    server = FakeServer()
    message = {"content": "<think>draft</think>\nThe answer.", "reasoning_content": "apart"}
    server.handler = lambda path, headers, body: (
        200,
        {"choices": [{"message": message}], "usage": {"completion_tokens": 9}},
        {},
    )
    endpoint = HTTPJudgeConfig(name="served-r1", base_url=server.url, model="m", concurrency=1)
    answers = server_responses(endpoint, items, Decoding(), progress=False)
    assert [r.text for r in answers] == ["The answer."] * 2 and [r.reasoning for r in answers] == ["apart\n\ndraft"] * 2
    again = server_responses(endpoint, items, Decoding(), progress=False)  # from the cache: the same split
    assert again == answers and len(server.requests) == 2


def test_a_cached_answer_written_before_the_rule_loses_its_reasoning_when_read(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from interp.run.reasoning import model_markers
    from interp.run.responses import cached_responses, response_cache_path

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    path = response_cache_path("k1")
    path.parent.mkdir(parents=True)
    old = {
        "item_id": "q",
        "model": "m",
        "text": "<seed:think>plan</seed:think>Final.",
        "n_new_tokens": 5,
        "cache_key": "k1",
    }  # no "reasoning" key
    path.write_text(json.dumps(old))
    markers = model_markers(SimpleNamespace(chat_template="{{ '<seed:think>' }}{{ '</seed:think>' }}"))
    found, todo = cached_responses(["k1", "k2"], "m", markers)
    assert todo == [1] and (found[0].text, found[0].reasoning) == ("Final.", "plan")
    plain, _ = cached_responses(["k1"], "m", model_markers(SimpleNamespace(chat_template=None)))
    assert plain[0].text == old["text"]  # a model whose template names no such tag keeps it: the tags are the family's
