"""`interp intervene RUN --spec temperature.toml`: the verdict-temperature kind runs through the causal test, every
result records its specificity check (the JSON and the table), a verdict needs it, and a lambda outside (0, 1] is
one `error:` line with nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from interp.results.codec import read_causal
from interp.run.store import read_run
from tests.causal.test_intervene import tiny_controls, tiny_pair_run


@pytest.fixture(scope="module")
def pair_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> Path:
    """Two tiny Llamas over 12 items (enough pairs for the check's line), no attention recorded."""
    return tiny_pair_run(
        tmp_path_factory.mktemp("specificity"), tiny_llama_dir, smollm2_tokenizer, n=12, attention="none"
    )


def temperature(folder: Path, value: str) -> Path:
    path = folder / f"temperature-{value}.toml"
    path.write_text(f'kind = "temperature"\nlambda = {value}\n')
    return path


def test_a_temperature_spec_is_tested_and_records_its_specificity(pair_run, tmp_path, smollm2_tokenizer, forked_cli):
    run = tmp_path / "run"
    shutil.copytree(pair_run, run)
    judge, _ = read_run(run).config.models
    controls = tiny_controls(tmp_path, smollm2_tokenizer)
    args = ("intervene", str(run), "--judge", judge, "--control-judge", ",".join(controls))
    result = forked_cli(*args, "--spec", str(temperature(tmp_path, "0.6")), env={"INTERP_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    (folder,) = (run / "interventions").iterdir()
    written = json.loads((folder / "result.json").read_text())
    assert written["spec"] == {"kind": "temperature", "lambda": 0.6, "name": None}
    record = written["judges"][judge]
    check = record["specificity"]
    assert check["method"] == "margin-adjusted" and isinstance(check["passed"], bool) and check["reason"]
    assert check["n_pairs"] == len(check["pairs"]) and set(check["pairs"]) <= set(written["test_items"])
    assert set(check["control_pairs"]) == set(controls) and check["alternative"] == "less"
    assert set(check["mirror"]) == {"unjustified", "unjustified_flipped_share", "legitimate", "legitimate_kept_share"}
    if check["p_value"] is not None:
        assert check["judge_slope"] is not None and len(check["control_intercepts"]) >= 3
    assert record["causal"] is not True or check["passed"]  # a verdict needs the check
    if record["causal_unadjusted"] and not check["passed"]:
        assert record["causal"] is False and record["reason"].startswith("specificity: ")
    assert "specific" in result.stdout  # the table's column
    typed = read_causal(folder).judges[judge]
    assert typed.specificity is not None and typed.specificity.passed == check["passed"]
    # the variant is keyed by the kind and lambda, in its own slot
    after = record["variants"]["self"]
    assert after["verdict"] == [{"kind": "temperature", "lambda": 0.6}] and after["attention"] is None


@pytest.mark.parametrize("value", ["1.5", "0", "-0.2"])
def test_a_lambda_outside_zero_one_is_one_error_line_and_nothing_is_written(pair_run, tmp_path, forked_cli, value):
    run = tmp_path / "run"
    shutil.copytree(pair_run, run)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    result = forked_cli("intervene", str(run), "--spec", str(temperature(tmp_path, value)), "--no-controls")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "'lambda'" in lines[0]
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before
