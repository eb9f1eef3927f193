"""`interp intervene`: a result is keyed by everything that determines it, so a second spec judges again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hooks.spec import AttentionIntervention
from interp.experiments.causal import intervene_run
from interp.storage import read_jsonl

from tests.helpers import run_cli


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> Path:
    """A finished run of two tiny 2-layer Llamas (3 items): the run each test copies."""
    from interp.config import RunConfig
    from interp.run.pipeline import run_dbg
    from transformers import LlamaForCausalLM

    from tests.helpers.models import save_tiny, tiny_llama_config

    root = tmp_path_factory.mktemp("causal")
    other = save_tiny(root / "model_b", tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=7)
    config = RunConfig(name="causal", n=3, models=(str(tiny_llama_dir), str(other)), max_new_tokens=4, max_words=10, n_boot=20, attention="none")
    run_dbg(config, root / "run", progress=False)
    return root / "run"


def spec_file(folder: Path, layer: int) -> Path:
    path = folder / f"mask_layer_{layer}.toml"
    path.write_text(f'target = "self"\nalpha = 0.0\nlayers = [{layer}]\nname = "self-mask"\n')
    return path


def result_of(run: Path, label_prefix: str = "self-mask") -> dict[str, dict]:
    """Every intervention result of the run, by its folder name (label-hash)."""
    return {p.name: json.loads((p / "result.json").read_text()) for p in sorted((run / "interventions").glob(f"{label_prefix}-*"))}


def comparable(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "run_dir"}


def test_a_second_spec_judges_again_and_matches_a_fresh_run_of_it_alone(small_run, tmp_path):
    """The two-spec repro: mask layer 0, then the same spec on the last layer (--no-controls), on one run."""
    both, alone = tmp_path / "both", tmp_path / "alone"
    shutil.copytree(small_run, both)
    shutil.copytree(small_run, alone)
    first, last = spec_file(tmp_path, 0), spec_file(tmp_path, 1)
    for spec in (first, last):
        result = run_cli("intervene", str(both), "--spec", str(spec), "--no-controls")
        assert result.returncode == 0, result.stderr[-3000:]
    results = result_of(both)
    assert len(results) == 2  # two folders: same label, different keys
    by_layer = {tuple(r["spec"]["layers"]): r for r in results.values()}
    assert set(by_layer) == {(0,), (1,)}
    keys = {layers: r["variant_keys"] for layers, r in by_layer.items()}
    for judge in keys[(0,)]:
        assert keys[(0,)][judge]["self"] != keys[(1,)][judge]["self"]
        # the second spec judged every item in both orders under its own key
        records = read_jsonl(both / "variants" / keys[(1,)][judge]["self"] / "judgments.jsonl")
        assert sorted((r["item_id"], r["order"]) for r in records if r["judge"] == judge) == sorted(
            (i, o) for i in {r["item_id"] for r in records} for o in ("ab", "ba")
        ) and len(records) == 6
    result = run_cli("intervene", str(alone), "--spec", str(last), "--no-controls")
    assert result.returncode == 0, result.stderr[-3000:]
    (fresh,) = result_of(alone).values()
    assert comparable(fresh) == comparable(by_layer[(1,)])
    assert comparable(by_layer[(0,)])["judges"] != comparable(fresh)["judges"]  # layer 0's numbers are not reported as layer 1's


def test_the_same_spec_twice_reuses_its_judgments(small_run, tmp_path, monkeypatch):
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    spec = AttentionIntervention(target="self", alpha=0.0, layers=(0,))
    first = intervene_run(run, spec, with_controls=False, progress=False)

    def refuse(*args, **kwargs):
        raise AssertionError("a result with the same key must be reused, not judged again")

    monkeypatch.setattr("interp.run.judging.judge_batch", refuse)
    again = intervene_run(run, spec, with_controls=False, progress=False)
    assert again["judges"] == first["judges"]


def test_intervene_and_sweep_end_with_the_results_table_or_json(small_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    spec = spec_file(tmp_path, 0)
    shown = run_cli("intervene", str(run), "--spec", str(spec), "--no-controls")
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "DBG per judge" in shown.stdout and "Causal test" in shown.stdout and "report: " in shown.stdout
    as_json = run_cli("intervene", str(run), "--spec", str(spec), "--no-controls", "--json")
    assert as_json.returncode == 0, as_json.stderr[-3000:]
    payload = json.loads(as_json.stdout)  # stdout holds only the JSON
    (stored,) = result_of(run).values()
    assert [r["judge"] for r in payload["causal"]] == list(stored["judges"])
    for row in payload["causal"]:
        judged = stored["judges"][row["judge"]]
        assert row["causal"] == judged["causal"] and row["effect"]["mean"] == judged["effects"]["self"]["mean"]
        assert row["n_test"] == stored["n_items"] == 3
    summary = json.loads((run / "summary.json").read_text())
    assert {r["judge"]: r["dbg_hard"] for r in payload["dbg"]} == {j: s.get("dbg_hard") for j, s in summary["judges"].items()}

    config = tmp_path / "sweep.toml"
    config.write_text(f'run = "{run}"\nname = "tiny"\ntargets = ["self"]\nalphas = [0.0]\nall_layers = true\n[layers]\neach = true\n[heads]\ntop_k = []\nrandom_seeds = []\n')
    swept = run_cli("sweep", str(config), "--json")
    assert swept.returncode == 0, swept.stderr[-3000:]
    payload = json.loads(swept.stdout)
    rows = Path(payload["files"]["results"]).read_text().splitlines()
    assert payload["sweep"]["n_points"] == len(rows) - 1 > 0 and payload["files"]["results"].endswith("results.csv")
    effects = [r["effect"]["mean"] for r in payload["sweep"]["top"]]
    assert effects == sorted(effects)
    shown = run_cli("sweep", str(config))
    assert shown.returncode == 0 and "Sweep:" in shown.stdout and "DBG per judge" in shown.stdout
