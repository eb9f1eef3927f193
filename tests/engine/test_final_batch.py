"""The engine's cached final-position path: a study's verdict-position variants judged item-major over each prompt's
clean keys and values equal the full re-judge (same keys, P(own) to 1e-5) in every judging mode a re-judge supports;
the variant's file says which path it took; `--path cached` on an edit the path cannot represent is one line with
nothing written; `--path full` never takes it."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from interp.engine.executor import Execution, VariantTask, execute
from interp.engine.judges import judge_pool
from interp.engine.variants import Variant, variant_key
from interp.errors import InterpError
from interp.hooks.nodes import node_from_dict
from interp.hooks.spec import AttentionIntervention
from interp.hooks.steering import ResidualSteering
from interp.run.store import read_run
from tests.engine.test_rejudge_modes import make_run, other_dir  # noqa: F401  (fixtures)

TOL = 1e-5


def final_variants(hidden: int) -> list[Variant]:
    """One variant per site kind, every one at the final position."""
    direction = torch.randn(hidden, generator=torch.Generator().manual_seed(1))
    heads = {0: [1, 2], 1: [0]}
    node = lambda **keys: node_from_dict({"positions": "final", **keys})  # noqa: E731
    return [
        Variant("mask", (AttentionIntervention(target="self", alpha=0.0, queries="final"),)),
        Variant("mean", (node(site="head_output", op="mean", heads=heads),)),
        Variant("resample", (node(site="head_output", op="resample", heads=heads),)),
        Variant("patch", (node(site="head_output", op="patch", heads=heads, counterfactual="swap"),)),
        Variant("mlp", (node(site="mlp_output", op="zero", layers=[1]),)),
        Variant("project", (node(site="residual", op="project_out", layers=[0], direction=direction.tolist()),)),
        Variant("steer", (ResidualSteering(1, 2.0, "add", "final", direction),)),
    ]


def _copies(tmp_path, source):
    full, cached = tmp_path / "full", tmp_path / "cached"
    shutil.copytree(source, full)
    shutil.copytree(source, cached)
    return read_run(full), read_run(cached)


def _judged(run, path: str, variants):
    judges = Execution(path=path, progress=False).pool(run)
    judge = run.config.judge_specs[0]
    tasks = [VariantTask(str(run.dir.root), judge, v) for v in variants]
    with run.dir.writer():
        execute(run, tasks, judges)
    return judge, {v.name: judges.judged(run, judge, v, progress=False) for v in variants}


def _path_of(run, judge, variant) -> str:
    key = variant_key(run, judge, "hf", variant, run.items)
    return json.loads((run.dir.variant(key) / "variant.json").read_text())["path"]


@pytest.mark.parametrize("mode", ["plain", "ties", "cot-standard"])
def test_the_cached_path_equals_the_full_rejudge_in_every_mode(mode, request, tmp_path):
    made = request.getfixturevalue("make_run")
    keys = {"plain": {}, "ties": {"ties": True}, "cot-standard": {"cot": "standard", "max_rationale_tokens": 6}}
    full_run, cached_run = _copies(tmp_path, made(mode, **keys[mode]))
    hidden = judge_pool(full_run).model(full_run.config.judge_specs[0]).hf_model.config.hidden_size
    variants = final_variants(hidden)
    judge, full = _judged(full_run, "full", variants)
    _, cached = _judged(cached_run, "cached", variants)
    moved = 0
    for variant in variants:
        assert np.allclose(cached[variant.name], full[variant.name], atol=TOL, rtol=0), variant.name
        assert _path_of(full_run, judge, variant) == "full"
        assert _path_of(cached_run, judge, variant) == "final_cached"
        moved += bool(np.abs(full[variant.name] - full["mask"]).max() > 1e-6)
    assert moved >= 3  # the variants differ from one another: no comparison of identical numbers


def test_auto_takes_the_full_path_for_an_edit_it_cannot_represent(request, tmp_path):
    made = request.getfixturevalue("make_run")
    run, _ = _copies(tmp_path, made("plain"))
    outside = Variant("outside", (AttentionIntervention(target="self", alpha=0.0),))
    final = Variant("final", (AttentionIntervention(target="self", alpha=0.0, queries="final"),))
    judge, _ = _judged(run, "auto", [outside, final])
    assert _path_of(run, judge, outside) == "full"
    assert _path_of(run, judge, final) == "final_cached"


def test_forcing_the_cached_path_on_an_edit_it_cannot_represent_is_one_line_and_writes_nothing(request, tmp_path):
    made = request.getfixturevalue("make_run")
    run, _ = _copies(tmp_path, made("plain"))
    before = (
        sorted(p.name for p in (run.dir.root / "variants").glob("*")) if (run.dir.root / "variants").exists() else []
    )
    outside = Variant("outside", (node_from_dict({"site": "head_output", "op": "zero", "heads": {0: [1]}}),))
    with pytest.raises(InterpError, match="--path cached.*positions 'all'"):
        _judged(run, "cached", [outside])
    after = (
        sorted(p.name for p in (run.dir.root / "variants").glob("*")) if (run.dir.root / "variants").exists() else []
    )
    assert after == before
    with pytest.raises(InterpError, match="unknown --path"):
        Execution(path="fast").pool(run)
