"""Judge-side chain of thought (`cot`): the judge writes a rationale, the verdict is read after it and "My final
verdict is", each judgment record holds its rationale, and span attention has the rationale as a third span."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interp.analysis.attention_store import load_attention
from interp.config import RunConfig
from interp.core.backends import make_backend
from interp.core.judge import judge_batch, label_tokens
from interp.core.models import load_model
from interp.core.prompts import COT_CUE, judge_prompt
from interp.core.spans import tokenize_prompt
from interp.errors import InterpError
from interp.run.pipeline import run_dbg
from interp.run.rationale import cut_at_cue, with_rationale
from interp.run.store import RunDir

N = 2


@pytest.fixture(scope="module")
def cot_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> tuple[Path, RunConfig]:
    from transformers import LlamaForCausalLM

    from tests.helpers.models import save_tiny, tiny_llama_config

    root = tmp_path_factory.mktemp("cot")
    other = save_tiny(root / "other", tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=7)
    config = RunConfig(
        name="cot",
        n=N,
        models=(str(tiny_llama_dir), str(other)),
        judges=[str(tiny_llama_dir)],
        cot="standard",
        ties=True,
        max_rationale_tokens=6,
        max_new_tokens=6,
        max_words=10,
        batch_size=4,
        n_boot=20,
        empty_answers="judge",
    )
    run_dbg(config, root / "run", progress=False)
    return root / "run", config


def test_the_cot_prompt_asks_for_reasoning_then_the_verdict_phrase(smollm2_tokenizer):
    for ties in (False, True):
        plain = judge_prompt(smollm2_tokenizer, "helpfulness", "Q?", "one", "two", kind="post", ties=ties)
        cot = judge_prompt(smollm2_tokenizer, "helpfulness", "Q?", "one", "two", kind="post", ties=ties, cot="standard")
        assert "step by step" in cot.text and COT_CUE in cot.text and "step by step" not in plain.text
        assert [cot.text[slice(*cot.char_spans[s])] for s in ("query", "a", "b")] == ["Q?", "one", "two"]
    assert (
        "with no other text"
        not in judge_prompt(smollm2_tokenizer, "truthfulness", "Q", "a", "b", kind="post", cot="long").text
    )
    with pytest.raises(InterpError, match="post-trained"):
        judge_prompt(smollm2_tokenizer, "helpfulness", "Q", "a", "b", kind="pre", cot="standard")
    assert cut_at_cue("I think A is right.\n\nMy final verdict is A", COT_CUE) == "I think A is right."


def test_every_judgment_holds_its_rationale_and_is_read_after_it(cot_run):
    out, config = cot_run
    run = RunDir(out)
    records = run.read_judgments()
    assert len(records) == 2 * N and all(isinstance(r.rationale, str) for r in records)
    raw = [json.loads(line) for line in run.judgments.read_text().splitlines()]
    assert all("rationale" in line for line in raw)
    judge = config.judge_specs[0]
    model = load_model(judge)
    items = {item.id: item for item in run.read_items()}
    responses = run.read_responses()
    for record in records:
        item = items[record.item_id]
        a, b = responses[record.model_a][item.id], responses[record.model_b][item.id]
        prompt = judge_prompt(model.tokenizer, item.task, item.query, a, b, kind=model.kind, ties=True, cot="standard")
        verdict = tokenize_prompt(model.tokenizer, with_rationale(prompt, record.rationale, COT_CUE, "\n\n"))
        assert verdict.text.endswith(f"{record.rationale}\n\n{COT_CUE}") and len(verdict) == record.n_tokens
        assert {k: list(v) for k, v in verdict.spans.items()} == record.spans and "rationale" in record.spans
        (judgment,) = judge_batch(
            make_backend(model, "hf"), [verdict], label_tokens(model.tokenizer, ("A", "T", "B")), readout=None
        )
        assert judgment.probs["A"] == pytest.approx(record.p_a, abs=1e-5) and judgment.probs["T"] == pytest.approx(
            record.p_t, abs=1e-5
        )


def test_the_attention_table_has_the_rationale_span(cot_run):
    out, config = cot_run
    judge = config.judge_specs[0]
    index = json.loads(RunDir(out).attention_index(judge).read_text())
    assert index["spans"] == ["a", "b", "rationale"]
    attention = load_attention(out, judge)
    assert attention.mass.shape[-1] == 3 and attention.span_tokens.shape[-1] == 3
    rationale_tokens = attention.span_tokens[..., 2]
    records = {r.key: r for r in RunDir(out).read_judgments()}
    for i, item_id in enumerate(attention.item_ids):
        for o, order in enumerate(("ab", "ba")):
            start, end = records[f"{item_id}|{order}"].spans["rationale"]
            assert int(rationale_tokens[i, o]) == end - start
    assert attention.own(stat="mass").shape == (N, 2, attention.n_layers, attention.n_heads)


def test_the_run_records_the_cot_prompt(cot_run):
    out, config = cot_run
    recorded = json.loads(RunDir(out).prompts.read_text(encoding="utf-8"))["judges"][config.judge_specs[0]]
    assert (
        recorded["cot"] == "standard" and recorded["verdict_cue"] == COT_CUE and recorded["labels"] == ["A", "T", "B"]
    )
    assert all("step by step" in text for text in recorded["prompts"].values())


def test_the_report_says_the_verdicts_came_after_a_rationale(cot_run):
    from interp.report.build import build_report

    out, _ = cot_run
    html = build_report(out).read_text()
    assert "Judge-side chain of thought" in html and "cot = standard" in html
