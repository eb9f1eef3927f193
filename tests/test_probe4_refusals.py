"""The fourth held-out probe's smaller defects (issue 69), each refused in one line or now right:

A. `INTERP_THREADS` beyond what the machine can run (99999 crashed every command with a segmentation fault);
B. `[[relatedness]]` declaring one pair twice with two types, or a judge unrelated to itself;
C. a direction file that is not one vector (an 8x8 `.npy` was read as 64 numbers); a `judge.hooks` function
   that returns another shape than it was given (it was broadcast into the pass);
D. `--max-memory inf` and `interp.routes` with a string layer (both were tracebacks);
E. `schema_version: true` (read as 1); a JSON intervention spec (refused as "not valid TOML"); a relative
   `direction` file (read from the working directory, not the spec's folder); pointwise scores at a score-token
   mass of 1e-4 (no reliability flag); `Judge.load(folder).own` (the folder's base name, not the run's author).

The recognition probe's key (item 9) is tested beside the probe (tests/run/test_relatedness.py) and the plain
normaliser's emptied answers (item 12) beside the normaliser (tests/run/test_plain_style.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import tomli_w
import torch

import interp
from interp.config import RunConfig, load_toml_config, run_config_from_dict
from interp.core.threads import max_threads, pinned_threads
from interp.errors import InterpError
from interp.hooks.nodes import as_intervention
from interp.report.judging_modes import pointwise_rows
from interp.results import codec
from interp.results.summary import RunSummary
from interp.run.pointwise import pointwise_summary
from tests.test_probe3_refusals import one_error_line

QUERY, ANSWER_A, ANSWER_B = "What is 2 + 2?", "It is 4.", "Four, I think."


# ---- A: INTERP_THREADS ----------------------------------------------------------------------------------


def test_a_thread_count_the_machine_cannot_run_is_one_line(tmp_path, forked_cli):
    """Refused before any command runs (torch would start 99999 OpenMP threads and crash), never clamped."""
    for value in ("99999", str(max_threads() + 1)):
        with pytest.raises(InterpError, match=f"INTERP_THREADS={value} is more threads"):
            pinned_threads({"INTERP_THREADS": value})
        result = forked_cli("models", "--json", cwd=tmp_path, env={"INTERP_THREADS": value})
        one_error_line(result, f"INTERP_THREADS={value}", f"at most {max_threads()}")
    assert pinned_threads({"INTERP_THREADS": str(max_threads())}) == max_threads()  # the bound itself is allowed
    assert list(tmp_path.iterdir()) == []


# ---- B: [[relatedness]] ---------------------------------------------------------------------------------


def _config(**relatedness) -> dict:
    return {"models": ["m-a", "m-b"], **relatedness}


@pytest.mark.parametrize(
    ("pairs", "needle"),
    [
        (
            [
                {"judge": "m-a", "author": "m-b", "type": "family"},
                {"judge": "m-a", "author": "m-b", "type": "unrelated"},
            ],
            "declares 'm-a' -> 'm-b' twice, as 'family' and 'unrelated'",
        ),
        ([{"judge": "m-a", "author": "m-a", "type": "unrelated"}], "declares 'm-a' 'unrelated' to itself"),
        ([{"judge": "m-b", "author": "m-b", "type": "family"}], "declares 'm-b' 'family' to itself"),
    ],
    ids=["two-types", "unrelated-to-itself", "family-to-itself"],
)
def test_contradictory_relatedness_is_one_line(tmp_path, forked_cli, pairs, needle):
    with pytest.raises(InterpError, match=needle):
        run_config_from_dict(_config(relatedness=pairs))
    config = tmp_path / "run.toml"
    config.write_text(tomli_w.dumps(_config(relatedness=pairs)))
    with pytest.raises(InterpError, match="relatedness"):
        load_toml_config(config, RunConfig)
    result = forked_cli("dbg", config, "--out", tmp_path / "out", cwd=tmp_path)
    one_error_line(result, needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.toml"]


def test_consistent_relatedness_is_still_read():
    same = {"judge": "m-a", "author": "m-b", "type": "family"}
    config = run_config_from_dict(_config(relatedness=[same, same, {"judge": "m-a", "author": "m-a", "type": "same"}]))
    assert [p.type for p in config.relatedness] == ["family", "family", "same"]


# ---- C: directions and hooks of the wrong shape -------------------------------------------------------------


@pytest.mark.parametrize("shape", [(8, 8), (1, 8), ()], ids=["8x8", "1x8", "scalar"])
def test_a_direction_that_is_not_one_vector_is_one_line(tmp_path, shape):
    np.save(tmp_path / "d.npy", np.ones(shape))
    from safetensors.torch import save_file

    save_file({"d": torch.ones(shape)}, str(tmp_path / "d.safetensors"))
    for source in (tmp_path / "d.npy", tmp_path / "d.safetensors", torch.ones(shape)):
        with pytest.raises(InterpError, match=rf"has shape \({', '.join(map(str, shape))},?\); a direction is one"):
            as_intervention(site="residual", op="add", layers=[0], direction=source)
    np.save(tmp_path / "v.npy", np.ones(8))
    assert len(as_intervention(site="residual", op="add", layers=[0], direction=tmp_path / "v.npy").direction) == 8


@pytest.fixture(scope="module")
def judge(tiny_llama_dir):
    return interp.Judge.load(str(tiny_llama_dir), device="cpu")


@pytest.mark.parametrize(
    ("point", "change", "returned"),
    [
        ("blocks.0.hook_resid_post", lambda h: h[0], lambda s: s[1:]),
        ("blocks.0.hook_mlp_out", lambda h: h.mean(dim=(0, 1)), lambda s: s[2:]),
        ("blocks.1.attn.hook_z", lambda z: z.flatten(-2), lambda s: (*s[:2], s[2] * s[3])),
    ],
    ids=["batch-dropped", "one-vector", "heads-joined"],
)
def test_a_hook_returning_another_shape_is_one_line_naming_both(judge, point, change, returned):
    seen = {}

    def hook(activation):
        seen["shape"] = tuple(activation.shape)
        return change(activation)

    with judge.hooks({point: hook}):
        with pytest.raises(InterpError) as error:
            judge(QUERY, ANSWER_A, ANSWER_B)
    message = str(error.value)
    assert "\n" not in message and point in message
    assert f"shape {tuple(returned(seen['shape']))}" in message and f"of shape {seen['shape']}" in message
    with judge.hooks({point: lambda h: "no tensor"}):
        with pytest.raises(InterpError, match=f"the hook at '{point}' returned str"):
            judge(QUERY, ANSWER_A, ANSWER_B)
    before = judge(QUERY, ANSWER_A, ANSWER_B).p_a
    with judge.hooks({point: lambda h: h.clone()}):  # the same shape: allowed, and the identity
        assert judge(QUERY, ANSWER_A, ANSWER_B).p_a == pytest.approx(before, abs=1e-6)


# ---- D: --max-memory inf, interp.routes with a string layer --------------------------------------------------


@pytest.mark.parametrize(
    ("value", "needle"), [("inf", "max_memory must be a finite number of GB"), ("nan", "'--max-memory'")]
)
def test_an_infinite_memory_budget_is_one_line(tmp_path, forked_cli, value, needle):
    result = forked_cli("intervene", tmp_path / "run", "--all-layers", "--max-memory", value, cwd=tmp_path)
    one_error_line(result, needle)
    with pytest.raises(InterpError, match="max_memory must be a finite number"):
        interp.intervene(tmp_path / "run", all_layers=True, max_memory=float(value))
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f'run = "{tmp_path / "run"}"\nmax_memory = {value}\n')
    from interp.studies.sweeps import load_sweep_config

    with pytest.raises(InterpError, match="max_memory"):
        load_sweep_config(sweep)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.toml"]


@pytest.mark.parametrize(
    ("heads", "needle"),
    [
        ({"3": [0]}, "heads: layer '3' must be an int, not str"),
        ({3: "0"}, "heads: layer 3 needs a non-empty list of head indices"),
        ({3: ["0"]}, "heads: layer 3's head '0' must be an int"),
        ({True: [0]}, "heads: layer True must be an int"),
        ({-1: [0]}, "must be at least 0"),
        ({3: []}, "non-empty list"),
    ],
)
def test_routes_with_a_string_layer_is_one_line(tmp_path, heads, needle):
    with pytest.raises(InterpError, match=needle):
        interp.routes(tmp_path / "run", "judge", heads)  # refused before the run is read
    assert list(tmp_path.iterdir()) == []


# ---- E: smaller ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [True, False, -1, "1", 1.0])
def test_a_schema_version_that_is_no_whole_number_is_refused(version):
    with pytest.raises(InterpError, match=f"schema_version {version!r} is not a version"):
        codec.parse(RunSummary, {"schema_version": version})
    assert codec.parse(RunSummary, {"schema_version": 1}).schema_version == 1


def test_a_json_spec_is_read_and_its_direction_comes_from_its_folder(tmp_path, monkeypatch):
    """A spec named .json, or whose text is a JSON object, is JSON; a relative `direction` file is read from the
    spec's folder wherever the command runs (the working directory holds another file of that name)."""
    folder = tmp_path / "specs"
    folder.mkdir()
    np.save(folder / "d.npy", np.arange(1.0, 9.0))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    np.save(elsewhere / "d.npy", np.ones(4))
    keys = {"site": "residual", "op": "add", "layers": [0], "direction": "d.npy", "coefficient": 2.0}
    (folder / "spec.json").write_text(json.dumps(keys))
    (folder / "spec.txt").write_text(json.dumps(keys, indent=1))
    (folder / "spec.toml").write_text(tomli_w.dumps(keys))
    monkeypatch.chdir(elsewhere)
    for name in ("spec.json", "spec.txt", "spec.toml"):
        spec = as_intervention(folder / name)
        assert spec.direction == tuple(np.arange(1.0, 9.0)) and spec.coefficient == 2.0, name
    assert as_intervention(Path("..") / "specs" / "spec.json").direction == tuple(np.arange(1.0, 9.0))
    (folder / "bad.json").write_text("[1, 2]")
    with pytest.raises(InterpError, match="must be a JSON object"):
        as_intervention(folder / "bad.json")
    (folder / "broken.json").write_text('{"site": ')
    with pytest.raises(InterpError, match="not valid JSON"):
        as_intervention(folder / "broken.json")
    assert os.getcwd() == str(elsewhere)


def test_pointwise_scores_at_a_tiny_score_mass_are_flagged():
    """The pairwise labels' rule (mean label mass under 0.5: unreliable), on the score tokens 1-5."""
    row = {"judge": "j", "author": "m-a", "expected_score": 3.0, "parsed_score": None}
    summary = pointwise_summary([row | {"label_mass": 1e-4}], ["m-a"])["j"]
    assert summary["reliable"] is False and summary["unreliable_because"] == ["mean label mass 0.00 < 0.50"]
    assert pointwise_summary([row | {"label_mass": 0.9}], ["m-a"])["j"]["reliable"] is True
    (shown,) = pointwise_rows({"pointwise": {"j": summary}})
    assert shown.reliable is False
    older = {k: v for k, v in summary.items() if k not in ("reliable", "unreliable_because")}  # written before
    assert pointwise_rows({"pointwise": {"j": older}})[0].unreliable_because == summary["unreliable_because"]


def test_a_loaded_folder_judge_owns_what_a_run_names_its_author(judge, tiny_llama_dir):
    """A run names an author by the spec it was given (the folder's path); a judge loaded from that folder owns
    its answers under that same name, so its verdicts find its own slot."""
    config = RunConfig(models=(str(tiny_llama_dir), "other"))
    assert judge.own == str(tiny_llama_dir) == interp.own_model(config.models[0])
    verdict = judge(QUERY, ANSWER_A, ANSWER_B, authors=(str(tiny_llama_dir), "other"))
    assert verdict.own_slot == "a"
