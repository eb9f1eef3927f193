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
    assert record["test"]["alternative"] == "less"  # one-sided in the removal direction
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


@pytest.mark.parametrize("value", ["none", "mirror"])
def test_a_specificity_check_that_is_not_one_is_one_error_line_and_nothing_is_written(
    pair_run, tmp_path, forked_cli, value
):
    run = tmp_path / "run"
    shutil.copytree(pair_run, run)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    args = ("intervene", str(run), "--spec", str(temperature(tmp_path, "0.6")), "--specificity", value)
    result = forked_cli(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: --specificity {value}") and "'margin'" in lines[0]
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before


def test_too_few_pairs_for_the_check_is_said_and_is_no_verdict():
    """Fewer usable pairs than the line needs: the check does not pass, says why, and a causal call is taken back."""
    import numpy as np

    from interp.causal.judge_test import own_answer_specificity, require_specificity
    from interp.metrics.specificity import MIN_PAIRS

    rng = np.random.default_rng(0)
    n = MIN_PAIRS - 1
    judge = (rng.uniform(0.6, 0.9, n), rng.uniform(0.3, 0.6, n))
    controls = {f"c{i}": (rng.uniform(0.4, 0.6, n), rng.uniform(0.4, 0.6, n)) for i in range(4)}
    options = {"test_alpha": 0.05, "n_boot": 50, "seed": 0, "method": "margin"}
    check = own_answer_specificity(judge, controls, [str(i) for i in range(n)], {}, options)
    assert check["passed"] is False and check["p_value"] is None and check["n_pairs"] == n
    assert check["reason"].startswith("too few pairs for the specificity check")
    result = {"judges": {"J": {"causal": True, "reason": None, "verdict": "J: causal", "specificity": check}}}
    require_specificity(result, ["J"])
    record = result["judges"]["J"]
    assert record["causal"] is False and record["reason"] == f"specificity: {check['reason']}"
    assert "too few pairs" in record["verdict"]


def test_the_design_takes_the_check_and_keeps_the_default_out_of_its_key():
    from interp.causal.design import TestDesign
    from interp.errors import InterpError

    assert "specificity" not in TestDesign().record()  # the keys of designs before the option stay what they were
    with pytest.raises(InterpError, match="needs the specificity check"):
        TestDesign(specificity="none")
