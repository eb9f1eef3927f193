"""Preference Leakage's relatedness: a (judge, author) relation the PLS lens groups by, and the recognition probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interp.analysis.lenses import (
    pls_by_relatedness,
    run_lenses,
    run_preference_leakage,
)
from interp.config import RunConfig, run_config_from_dict
from interp.metrics.pls import preference_leakage_score
from interp.run.pipeline import run_dbg
from interp.run.recognition import (
    RECOGNITION_PROMPT,
    recognition_key,
    recognition_prompt,
    run_recognition,
)
from interp.run.records import JudgmentRecord
from interp.run.relatedness import relation
from interp.run.store import RunDir
from interp.storage import read_jsonl


def _record(judge: str, item: str, order: str, a: str, b: str, p_a: float) -> JudgmentRecord:
    return JudgmentRecord(judge=judge, item_id=item, order=order, model_a=a, model_b=b, p_a=p_a, p_b=1.0 - p_a)


def test_pls_pairs_judges_with_the_authors_they_are_related_to():
    """Teacher t1 (x inherits from it) always prefers x; t2 (family of y) prefers y on 3 items of 4; g is unrelated."""
    rows = []
    for i in range(4):
        item = f"q{i}"
        rows += [_record("t1", item, "ab", "x", "y", 0.9), _record("t1", item, "ba", "y", "x", 0.1)]
        p_y = 0.8 if i < 3 else 0.2
        rows += [_record("t2", item, "ab", "x", "y", 1 - p_y), _record("t2", item, "ba", "y", "x", p_y)]
        rows += [_record("g", item, "ab", "x", "y", 0.5), _record("g", item, "ba", "y", "x", 0.5)]
    declared = {("t1", "x"): "inheritance", ("t2", "y"): "family"}
    assert run_preference_leakage(rows, n_boot=10) == []  # no judge is an author: nothing related by default
    [row] = run_preference_leakage(rows, relatedness=declared, n_boot=10)
    assert (
        row["judges"] == ["t1", "t2"]
        and row["students"] == ["x", "y"]
        and row["relatedness"] == ["inheritance", "family"]
    )
    w = {"t1": {"x": 1.0, "y": 0.0}, "t2": {"x": 0.25, "y": 0.75}}
    assert row["PLS_hard"] == pytest.approx(preference_leakage_score(w, "t1", "x", "t2", "y"))
    assert pls_by_relatedness([row]) == {
        "family+inheritance": {"n_pairs": 1, "PLS_hard": row["PLS_hard"], "PLS_soft": row["PLS_soft"]}
    }
    assert relation("g", "x", declared) == "unrelated" and relation("x", "x") == "same"


def test_relatedness_in_a_run_config_is_checked_and_keeps_old_identities():
    base = {"models": ["a", "b"], "judges": ["a", "b", "c"]}
    config = run_config_from_dict(base | {"relatedness": [{"judge": "c", "author": "b", "type": "family"}]})
    assert config.identity()["relatedness"] == [{"judge": "c", "author": "b", "type": "family"}]
    assert "relatedness" not in run_config_from_dict(base).identity()
    for bad, message in (
        ({"judge": "z", "author": "b", "type": "family"}, "judge of the run"),
        ({"judge": "c", "author": "b", "type": "cousin"}, "type"),
    ):
        with pytest.raises(Exception, match=message):
            run_config_from_dict(base | {"relatedness": [bad]})


@pytest.fixture(scope="module")
def related_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> tuple[Path, RunConfig]:
    from transformers import LlamaForCausalLM

    from tests.helpers.models import save_tiny, tiny_llama_config

    root = tmp_path_factory.mktemp("related")
    other = str(
        save_tiny(root / "other", tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=7)
    )
    cousin = str(
        save_tiny(root / "cousin", tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=9)
    )
    me = str(tiny_llama_dir)
    config = RunConfig(
        name="related",
        n=2,
        models=(me, other),
        judges=[me, other, cousin],
        attention="none",
        max_new_tokens=6,
        max_words=10,
        batch_size=4,
        n_boot=20,
        empty_answers="judge",
        relatedness=[{"judge": cousin, "author": other, "type": "family"}],
    )
    run_dbg(config, root / "run", progress=False)
    return root / "run", config


def test_the_run_lens_groups_pls_by_relatedness(related_run):
    out, config = related_run
    me, other = config.models
    cousin = config.judge_specs[2]
    lenses = run_lenses(out, n_boot=20)
    pairs = {
        frozenset(zip(r["judges"], r["relatedness"], strict=False)) for r in lenses["pls"]
    }  # authors in name order
    assert pairs == {frozenset({(me, "same"), (other, "same")}), frozenset({(me, "same"), (cousin, "family")})}
    assert set(lenses["pls_by_relatedness"]) == {"same", "family+same"}


def test_the_recognition_probe_reads_yes_or_no_after_the_reason(related_run, smollm2_tokenizer):
    out, config = related_run
    prompt = recognition_prompt(smollm2_tokenizer, "Q?", "an answer", kind="post")
    assert (
        RECOGNITION_PROMPT.split("{instruction}")[0] in prompt.text
        and prompt.text[slice(*prompt.char_spans["a"])] == "an answer"
    )
    cousin = config.judge_specs[2]
    result = run_recognition(out, cousin, max_rationale_tokens=4)
    me, other = config.models
    assert result[other]["relatedness"] == "family" and result[me]["relatedness"] == "unrelated"
    rows = read_jsonl(RunDir(out).recognition(cousin, recognition_key(4)))
    assert len(rows) == 2 * config.n and all(0.0 <= r["p_yes"] <= 1.0 and isinstance(r["reason"], str) for r in rows)
    related = [r for r in rows if r["author"] == other]
    assert result[other]["accuracy"] == pytest.approx(
        sum(r["p_yes"] > 0.5 for r in related) / len(related)
    )  # no exact tie here
    assert run_recognition(out, cousin, max_rationale_tokens=4) == result  # resumed: read back, not redone
    assert len(read_jsonl(RunDir(out).recognition(cousin, recognition_key(4)))) == len(rows)
    assert json.dumps(result)


def test_a_recognition_rerun_with_another_reason_budget_is_judged_anew(related_run):
    """The probe's lines are keyed by every setting that makes them: a rerun with another
    --max-rationale-tokens writes its own lines (reasons cut at its budget), never the first budget's."""
    out, config = related_run
    cousin = config.judge_specs[2]
    run_recognition(out, cousin, max_rationale_tokens=4)
    run_recognition(out, cousin, max_rationale_tokens=1)
    short = read_jsonl(RunDir(out).recognition(cousin, recognition_key(1)))
    assert recognition_key(1) != recognition_key(4) and len(short) == 2 * config.n
    assert len(read_jsonl(RunDir(out).recognition(cousin, recognition_key(4)))) == 2 * config.n  # left as it was
    assert sorted((RunDir(out).root / "recognition").iterdir()) == sorted(
        RunDir(out).recognition(cousin, recognition_key(n)) for n in (1, 4)
    )
