"""A run with `ties = true` judges with Chen et al.'s three-way prompt (Appendix B), reads A/T/B, and records the
prompt in the run folder (prompts.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interp.config import RunConfig
from interp.core.models import load_model
from interp.core.prompts import judge_prompt
from interp.core.spans import tokenized_judge_prompt
from interp.run.pipeline import run_dbg
from interp.run.store import RunDir

TIE_OPTION = "\u201cT\u201d if both answers are relatively the same in quality."


@pytest.fixture(scope="module")
def tie_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> tuple[Path, RunConfig]:
    from transformers import LlamaForCausalLM

    from tests.helpers.models import save_tiny, tiny_llama_config

    root = tmp_path_factory.mktemp("ties")
    other = save_tiny(root / "other", tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=7)
    config = RunConfig(
        name="ties",
        n=3,
        models=(str(tiny_llama_dir), str(other)),
        ties=True,
        attention="none",
        max_new_tokens=6,
        max_words=10,
        batch_size=4,
        n_boot=20,
        empty_answers="judge",
    )
    run_dbg(config, root / "run", progress=False)
    return root / "run", config


def test_the_three_way_prompt_names_the_tie_option_for_chat_and_base_judges(smollm2_tokenizer):
    chat = judge_prompt(smollm2_tokenizer, "helpfulness", "Q?", "one", "two", kind="post", ties=True)
    base = judge_prompt(smollm2_tokenizer, "helpfulness", "Q?", "one", "two", kind="pre", ties=True)
    plain = judge_prompt(smollm2_tokenizer, "helpfulness", "Q?", "one", "two", kind="post")
    for prompt in (chat, base):
        assert TIE_OPTION in prompt.text and "Please act as an impartial judge" in prompt.text
        assert [prompt.text[slice(*prompt.char_spans[s])] for s in ("query", "a", "b")] == ["Q?", "one", "two"]
    assert TIE_OPTION not in plain.text and "output A or B" in plain.text
    assert base.text.endswith("# Judgment\n") and chat.style == "chat"


def test_a_ties_run_records_the_three_way_prompt_and_reads_t(tie_run):
    out, config = tie_run
    recorded = json.loads(RunDir(out).prompts.read_text(encoding="utf-8"))["judges"]
    assert sorted(recorded) == sorted(config.judge_specs)
    for judge in config.judge_specs:
        assert recorded[judge]["labels"] == ["A", "T", "B"]
        for text in recorded[judge]["prompts"].values():
            assert TIE_OPTION in text and "{query}" in text and "{response_b}" in text
    records = RunDir(out).read_judgments()
    assert records and all(r.p_t is not None and abs(r.p_a + r.p_t + r.p_b - 1.0) < 1e-6 for r in records)


def test_a_ties_run_judged_with_the_three_way_prompt(tie_run):
    out, config = tie_run
    run = RunDir(out)
    items = {item.id: item for item in run.read_items()}
    responses = run.read_responses()
    judge = config.judge_specs[0]
    model = load_model(judge)
    checked = 0
    for record in run.read_judgments(judge=judge):
        item = items[record.item_id]
        a, b = responses[record.model_a][item.id], responses[record.model_b][item.id]
        three_way = tokenized_judge_prompt(model, item.task, item.query, a, b, ties=True)
        two_way = tokenized_judge_prompt(model, item.task, item.query, a, b)
        assert record.n_tokens == len(three_way.input_ids) != len(two_way.input_ids)
        assert {name: list(span) for name, span in three_way.spans.items()} == record.spans
        checked += 1
    assert checked == 2 * config.n
