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
