"""SALIERI's pointwise mode: each answer judged alone with the thesis' rubric prompt, its 1-5 score read from the
score tokens after the judge's feedback, span attention over the answer, and the SALIERI score from the run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from safetensors.torch import load_file

from interp.analysis.salieri_run import run_salieri
from interp.config import RunConfig
from interp.core.backends import make_backend
from interp.core.judge import judge_batch, label_tokens
from interp.core.models import load_model
from interp.core.rubric import RESULT_MARK, SCORE_LABELS, pointwise_prompt, result_cue
from interp.core.spans import tokenize_prompt
from interp.errors import InterpError
from interp.metrics.salieri import salieri_report
from interp.metrics.stats import Bootstrap
from interp.run.pipeline import run_dbg
from interp.run.pointwise import read_pointwise
from interp.run.rationale import with_rationale
from interp.run.store import RunDir

THESIS_LINE = (
    "1. Write a detailed feedback that assess the quality of the response strictly based on the given score rubric"
)
N = 2


@pytest.fixture(scope="module")
def pointwise_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> tuple[Path, RunConfig]:
    from transformers import LlamaForCausalLM

    from tests.helpers.models import save_tiny, tiny_llama_config

    root = tmp_path_factory.mktemp("pointwise")
    other = save_tiny(root / "other", tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=7)
    reference = save_tiny(
        root / "reference", tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=8
    )
    config = RunConfig(
        name="pointwise",
        n=N,
        models=(str(tiny_llama_dir), str(other)),
        judges=[str(tiny_llama_dir), str(other), str(reference)],
        mode="pointwise",
        max_rationale_tokens=5,
        max_new_tokens=6,
        max_words=10,
        batch_size=4,
        n_boot=20,
        empty_answers="judge",
    )
    run_dbg(config, root / "run", progress=False)
    return root / "run", config


def test_the_rubric_prompt_is_the_thesis_prompt_with_the_answer_as_a_slot(smollm2_tokenizer):
    prompt = pointwise_prompt(smollm2_tokenizer, "helpfulness", "Q?", "my answer", "the reference", kind="post")
    assert THESIS_LINE in prompt.text and "###Reference Answer (Score 5):" in prompt.text and "Score 5:" in prompt.text
    assert prompt.text[slice(*prompt.char_spans["a"])] == "my answer"
    bare = pointwise_prompt(smollm2_tokenizer, "helpfulness", "Q?", "my answer", None, kind="pre")
    assert (
        "Reference Answer" not in bare.text
        and "a reference answer" not in bare.text
        and bare.text.endswith("###Feedback:")
    )


def test_every_answer_is_scored_by_every_judge_with_an_expected_score(pointwise_run):
    out, config = pointwise_run
    rows = read_pointwise(RunDir(out).pointwise)
    assert len(rows) == len(config.judge_specs) * len(config.models) * N
    for row in rows:
        assert sorted(row["probs"]) == list(SCORE_LABELS) and math.isclose(
            sum(row["probs"].values()), 1.0, abs_tol=1e-6
        )
        assert row["expected_score"] == pytest.approx(sum(int(k) * p for k, p in row["probs"].items()))
        assert 1.0 <= row["expected_score"] <= 5.0 and isinstance(row["rationale"], str)
        assert row["parsed_score"] is None or row["parsed_score"] in range(1, 6)
    assert not RunDir(out).judgments.exists()  # no pairwise judging in this mode
    summary = RunDir(out).read_summary()
    assert set(summary.pointwise) == set(config.judge_specs) and summary.judges == {}


def test_the_score_is_read_after_the_feedback_and_result_mark(pointwise_run):
    """Re-reading one judgment by hand (prompt + feedback + [RESULT]) gives the recorded probabilities and spans."""
    out, config = pointwise_run
    judge = config.judge_specs[0]
    row = read_pointwise(RunDir(out).pointwise, judge)[0]
    items = {item.id: item for item in RunDir(out).read_items()}
    item = items[row["item_id"]]
    model = load_model(judge)
    answer = RunDir(out).read_responses()[row["author"]][item.id]
    cue = result_cue(model.tokenizer)
    assert cue == f"{RESULT_MARK} "  # SmolLM2's tokenizer writes " 5" as a space and a digit: the space is in the cue
    prompt = with_rationale(
        pointwise_prompt(model.tokenizer, item.task, item.query, answer, item.reference, kind=model.kind),
        row["rationale"],
        cue,
    )
    tokenized = tokenize_prompt(model.tokenizer, prompt)
    assert tokenized.text.endswith(f"{row['rationale']} {RESULT_MARK} ") and len(tokenized) == row["n_tokens"]
    assert model.tokenizer.convert_ids_to_tokens(tokenized.input_ids[-1]) == "Ġ"
    (judgment,) = judge_batch(
        make_backend(model, "hf"), [tokenized], label_tokens(model.tokenizer, SCORE_LABELS), readout=None
    )
    assert judgment.probs == pytest.approx(row["probs"], abs=1e-5)
    assert {k: list(v) for k, v in tokenized.spans.items()} == row["spans"]
    assert tokenized.text[slice(*prompt.char_spans["a"])] == answer


def test_span_attention_is_over_the_one_answer_and_the_feedback(pointwise_run):
    out, config = pointwise_run
    judge = config.judge_specs[0]
    arrays = load_file(str(RunDir(out).pointwise_attention(judge)))
    index = json.loads(RunDir(out).pointwise_attention(judge, ".json").read_text())
    assert index["spans"] == ["a", "rationale"] and index["authors"] == list(config.models)
    assert arrays["mass"].shape[:2] == (N, 2) and arrays["mass"].shape[-1] == 2
    answer_mass = arrays["mass"][..., 0]
    assert bool((answer_mass > 0).all()) and bool((arrays["mass"].sum(-1) <= 1.0 + 1e-5).all())


def test_metrics_run_gives_the_salieri_score_from_the_run_alone(pointwise_run, forked_cli):
    out, config = pointwise_run
    result = forked_cli("metrics", "run", str(out), "--json", "--n-boot", "20")
    assert result.returncode == 0, result.stderr
    salieri = json.loads(result.stdout)["salieri"]
    reference = config.judge_specs[2]
    assert salieri["reference"] == reference and set(salieri["judges"]) == set(config.models)
    rows = read_pointwise(RunDir(out).pointwise)
    score = {(r["judge"], r["author"], r["item_id"]): r["expected_score"] for r in rows}
    items = [item.id for item in RunDir(out).read_items()]
    for judge, report in salieri["judges"].items():
        other = next(m for m in config.models if m != judge)
        expected = salieri_report(
            [score[(judge, judge, i)] for i in items],
            [score[(reference, judge, i)] for i in items],
            [[score[(judge, other, i)]] for i in items],
            [[score[(reference, other, i)]] for i in items],
            bootstrap=Bootstrap(n_boot=20),
        )
        assert report["salieri"] == pytest.approx(expected["salieri"]) and report["pool_model"] == other
        own_gap = sum(score[(judge, judge, i)] - score[(reference, judge, i)] for i in items) / N
        pool_gap = sum(score[(judge, other, i)] - score[(reference, other, i)] for i in items) / N
        assert report["salieri"] == pytest.approx(own_gap - pool_gap)
    assert run_salieri(out, n_boot=20)["judges"].keys() == salieri["judges"].keys()


def test_pointwise_refuses_ties_and_cot():
    for extra in ({"ties": True}, {"cot": "standard"}):
        with pytest.raises(ValueError, match="pointwise"):
            RunConfig(mode="pointwise", **extra)
    with pytest.raises(ValueError, match="wrote answers"):
        RunConfig(models=("a", "b"), judges=["a", "b"], salieri_reference="a")


def test_the_report_and_terminal_show_the_pointwise_scores(pointwise_run):
    from interp.report.build import build_report
    from interp.report.judging_modes import mode_payload

    out, config = pointwise_run
    html = build_report(out).read_text()
    assert "SALIERI: pointwise 1-5 scores and the SALIERI score" in html and "DBG (judge win rate" not in html
    rows = mode_payload(RunDir(out).read_summary()).pointwise
    assert {(r.judge, r.author) for r in rows} == {(j, a) for j in config.judge_specs for a in config.models}


def test_a_task_wide_pool_matches_over_the_other_authors_answers_to_the_same_task(pointwise_run):
    out, config = pointwise_run
    reference = config.judge_specs[2]
    rows = read_pointwise(RunDir(out).pointwise)
    score = {(r["judge"], r["author"], r["item_id"]): r["expected_score"] for r in rows}
    tasks = {item.id: item.task for item in RunDir(out).read_items()}
    wide = run_salieri(out, n_boot=20, pool="task")
    for judge, report in wide["judges"].items():
        other = next(m for m in config.models if m != judge)
        pools = {i: [j for j in tasks if tasks[j] == tasks[i]] for i in tasks}
        expected = salieri_report(
            [score[(judge, judge, i)] for i in tasks],
            [score[(reference, judge, i)] for i in tasks],
            [[score[(judge, other, j)] for j in pools[i]] for i in tasks],
            [[score[(reference, other, j)] for j in pools[i]] for i in tasks],
            bootstrap=Bootstrap(n_boot=20),
        )
        assert report["pool"] == "task" and report["salieri"] == pytest.approx(expected["salieri"])
        assert report["histogram_mismatch"] == expected["histogram_mismatch"]
    with pytest.raises(InterpError, match="unknown SALIERI pool"):
        run_salieri(out, pool="everything")


def test_the_chapter_4_treatment_asks_for_incorrect_answers_under_their_own_keys(
    pointwise_run, smollm2_tokenizer, tmp_path
):
    from interp.core.prompts import TREATMENT, generation_prompt
    from interp.storage import read_jsonl

    for kind in ("post", "pre"):
        treated = generation_prompt(smollm2_tokenizer, "helpfulness", "Q?", kind=kind, treatment=True)
        plain = generation_prompt(smollm2_tokenizer, "helpfulness", "Q?", kind=kind)
        assert (
            TREATMENT in treated.text
            and TREATMENT not in plain.text
            and treated.text[slice(*treated.char_spans["query"])] == "Q?"
        )
    out, config = pointwise_run
    treatment = config.model_copy(
        update={
            "mode": "pairwise",
            "judges": None,
            "answers": "treatment",
            "attention": "none",
            "max_rationale_tokens": None,
        }
    )
    run_dbg(treatment, tmp_path / "treated", progress=False)
    keys = {(r["model"], r["item_id"]): r["cache_key"] for r in read_jsonl(RunDir(out).responses)}
    treated_keys = {
        (r["model"], r["item_id"]): r["cache_key"] for r in read_jsonl(RunDir(tmp_path / "treated").responses)
    }
    assert keys.keys() == treated_keys.keys() and all(keys[k] != treated_keys[k] for k in keys)
    assert treatment.identity()["answers"] == "treatment" and "answers" not in config.identity()
    with pytest.raises(ValueError, match="treatment"):
        RunConfig(models=("a", "b"), judges=["a"], imports={"b": "b.jsonl"}, answers="treatment")


def test_a_pointwise_run_judged_under_other_prompts_is_not_resumed(pointwise_run, tmp_path):
    import shutil

    out, config = pointwise_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    prompts = RunDir(copy).prompts
    prompts.write_text(
        prompts.read_text(encoding="utf-8").replace("###Feedback:", "###Feedback (old):"), encoding="utf-8"
    )
    before = RunDir(copy).pointwise.read_text()
    with pytest.raises(InterpError, match="other judge prompts"):
        run_dbg(config, copy, progress=False)
    assert RunDir(copy).pointwise.read_text() == before
