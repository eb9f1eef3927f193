"""The familiarity pass on a tiny run: log-probabilities against the model's own loss, kept and keyed in the run,
resumed after a kill, the lens' DBG equal to the run's, the command's table, JSON and refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import interp
from interp.cli import metrics_app
from interp.core.models import ModelCache
from interp.core.spans import tokenize_prompt
from interp.results import codec
from interp.results.familiarity import FamiliarityScores
from interp.run import familiarity as fam
from interp.run.store import RunDir
from tests.helpers.runs import ITEMS, small_run_config


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_llama_dir) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("familiarity-run")
    judge = str(tiny_llama_dir)
    run = interp.dbg(small_run_config(folder, judge), folder / "run", progress=False)
    return run.path, judge


def test_answer_logprob_is_the_models_own_loss_on_the_answer(tiny_run) -> None:
    root, judge = tiny_run
    model = ModelCache().get(judge)
    item = RunDir(root).read_items()[0]
    answer = "Paris is the capital."
    prompt = fam.answer_prompt(model, item, answer, words=60)
    n, total = fam.answer_logprob(model, prompt)
    tokens = tokenize_prompt(model.tokenizer, prompt)
    start, end = tokens.spans["a"]
    ids = torch.tensor([tokens.input_ids])
    labels = torch.full_like(ids, -100)
    labels[0, start:end] = ids[0, start:end]
    with torch.no_grad():
        loss = model.hf_model(input_ids=ids, labels=labels).loss  # HF's shift and mean over the answer's tokens
    assert n == end - start > 0
    assert total / n == pytest.approx(-float(loss), abs=1e-4)
    assert prompt.text.endswith(answer) and item.query in prompt.text


def test_scores_are_kept_keyed_and_resumed(tiny_run, monkeypatch) -> None:
    root, judge = tiny_run
    result = fam.run_familiarity(root, n_boot=50)
    paths = RunDir(root)
    key = result.keys[judge]
    path = paths.familiarity_scores(judge, key)
    scores = codec.read_familiarity_scores(path)
    assert len(scores.rows) == 2 * len(ITEMS) and scores.judge == judge and scores.conditioning == fam.CONDITIONING
    summary = paths.read_summary()
    lens = result.judges[judge]
    assert lens.n_items == len(ITEMS) and lens.own_model == judge
    assert lens.dbg_hard.value == pytest.approx(summary.judges[judge].dbg_hard)  # the run's one DBG
    assert codec.read_familiarity(paths.familiarity).judges[judge].difference.value == lens.difference.value
    # a job killed after three answers: the next call computes only the other five, to the same numbers
    codec.write_familiarity_scores(
        path, FamiliarityScores(**{**scores.model_dump(), "rows": scores.model_dump()["rows"][:3]})
    )
    calls = []
    real = fam.answer_logprob
    monkeypatch.setattr(fam, "answer_logprob", lambda m, p: calls.append(p) or real(m, p))
    again = fam.run_familiarity(root, n_boot=50)
    assert len(calls) == 2 * len(ITEMS) - 3
    assert again.judges[judge].difference.value == pytest.approx(lens.difference.value)
    # another key (another judge's weights, conditioning or word cap) is another file; a changed text is recomputed
    assert fam.scores_key("other-fingerprint", 60) != key and fam.scores_key(scores.judge_fingerprint, 61) != key
    stored = codec.read_familiarity_scores(path)
    rows = stored.model_dump()["rows"]
    rows[0]["text_hash"] = "stale"
    codec.write_familiarity_scores(path, FamiliarityScores(**{**stored.model_dump(), "rows": rows}))
    calls.clear()
    fam.run_familiarity(root, n_boot=50)
    assert len(calls) == 1


def test_familiarity_command_prints_the_table_and_json(tiny_run) -> None:
    root, judge = tiny_run
    runner = CliRunner()
    table = runner.invoke(metrics_app, ["familiarity", str(root), "--n-boot", "30"])
    assert table.exit_code == 0, table.output
    assert "Familiarity" in table.stdout and "DBG within familiarity strata" in table.stdout
    out = json.loads(runner.invoke(metrics_app, ["familiarity", str(root), "--n-boot", "30", "--json"]).stdout)
    assert set(out["judges"][judge]) >= {"difference", "slope", "p_own_at_zero", "dbg_hard", "adjusted_dbg_hard"}
    assert out["n_boot"] == 30 and out["organisms"] == {}
    section = RunDir(root).figures / "familiarity_section.html"
    assert section.is_file() and "Familiarity" in RunDir(root).report.read_text()


def test_familiarity_refuses_a_folder_that_is_not_a_run(tmp_path) -> None:
    result = CliRunner().invoke(metrics_app, ["familiarity", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "not a finished run" in lines[0]
    assert list(tmp_path.iterdir()) == []
