"""The behavioural pipeline end to end on tiny models: resumability, caching, summary, report, bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interp.config import RunConfig, load_run_config
from interp.errors import InterpError
from interp.results.codec import read_summary
from interp.run.pipeline import run_dbg
from interp.storage import read_jsonl


@pytest.fixture(scope="module")
def tiny_llama_b_dir(tmp_path_factory, smollm2_tokenizer) -> Path:
    """A second tiny Llama (other seed, so other answers and verdicts): two small-vocabulary models keep
    the subprocess runs below fast (Gemma's 262k-token tokenizer alone takes seconds to load)."""
    from transformers import LlamaForCausalLM

    from tests.helpers.models import save_tiny, tiny_llama_config

    folder = tmp_path_factory.mktemp("tiny-llama-b")
    return save_tiny(folder, tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=7)


def tiny_config(tiny_llama_dir, tiny_gemma3_dir, **overrides) -> RunConfig:
    values = dict(
        name="tiny",
        n=6,
        models=(str(tiny_llama_dir), str(tiny_gemma3_dir)),
        max_new_tokens=8,
        max_words=20,
        batch_size=4,
        n_boot=50,
        empty_answers="judge",  # random tiny models answer with nothing on some items; judged, as the option says
    )
    values.update(overrides)
    return RunConfig(**values)


def write_config(path: Path, config: RunConfig) -> Path:
    path.write_text(config.to_toml())
    return path


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_llama_dir, tiny_gemma3_dir):
    out = tmp_path_factory.mktemp("run")
    config = tiny_config(tiny_llama_dir, tiny_gemma3_dir)
    summary = run_dbg(config, out, progress=False)
    return out, config, summary


def test_summary_has_the_promised_keys_and_consistent_counts(tiny_run):
    out, config, summary = tiny_run
    assert summary.n_items == 6
    records = read_jsonl(out / "judgments.jsonl")
    assert len(records) == 6 * 2 * 2  # items x orders x judges
    for judge in config.models:
        scores = summary.judges[judge]
        for key in ("dbg_hard", "dbg_soft", "dbg_ci", "win_rate_own_hard", "win_rate_own_soft", "position_consistency"):
            assert key in scores.model_fields_set
        lo, hi = scores.dbg_ci
        assert lo <= hi
        # a random tiny model almost never puts its top token on a label: counted, never dropped
        mine = [r for r in records if r["judge"] == judge]
        assert scores.top_not_label == sum(not r["top_is_label"] for r in mine)
        assert scores.n_judgments == len(mine)
    assert summary.gold.judges == ["reference"]
    rates = summary.gold.win_rate
    assert rates[config.models[0]] + rates[config.models[1]] == pytest.approx(1.0)
    assert read_summary(out / "summary.json") == summary  # what the run returns is what it wrote
    assert json.loads((out / "summary.json").read_text())["schema_version"] == 1


def test_report_and_static_figures_open(tiny_run):
    from PIL import Image

    from interp.report.build import build_report

    out, _, _ = tiny_run
    report = build_report(out)
    text = report.read_text()
    assert "<script src=" not in text and "data:image/png;base64," in text
    with Image.open(out / "figures" / "figure2_grid.png") as image:
        assert image.size[0] > 300 and image.size[1] > 150
        assert len(set(image.convert("L").getdata())) > 10  # not a blank canvas
    assert (out / "figures" / "figure2_grid.pdf").read_bytes().startswith(b"%PDF")


def test_rerun_reuses_cached_responses_without_generating(
    tmp_path, tiny_run, tiny_llama_dir, tiny_gemma3_dir, monkeypatch
):
    from interp.run import responses

    def refuse(*args, **kwargs):
        raise AssertionError("generate() called although every response is cached")

    monkeypatch.setattr("transformers.generation.utils.GenerationMixin.generate", refuse)
    _, config, _ = tiny_run
    summary = run_dbg(config, tmp_path / "again", progress=False)  # new run dir, same models/prompts/decoding
    first = read_jsonl(tiny_run[0] / "responses.jsonl")
    second = read_jsonl(tmp_path / "again" / "responses.jsonl")
    assert [r["text"] for r in first] == [r["text"] for r in second]
    assert summary.n_items == 6
    assert responses  # the module under test was imported


def test_resume_after_sigkill_finishes_without_redoing_and_matches(
    tmp_path, tiny_llama_dir, tiny_llama_b_dir, forked_cli
):
    config = tiny_config(tiny_llama_dir, tiny_llama_b_dir, n=30, batch_size=1, attention="final")
    path = write_config(tmp_path / "run.toml", config)
    killed = tmp_path / "killed"
    judgments = killed / "judgments.jsonl"
    env = dict(os.environ, TQDM_DISABLE="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "interp.cli", "dbg", str(path), "--out", str(killed), "--no-report"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 300
    lines_at_kill = 0
    while time.time() < deadline and process.poll() is None:
        if judgments.exists():
            lines_at_kill = judgments.read_bytes().count(b"\n")
            if lines_at_kill >= 6:
                break
        time.sleep(0.01)
    assert process.poll() is None, "the run finished before it could be killed; make it longer"
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = {(r["judge"], r["item_id"], r["order"]): r for r in read_jsonl(judgments)}
    assert 0 < len(before) < 120

    result = forked_cli("dbg", path, "--out", killed, "--no-report")
    assert result.returncode == 0, result.stderr
    after = read_jsonl(judgments)
    keys = [(r["judge"], r["item_id"], r["order"]) for r in after]
    assert len(keys) == len(set(keys)) == 120  # nothing judged twice, nothing missing
    for key, record in before.items():  # finished judgments were kept, not redone
        assert next(r for r in after if (r["judge"], r["item_id"], r["order"]) == key) == record
    for line in judgments.read_text().splitlines():  # no truncated line left behind
        json.loads(line)

    clean = tmp_path / "clean"
    assert forked_cli("dbg", path, "--out", clean, "--no-report").returncode == 0
    reference = {(r["judge"], r["item_id"], r["order"]): r for r in read_jsonl(clean / "judgments.jsonl")}
    assert set(reference) == set(keys)
    for record in after:
        other = reference[(record["judge"], record["item_id"], record["order"])]
        assert record["p_a"] == pytest.approx(other["p_a"], abs=1e-9)
        assert record["spans"] == other["spans"]
    assert (
        json.loads((killed / "summary.json").read_text())["judges"]
        == json.loads((clean / "summary.json").read_text())["judges"]
    )


def test_unknown_config_key_is_one_line_error(tmp_path, forked_cli):
    path = tmp_path / "bad.toml"
    path.write_text('models = ["a/b", "c/d"]\nbatchsize = 4\n')
    with pytest.raises(InterpError, match="batchsize: unknown key"):
        load_run_config(path)
    result = forked_cli("dbg", path, "--out", tmp_path / "out")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and result.stderr.startswith("error:")
    assert not (tmp_path / "out").exists()


def test_malformed_dataset_line_names_file_and_line(tmp_path, tiny_llama_dir, tiny_gemma3_dir, forked_cli):
    data = tmp_path / "items.jsonl"
    data.write_text(
        '{"id": "x1", "task": "truthfulness", "query": "What is 2+2?", "reference": "4"}\n{"id": "x2", "task": \n'
    )
    config = tiny_config(tiny_llama_dir, tiny_gemma3_dir, data=str(data))
    result = forked_cli("dbg", write_config(tmp_path / "run.toml", config), "--out", tmp_path / "out")
    assert result.returncode == 2
    assert "items.jsonl:2" in result.stderr and result.stderr.count("\n") == 1


def test_a_run_dir_with_another_config_is_refused(tmp_path, tiny_run, tiny_llama_dir, tiny_gemma3_dir):
    out, _, _ = tiny_run
    with pytest.raises(InterpError, match="different config"):
        run_dbg(tiny_config(tiny_llama_dir, tiny_gemma3_dir, n=5), out, progress=False)


def test_judges_are_compared_per_task_and_gapped_only_against_a_judge_with_their_own_model(tiny_run):
    """`interp organism evaluate`'s figures: per task they partition the run's items and legitimate pairs; the
    legitimate-pair gap is only taken between judges with one own model (here each judge's own model is itself)."""
    from interp.organisms.evaluate import check_gap_against, compare_judges, judge_metrics, legitimate_gap, soft_dbg_gap

    out, config, _ = tiny_run
    judges = list(config.judge_specs)
    results = compare_judges(out, judges, by_task=True, gap_against=judges[0], n_boot=50)
    for judge in judges:
        overall, by_task = results[judge], results[judge]["by_task"]
        assert sum(m["n_items"] for m in by_task.values()) == overall["n_items"] == config.n
        assert sum(m["agreement_legitimate"]["n"] for m in by_task.values()) == overall["agreement_legitimate"]["n"]
        assert "legitimate_gap" not in overall  # judges[0] itself, or another own model
        assert {k: v for k, v in overall.items() if k != "by_task"} == judge_metrics(out, judge, n_boot=50)
    with pytest.raises(InterpError, match="not one of the judges"):
        check_gap_against(judges, "someone-else")
    with pytest.raises(InterpError, match="different own models"):
        soft_dbg_gap(out, judges[1], judges[0], n_boot=50)
    same = soft_dbg_gap(out, judges[0], judges[0], n_boot=50)  # paired over the same verdicts: exactly 0
    assert same["value"] == 0.0 and same["ci"] == [0.0, 0.0] and same["n"] == config.n
    assert legitimate_gap(out, judges[0], judges[0], n_boot=50)["n"] == results[judges[0]]["agreement_legitimate"]["n"]


def test_the_unseen_gap_script_pools_runs(tiny_run):
    out, config, _ = tiny_run
    judge = config.judge_specs[0]
    script = Path(__file__).resolve().parents[2] / "experiments" / "organisms" / "unseen_gap.py"
    result = subprocess.run(
        [sys.executable, str(script), str(out), str(out), "--null", judge, "--planted", judge],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines())
    assert lines["pooled_soft_dbg_gap"] == f"+0.000 [+0.000, +0.000] n {2 * config.n}"
    assert lines["file_of_16_meets_bar_rate"].startswith("n/a")  # 12 items: no 16-item file to draw


def test_intervention_reuses_responses_and_gold(tiny_run, monkeypatch):
    from interp.causal.design import TestDesign
    from interp.causal.intervene import intervene_run
    from interp.engine.executor import Execution
    from interp.hooks.spec import AttentionIntervention

    def refuse(*args, **kwargs):
        raise AssertionError("an intervention run must not generate or re-run gold judges")

    monkeypatch.setattr("transformers.generation.utils.GenerationMixin.generate", refuse)
    monkeypatch.setattr("interp.run.gold.reference.ReferenceJudge.p_slot_a", refuse)
    out, config, _ = tiny_run
    result = intervene_run(
        out,
        AttentionIntervention(target="self", alpha=0.0),
        design=TestDesign(span_controls=True),
        execution=Execution(progress=False),
    )
    assert result.reused.responses == 12 and result.reused.responses_generated == 0
    assert result.reused.gold_verdicts == 6 and result.reused.gold_judges_rerun == 0
    for judge in config.models:
        judge_result = result.judges[judge]
        assert set(judge_result.effects) == {"self", "other", "random"}
        assert judge_result.verdict.startswith(judge)
        records = read_jsonl(out / "variants" / result.variant_keys[judge]["self"] / "judgments.jsonl")
        assert len([r for r in records if r["judge"] == judge]) == 12


def test_dbg_cli_with_attention_draws_figure7_into_the_report(tmp_path, tiny_llama_dir, tiny_gemma3_dir, forked_cli):
    from interp.report.attention import SECTION_TITLE

    config = tiny_config(tiny_llama_dir, tiny_gemma3_dir, n=4, attention="final")
    out = tmp_path / "out"
    result = forked_cli("dbg", write_config(tmp_path / "run.toml", config), "--out", out)
    assert result.returncode == 0, result.stderr
    default = (out / "figures" / "attention_figure7.png").read_bytes()
    assert SECTION_TITLE in (out / "report.html").read_text()
    result = forked_cli("attention", out, "--paper-layout")
    assert result.returncode == 0, result.stderr
    assert (out / "figures" / "attention_figure7.png").read_bytes() != default  # authors in rows now


def test_two_concurrent_dbg_on_one_out_one_runs_the_other_exits_2_naming_its_pid(
    tmp_path, tiny_llama_dir, tiny_llama_b_dir, forked_cli
):
    config = write_config(tmp_path / "run.toml", tiny_config(tiny_llama_dir, tiny_llama_b_dir, n=6))
    out = tmp_path / "out"
    first = subprocess.Popen(
        [sys.executable, "-m", "interp.cli", "dbg", str(config), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not (out / "config.toml").exists():  # the first holds the lock once it writes
            assert first.poll() is None, first.communicate()[1][-3000:]
            time.sleep(0.05)
        second = forked_cli("dbg", config, "--out", out)
        assert first.poll() is None  # the second gave up while the first was still writing
    finally:
        stdout, stderr = first.communicate(timeout=600)
    assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
    assert second.stderr.startswith("error:") and f"pid {first.pid}" in second.stderr, second.stderr
    assert first.returncode == 0, stderr[-3000:]
    judgments = [(r["judge"], r["item_id"], r["order"]) for r in read_jsonl(out / "judgments.jsonl")]
    assert len(judgments) == len(set(judgments)) == 2 * 6 * 2  # two judges, six items, both orders, no duplicate
    gold = [(r["judge"], r["item_id"]) for r in read_jsonl(out / "gold.jsonl")]
    assert len(gold) == len(set(gold)) == 6
    summary = json.loads((out / "summary.json").read_text())
    assert all(s["n_judgments"] == 12 for s in summary["judges"].values())


def test_a_failed_dbg_leaves_nothing_and_the_corrected_config_runs_on_the_same_out(
    tmp_path, tiny_llama_dir, tiny_llama_b_dir, forked_cli
):
    out = tmp_path / "out"
    wrong = tiny_config(tiny_llama_dir, tiny_llama_b_dir, n=2, models=("no-such-alias", str(tiny_llama_b_dir)))
    result = forked_cli("dbg", write_config(tmp_path / "wrong.toml", wrong), "--out", out)
    assert result.returncode == 2 and result.stderr.startswith("error: unknown model alias"), result.stderr
    assert not out.exists()
    fixed = tiny_config(tiny_llama_dir, tiny_llama_b_dir, n=2)
    result = forked_cli("dbg", write_config(tmp_path / "fixed.toml", fixed), "--out", out, "--no-report")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        load_run_config(out / "config.toml") == fixed.model_copy(update={"dtype": "float32"})
        and len(read_jsonl(out / "judgments.jsonl")) == 8
    )


def test_a_run_is_keyed_by_its_adapter_weights_not_the_organism_name(tmp_path, tiny_run, monkeypatch):
    """Same config, other adapter weights under the same name: resuming or re-judging the run is refused."""
    import shutil

    import interp.run.pipeline as pipeline
    from interp.engine.judges import judge_pool
    from interp.run.store import RunDir, read_run

    out, config, _ = tiny_run
    assert json.loads((out / "adapters.json").read_text())["fingerprints"] == {}  # plain models load no adapter
    run_dir = tmp_path / "run"
    shutil.copytree(out, run_dir)
    judge = config.judge_specs[0]
    # judged by those weights (written as before its schema version: the fingerprints at the top level)
    (run_dir / "adapters.json").write_text(json.dumps({judge: "0123456789abcdef"}))
    monkeypatch.setattr(pipeline, "adapter_fingerprint", lambda spec: "0123456789abcdef" if spec == judge else None)
    pipeline.check_resumable(config, RunDir(run_dir))  # the same weights: fine
    judge_pool(read_run(run_dir))
    monkeypatch.setattr(pipeline, "adapter_fingerprint", lambda spec: "fedcba9876543210" if spec == judge else None)
    with pytest.raises(InterpError, match=f"other adapter weights for {judge}"):
        run_dbg(config, run_dir, progress=False)
    with pytest.raises(InterpError, match="other adapter weights"):
        judge_pool(read_run(run_dir))


def test_dbg_ends_with_the_results_table_or_json(tiny_run, tmp_path, forked_cli):
    """A finished run resumed: nothing is judged again, the command ends with DBG per judge (or its JSON)."""
    import shutil

    out, config, summary = tiny_run
    run = tmp_path / "run"
    shutil.copytree(out, run)
    path = write_config(tmp_path / "run.toml", config)
    shown = forked_cli("dbg", path, "--out", run, "--no-report")
    assert shown.returncode == 0, shown.stderr
    assert "DBG per judge" in shown.stdout and "reliable" in shown.stdout
    as_json = forked_cli("dbg", path, "--out", run, "--no-report", "--json")
    assert as_json.returncode == 0, as_json.stderr
    payload = json.loads(as_json.stdout)
    assert [r["judge"] for r in payload["dbg"]] == list(summary.judges)
    for row in payload["dbg"]:
        scores = summary.judges[row["judge"]]
        assert row["dbg_hard"] == scores.dbg_hard and row["dbg_ci"] == scores.dbg_ci
        assert row["reliable"] == scores.reliable and row["unreliable_because"] == scores.unreliable_because


def test_a_resumed_run_whose_answers_are_all_there_needs_no_author_weights(
    tmp_path, tiny_llama_dir, tiny_llama_b_dir, monkeypatch
):
    """Judging resumes on a machine that lacks an author's weights (a GPU machine holding the judge's base only):
    an author whose every answer is in the run is neither converted (an alias's GGUF) nor loaded."""
    import shutil

    from interp.run import pipeline

    author_b = shutil.copytree(tiny_llama_b_dir, tmp_path / "author-b")
    config = tiny_config(tiny_llama_dir, author_b, n=3, judges=[str(tiny_llama_dir)])
    first = run_dbg(config, tmp_path / "run", progress=False)
    prepared = []
    real = pipeline.prepare_weights

    def recording(specs):
        prepared.extend(specs)
        real(prepared)

    monkeypatch.setattr(pipeline, "prepare_weights", recording)
    shutil.rmtree(author_b)
    (tmp_path / "run" / "summary.json").unlink()
    again = run_dbg(config, tmp_path / "run", progress=False)
    assert prepared == [str(tiny_llama_dir)]  # the judge (also an author: its answers are there too)
    assert again.judges == first.judges and again.n_items == 3
