"""Re-judging a run in its own judging mode.

An identity intervention re-judges every pairwise mode (plain, three-way ties, chain of thought after the run's
own rationales, attention read after the answers) to the run's own P(own); a pointwise run, a run judged under
other prompts and a direction of the wrong size are refused in one line before anything is written; a
non-finite verdict under an intervention blames the intervention, not the weights.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from interp.engine.judges import baseline, judge_pool
from interp.engine.variants import Variant, judge_variant
from interp.errors import InterpError
from interp.hooks.nodes import node_from_dict
from interp.hooks.spec import AttentionIntervention
from interp.hooks.steering import ResidualSteering
from interp.run.store import read_run
from tests.test_refusals_before_work import refused_unchanged, run_cases, snapshot

MODES = {
    "plain": {},
    "ties": {"ties": True},
    "cot-standard": {"cot": "standard", "max_rationale_tokens": 6},
    "cot-long-ties": {"cot": "long", "ties": True, "max_rationale_tokens": 5},
    "attention-after": {"attention": "after"},
}


@pytest.fixture(scope="module")
def other_dir(tmp_path_factory, smollm2_tokenizer) -> Path:
    from transformers import LlamaForCausalLM

    from tests.helpers.models import save_tiny, tiny_llama_config

    folder = tmp_path_factory.mktemp("other")
    return save_tiny(folder, tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=7)


@pytest.fixture(scope="module")
def make_run(tmp_path_factory, tiny_llama_dir, other_dir):
    """A finished run of the two tiny Llamas over 3 items (both judge) with the given config keys, made once."""
    from interp.config import RunConfig
    from interp.run.pipeline import run_dbg

    made: dict[str, Path] = {}

    def make(name: str, **keys) -> Path:
        if name not in made:
            root = tmp_path_factory.mktemp(name)
            config = RunConfig(
                name=name,
                n=3,
                models=(str(tiny_llama_dir), str(other_dir)),
                max_new_tokens=4,
                max_words=10,
                n_boot=20,
                batch_size=4,
                empty_answers="judge",
                **keys,
            )
            run_dbg(config, root / "run", progress=False)
            made[name] = root / "run"
        return made[name]

    return make


def identities(hidden: int) -> list[Variant]:
    """Interventions that change nothing: a steering of coefficient 0, a dampening by 1, a patch from the
    prompt itself."""
    return [
        Variant("steer-0", (ResidualSteering(0, 0.0, "add", "all", torch.ones(hidden)),)),
        Variant("dampen-1", (AttentionIntervention(target="self", alpha=1.0, layers=(1,)),)),
        Variant("patch-same", (node_from_dict({"site": "residual", "op": "patch", "counterfactual": "same"}),)),
    ]


@pytest.mark.parametrize("mode", list(MODES))
def test_an_identity_intervention_gives_the_runs_own_p_own_in_every_pairwise_mode(make_run, mode):
    run = read_run(make_run(mode, **MODES[mode]))
    pool = judge_pool(run)
    for judge in run.config.judge_specs:
        before = baseline(run, judge)
        hidden = pool.model(judge).hf_model.config.hidden_size
        for variant in identities(hidden):
            after = pool.judged(run, judge, variant, progress=False)
            assert np.abs(after - before).max() < 1e-5, (mode, judge, variant.name, after - before)


def test_a_cot_rejudging_reads_the_verdict_after_the_runs_own_rationale(make_run):
    run = read_run(make_run("cot-standard", **MODES["cot-standard"]))
    judge = run.config.judge_specs[0]
    pool = judge_pool(run)
    judge_variant(run, judge, pool.runner(judge, run), Variant("nothing"), progress=False)
    (folder,) = [p for p in (run.dir.root / "variants").iterdir() if "nothing" in (p / "variant.json").read_text()]
    lines = [json.loads(line) for line in (folder / "judgments.jsonl").read_text().splitlines()]
    stored = {(r.item_id, r.order): r for r in run.dir.read_judgments(judge)}
    for line in lines:
        record = stored[line["item_id"], line["order"]]
        assert line["rationale"] == record.rationale and line["n_tokens"] == record.n_tokens


def test_a_pointwise_run_is_refused_before_anything_is_loaded_or_written(make_run):
    root = make_run("pointwise", mode="pointwise", max_rationale_tokens=4)
    before = snapshot(root)
    with pytest.raises(InterpError, match='pointwise run .*mode = "pairwise"'):
        judge_pool(read_run(root))
    assert snapshot(root) == before


def _other_prompts(run: Path) -> None:
    """prompts.json as another version would have written it: one judge's helpfulness prompt reworded."""
    record = json.loads((run / "prompts.json").read_text())
    judge = next(iter(record["judges"]))
    prompts = record["judges"][judge]["prompts"]
    record["judges"][judge]["prompts"] = {task: text.replace("Response", "Answer") for task, text in prompts.items()}
    (run / "prompts.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")


def test_a_run_judged_under_other_prompts_is_refused_by_the_engine(make_run, tmp_path):
    shutil.copytree(make_run("plain"), tmp_path / "run")
    _other_prompts(tmp_path / "run")
    run = read_run(tmp_path / "run")
    judge = next(iter(json.loads(run.dir.prompts.read_text())["judges"]))
    pool = judge_pool(run)
    before = snapshot(tmp_path)
    with pytest.raises(InterpError, match="other judge prompts"):
        pool.model(judge)
    with pytest.raises(InterpError, match="other judge prompts"):
        judge_variant(run, judge, _plain_runner(pool, judge), Variant("nothing"), progress=False)
    assert snapshot(tmp_path) == before


def _plain_runner(pool, judge):
    from interp.core.backends import make_backend

    return make_backend(pool.models.get(judge), "hf")


def test_a_direction_of_the_wrong_size_is_refused_before_its_variant_is_written(make_run, tmp_path):
    shutil.copytree(make_run("plain"), tmp_path / "run")
    run = read_run(tmp_path / "run")
    judge = run.config.judge_specs[0]
    pool = judge_pool(run)
    runner = pool.runner(judge, run)
    before = snapshot(tmp_path)
    steering = Variant("wide", (ResidualSteering(0, 1.0, "add", "all", torch.ones(7)),))
    node = Variant("wide-node", (node_from_dict({"site": "residual", "op": "add", "direction": [1.0] * 7}),))
    for variant in (steering, node):
        with pytest.raises(InterpError, match="7 dimensions but .*hidden size is"):
            judge_variant(run, judge, runner, variant, progress=False)
    assert snapshot(tmp_path) == before


def test_non_finite_verdicts_under_an_intervention_blame_the_intervention(make_run, tmp_path):
    shutil.copytree(make_run("plain"), tmp_path / "run")
    run = read_run(tmp_path / "run")
    judge = run.config.judge_specs[0]
    pool = judge_pool(run)
    hidden = pool.model(judge).hf_model.config.hidden_size
    blowup = Variant("blowup", (ResidualSteering(0, 1e300, "add", "all", torch.ones(hidden)),))
    with pytest.raises(InterpError) as caught:
        judge_variant(run, judge, pool.runner(judge, run), blowup, progress=False)
    assert "intervention 'blowup'" in str(caught.value) and "corrupt" not in str(caught.value)


# ---- at the CLI: one line, exit 2, nothing written ---------------------------------------------------


def _sweep(root: Path) -> None:
    (root / "sweep.toml").write_text(f'run = "{root / "run"}"\nname = "s"\n[layers]\neach = true\n')


CLI_CASES = {
    # id: (run, args, setup on the copy, expected text)
    "intervene on a pointwise run": (
        "pointwise",
        ["intervene", "{run}", "--spec", "{root}/spec.toml"],
        None,
        "pointwise run",
    ),
    "sweep on a pointwise run": ("pointwise", ["sweep", "{root}/sweep.toml"], _sweep, "pointwise run"),
    "restyle a pointwise run": (
        "pointwise",
        ["restyle", "{run}", "--style", "plain", "--out", "{root}/derived"],
        None,
        "pointwise run",
    ),
    "intervene on a run under other prompts": (
        "plain",
        ["intervene", "{run}", "--spec", "{root}/spec.toml"],
        lambda root: _other_prompts(root / "run"),
        "other judge prompts",
    ),
    "intervene with a direction of the wrong size": (
        "plain",
        ["intervene", "{run}", "--spec", "{root}/wide.toml"],
        None,
        "hidden size is",
    ),
}


@pytest.fixture(scope="module")
def cli_outcomes(make_run, tmp_path_factory, forked_cli) -> dict:
    runs = {"plain": make_run("plain"), "pointwise": make_run("pointwise", mode="pointwise", max_rationale_tokens=4)}
    jobs, roots = [], {}
    for index, (name, (source, args, setup, _)) in enumerate(CLI_CASES.items()):
        root = tmp_path_factory.mktemp(f"cli{index}")
        shutil.copytree(runs[source], root / "run")
        (root / "spec.toml").write_text('target = "self"\nalpha = 0.0\nlayers = [1]\n')
        (root / "wide.toml").write_text('site = "residual"\nop = "add"\nlayers = [0]\ndirection = [1.0, 2.0, 3.0]\n')
        if setup is not None:
            setup(root)
        roots[name] = (root, snapshot(root))
        jobs.append((args, root))
    return run_cases(forked_cli, jobs, roots)


@pytest.mark.parametrize("name", list(CLI_CASES))
def test_the_cli_refuses_before_writing_anything(cli_outcomes, name):
    refused_unchanged(cli_outcomes[name], CLI_CASES[name][3])
