"""Node interventions through every door: `interp intervene --spec`, `interp.intervene`, `judge.applying`, sweeps.

A tiny run of two 2-layer Llamas, three control judges outside it: a head_output mean ablation is tested against
the controls and reports its share of the gap removed and Breaking the Mirror's shares; the same spec in Python
gives the same P(own) per judgment; a user's kind runs through the API and a sweep; a model whose attention
exposes no head outputs is refused in one line with nothing written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from tests.causal.test_intervene import tiny_controls, tiny_pair_run

SPEC = (
    'site = "head_output"\nop = "mean"\nlayers = [1]\nheads = { 1 = [0, 2] }\npositions = "all"\nname = "heads-mean"\n'
)


@pytest.fixture(scope="module")
def node_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("nodes")
    run = tiny_pair_run(root, tiny_llama_dir, smollm2_tokenizer, n=4, attention="none")
    return run, tiny_controls(root, smollm2_tokenizer)


def test_a_head_output_mean_ablation_runs_the_causal_test_and_matches_python(node_run, tmp_path, forked_cli):
    import interp
    from interp.run.store import read_run

    source, controls = node_run
    run = tmp_path / "run"
    shutil.copytree(source, run)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    judge, other = read_run(run).config.models
    result = forked_cli(
        "intervene", str(run), "--spec", str(spec), "--judge", judge, "--control-judge", ",".join(controls), "--json"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (folder,) = (run / "interventions").iterdir()
    written = json.loads((folder / "result.json").read_text())
    assert written["spec"]["site"] == "head_output" and written["spec"]["op"] == "mean"
    record = written["judges"][judge]
    assert record["test"]["n_controls"] == 3 and isinstance(record["causal"], bool)
    assert "share_removed" in record and (record["share_removed"] is None) == (
        record["share_removed_reason"] is not None
    )
    mirror = record["mirror"]
    for key in (
        "unjustified",
        "unjustified_flipped_share",
        "unjustified_flipped_ci",
        "legitimate",
        "legitimate_kept_share",
        "legitimate_kept_ci",
    ):
        assert key in mirror
    assert mirror["unjustified"] + mirror["legitimate"] <= record["n_test"]
    # the variant's judgments, re-made in Python through judge.applying with the run as reference
    key = written["variant_keys"][judge]["self"]
    records = [json.loads(line) for line in (run / "variants" / key / "judgments.jsonl").read_text().splitlines()]
    assert (run / "variants" / key / "means.safetensors").is_file()
    loaded = read_run(run)
    items = {item.id: item for item in loaded.items}
    held = interp.Judge.load(judge, device="cpu")
    with held.applying(spec, reference=run):
        for rec in records:
            item = items[rec["item_id"]]
            a, b = (loaded.responses[rec["model_a"]][item.id], loaded.responses[rec["model_b"]][item.id])
            verdict = held(item.query, a, b, task=item.task, authors=(rec["model_a"], rec["model_b"]))
            assert verdict.p_a == pytest.approx(rec["p_a"], abs=1e-6)
    plain = held(item.query, a, b, task=item.task, authors=(rec["model_a"], rec["model_b"]))
    assert abs(plain.p_a - rec["p_a"]) > 1e-6  # the ablation changed the verdict


def _register_scale():
    from dataclasses import dataclass

    from interp.hooks.nodes import NodeIntervention, register

    @register
    @dataclass(frozen=True)
    class ScaleBy(NodeIntervention):
        op = "scale-by-test"
        factor: float = 0.25

        def replacement(self, activation, context):
            return activation * self.factor

    return ScaleBy


def test_a_registered_kind_runs_through_interp_intervene_and_a_sweep(node_run, tmp_path):
    import interp
    from interp.run.store import read_run
    from interp.studies.sweeps import run_sweep

    _register_scale()
    source, controls = node_run
    run = tmp_path / "run"
    shutil.copytree(source, run)
    judge, _ = read_run(run).config.models
    result = interp.intervene(
        run,
        site="mlp_output",
        op="scale-by-test",
        factor=0.0,
        layers=[0],
        judges=[judge],
        control_judge=",".join(controls),
        progress=False,
    )
    record = result.raw["judges"][judge]
    assert result.raw["spec"] == {
        "site": "mlp_output",
        "op": "scale-by-test",
        "layers": [0],
        "heads": None,
        "positions": "all",
        "seed": 0,
        "name": None,
        "factor": 0.0,
    }
    assert record["test"]["n_controls"] == 3
    zero = interp.intervene(
        run, site="mlp_output", op="zero", layers=[0], judges=[judge], control_judge=",".join(controls), progress=False
    )
    assert zero.raw["judges"][judge]["per_item_delta"] == pytest.approx(
        record["per_item_delta"], abs=1e-9
    )  # 0 x = zero
    config = tmp_path / "sweep.toml"
    config.write_text(
        f'run = "{run}"\nname = "nodes"\nsites = ["mlp_output", "head_output"]\nops = ["scale-by-test", '
        '"zero"]\n[layers]\neach = true\n'
    )
    rows = (run_sweep(config, progress=False)).read_text().splitlines()
    header = rows[0].split(",")
    assert {"site", "op", "positions"} <= set(header)
    assert len(rows) - 1 == 2 * 2 * 2 * 2  # two self-judges x 2 layers x 2 sites x 2 ops
    assert any(",scale-by-test," in row for row in rows[1:])


def test_a_model_without_head_outputs_is_refused_in_one_line_with_nothing_written(node_run, tmp_path, forked_cli):
    """An attention module whose output projection is wrapped away exposes no per-head output: a head_output spec
    is refused before any judging, the run folder untouched; from the CLI, a spec the model cannot take is one
    `error:` line."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import interp
    from interp.errors import InterpError
    from interp.run.store import read_run

    source, controls = node_run
    run = tmp_path / "run"
    shutil.copytree(source, run)
    judge, _ = read_run(run).config.models
    before = sorted(p.relative_to(run).as_posix() for p in run.rglob("*"))

    class Fused(torch.nn.Module):  # the projection's input is no longer the heads side by side
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)

    model = AutoModelForCausalLM.from_pretrained(judge)
    for layer in model.model.layers:
        layer.self_attn.o_proj = Fused(layer.self_attn.o_proj)
    held = interp.Judge.wrap(model, AutoTokenizer.from_pretrained(judge), name=judge)
    with pytest.raises(InterpError, match="exposes no per-head output"):
        interp.intervene(
            run,
            site="head_output",
            op="zero",
            layers=[1],
            heads=[0],
            judges=[held],
            control_judge=",".join(controls),
            progress=False,
        )
    assert sorted(p.relative_to(run).as_posix() for p in run.rglob("*")) == before
    spec = tmp_path / "spec.toml"
    spec.write_text('site = "head_output"\nop = "zero"\nlayers = [9]\n')
    result = forked_cli(
        "intervene", str(run), "--spec", str(spec), "--judge", judge, "--control-judge", ",".join(controls)
    )
    assert result.returncode == 2 and result.stderr.count("error:") == 1 and "Traceback" not in result.stderr
    assert "layer 9 is out of range" in result.stderr
    assert sorted(p.relative_to(run).as_posix() for p in run.rglob("*")) == before


def test_top_heads_on_their_outputs_from_the_cli(tmp_path, tiny_llama_dir, smollm2_tokenizer, forked_cli):
    """--top-heads K --site head_output --op zero: the K heads chosen on the selection split (own-minus-other
    attention) get their outputs zeroed, tested on the rest against random head sets; the mask design's key is
    unchanged by the new options."""
    from interp.causal.design import TestDesign
    from interp.run.store import read_run

    run = tiny_pair_run(tmp_path, tiny_llama_dir, smollm2_tokenizer, n=6, attention="final")
    controls = tiny_controls(tmp_path, smollm2_tokenizer)
    judge, _ = read_run(run).config.models
    options = [
        "--top-heads",
        "2",
        "--selection-share",
        "0.5",
        "--judge",
        judge,
        "--control-judge",
        ",".join(controls),
        "--random-head-sets",
        "19",
    ]
    result = forked_cli("intervene", str(run), *options, "--site", "head_output", "--op", "zero")
    assert result.returncode == 0, result.stderr[-3000:]
    (written,) = [json.loads((p / "result.json").read_text()) for p in (run / "interventions").iterdir()]
    spec = written["spec"]
    assert spec["site"] == "head_output" and spec["op"] == "zero" and sum(len(h) for h in spec["heads"].values()) == 2
    assert written["design"]["site"] == "head_output" and written["judges"][judge]["n_test"] == 3
    assert "site" not in TestDesign(heads="top-heads", top_k=2, selection_share=0.5).record()
    bad = forked_cli("intervene", str(run), *options, "--site", "head_output", "--op", "melt")
    assert bad.returncode == 2 and "not a node intervention kind" in bad.stderr


def test_controls_let_go_under_a_memory_budget_give_the_same_result(node_run, tmp_path, monkeypatch):
    """max_memory = 0: every control is let go once judged (and loaded again when the random sets need it);
    the result is the same as with every model kept, and no more than the tested judge and one control are
    ever held at once."""
    from interp.causal.design import TestDesign
    from interp.causal.intervene import intervene_run
    from interp.engine import judges
    from interp.engine.executor import Execution
    from interp.run.store import read_run

    source, controls = node_run
    kept_run, released_run = tmp_path / "kept", tmp_path / "released"
    shutil.copytree(source, kept_run)
    shutil.copytree(source, released_run)
    judge, _ = read_run(kept_run).config.models
    design = TestDesign(heads="all-layers", control_judges=tuple(controls))
    kept = intervene_run(kept_run, design=design, judges=[judge], execution=Execution(progress=False, max_memory=2**50))
    most = []
    real = judges.Judges.model

    def counting(self, name):
        model = real(self, name)
        most.append(len(self.models.models))
        return model

    monkeypatch.setattr(judges.Judges, "model", counting)
    released = intervene_run(
        released_run, design=design, judges=[judge], execution=Execution(progress=False, max_memory=0)
    )
    assert max(most) <= 2
    strip = lambda r: {k: v for k, v in r.judges[judge].to_json().items() if k not in ("controls",)}  # noqa: E731
    assert strip(released) == strip(kept)
    assert released.judges[judge].controls == kept.judges[judge].controls


def test_a_node_spec_that_cannot_move_the_logits_is_refused_before_judging(node_run):
    """The probe before a run: zeroing the spec's selection on one prompt must change the logits. An MLP whose
    down projection is all zeros writes nothing, so a spec on its output is refused in one line."""
    from interp.core.models import load_model
    from interp.engine.variants import Variant, check_nodes_take_effect
    from interp.errors import InterpError
    from interp.hooks.nodes import node_from_dict
    from interp.run.store import read_run

    source, _ = node_run
    run = read_run(source)
    model = load_model(run.config.models[0], device="cpu")
    dead = Variant("dead", (node_from_dict({"site": "mlp_output", "op": "mean", "layers": [0]}),))
    live = Variant("live", (node_from_dict({"site": "mlp_output", "op": "mean", "layers": [1]}),))
    with torch.no_grad():
        model.hf_model.model.layers[0].mlp.down_proj.weight.zero_()
    check_nodes_take_effect(run, model, [live], run.items)
    with pytest.raises(InterpError, match="does not change .* logits"):
        check_nodes_take_effect(run, model, [live, dead], run.items)
