"""One definition of a judge's own answers (`own_model`) in every analysis: a run judged by two authors and by
two organism-like aliases of the first author (as the demo's organisms are SmolLM2's) gives the organisms the
same outputs as the authors themselves: Figure 7's own-minus-other panel, head maps, per-layer tables, length
control, top heads, the Figure 2 grid, the lenses beside DBG, and the `dampen`/`bias_builder` "self" target.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from interp.analysis.attention_stats import (
    figure7_profiles,
    head_values,
    layer_differences,
    length_regression,
    top_heads,
)
from interp.core import models as core_models
from interp.core.models import Alias, LoadedModel, own_model
from tests.analysis.test_attention import MODELS, planted, write_run

X, Y = MODELS
NULL, PLANTED = "x-null-organism", "x-planted-organism"  # organisms of X: their own answers are X's
JUDGES = (X, Y, NULL, PLANTED)


@pytest.fixture
def organisms(monkeypatch):
    """Register the two aliases as organisms of X, as the shipped organisms are registered (ALIASES, base)."""
    for name in (NULL, PLANTED):
        monkeypatch.setitem(core_models.ALIASES, name, Alias(name, "none", "post", "test organism", base=X))


def _judgments_with_verdicts(root: Path) -> None:
    """Give every judge verdicts that vary over items (write_run's are all 0.5)."""
    rng = np.random.default_rng(3)
    path = root / "judgments.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        p_a = float(rng.uniform(0.05, 0.95))
        line["p_a"], line["p_b"] = p_a, 1 - p_a
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture
def organism_run(tmp_path, organisms) -> Path:
    mass_x, counts = planted(n_items=8, own_values=(0.3, 0.1))
    mass_y, _ = planted(n_items=8, n_layers=6, own_values=(0.12, 0.24))
    mass_null, _ = planted(n_items=8, own_values=(0.2, 0.2))
    mass_planted, _ = planted(n_items=8, own_values=(0.2, 0.2))
    for o, slot in enumerate((0, 1)):  # X's answer in slot A in order ab, in slot B in order ba
        mass_planted[:, o, 3, 2, slot] = 0.7  # the planted organism looks at X's answer (its own) in layer 3, head 2
    arrays = {X: (mass_x, counts), Y: (mass_y, counts), NULL: (mass_null, counts), PLANTED: (mass_planted, counts)}
    root = write_run(tmp_path / "run", arrays)
    config = root / "config.toml"
    config.write_text(config.read_text() + f"judges = {json.dumps(list(JUDGES))}\n")
    _judgments_with_verdicts(root)
    gold = [0.9, 0.1, 0.8, 0.3, 0.5, 0.7, 0.2, 0.6]
    (root / "gold.jsonl").write_text(
        "".join(
            json.dumps({"judge": "reference", "item_id": f"item-{i:02d}", "p_first_model": p}) + "\n"
            for i, p in enumerate(gold)
        )
    )
    if not (root / "responses.jsonl").exists():  # a finished run holds its answers (commands that read one check it)
        (root / "responses.jsonl").write_text(
            "".join(
                json.dumps({"model": m, "item_id": f"item-{i:02d}", "text": f"answer {i} of {m}"}) + "\n"
                for m in (X, Y)
                for i in range(8)
            )
        )
    from interp.run.store import RunDir
    from interp.run.summary import write_summary

    paths = RunDir(root)
    write_summary(paths.read_config(), paths, paths.read_items(), {"reference": gold})
    return root


def test_own_model_knows_the_organisms(organisms):
    assert own_model(NULL) == own_model(PLANTED) == X and own_model(X) == X and own_model(Y) == Y
    for name, alias in core_models.ALIASES.items():  # the shipped organisms' own answers are their base model's
        if alias.base and name not in (NULL, PLANTED):
            assert own_model(name) == alias.base != name


def test_adapter_folder_own_model_is_its_manifest_base(tmp_path):
    folder = tmp_path / "my-organism"
    folder.mkdir()
    for name in ("adapter_model.safetensors", "adapter_config.json"):
        (folder / name).write_text("{}")
    (folder / "manifest.json").write_text(json.dumps({"base_model": X}))
    assert own_model(str(folder)) == X


def test_figure7_heads_layers_length_include_the_organisms(organism_run):
    profiles = figure7_profiles(organism_run)
    assert profiles["judges"] == list(JUDGES)
    assert set(profiles["own_minus_other"]) == set(JUDGES)
    mass = figure7_profiles(organism_run, "mass")["own_minus_other"]
    # the null organism's mass is the same on both answers; the planted one's own answer is X's
    assert torch.allclose(mass[NULL], torch.zeros(4), atol=1e-7)
    assert math.isclose(float(mass[PLANTED][3]), 0.5 / 3, rel_tol=1e-5) and float(mass[PLANTED][2]) == 0.0
    assert torch.allclose(profiles["own_minus_other"][X], torch.full((4,), 0.03 - 0.1 / 6))
    best = top_heads(organism_run, PLANTED, 1, stat="mass")
    assert [(layer, head) for layer, head, _ in best] == [(3, 2)] and abs(best[0][2] - 0.5) < 1e-6
    assert head_values(organism_run, NULL).shape == (4, 3)
    assert set(layer_differences(organism_run, NULL, n_boot=20)["judge"]) == {NULL}
    assert set(length_regression(organism_run)["judge"]) == set(JUDGES)


def test_report_figures_and_tables_include_the_organisms(organism_run):
    from interp.report.attention import write_attention_figures
    from interp.report.build import build_report

    written = write_attention_figures(organism_run)
    for judge in JUDGES:
        assert f"heads_{judge}_png" in written
    figures = organism_run / "figures"
    summary = json.loads((figures / "attention_summary.json").read_text())
    assert set(summary["top_heads"]) == set(JUDGES)
    assert summary["top_heads"][PLANTED][0]["layer"] == 3 and summary["top_heads"][PLANTED][0]["head"] == 2
    for name in (
        "attention_layer_differences.csv",
        "attention_heads.csv",
        "attention_length_regression.csv",
        "attention_length_items.csv",
    ):
        text = (figures / name).read_text()
        assert all(judge in text for judge in JUDGES), name
    profiles = (figures / "attention_profiles.csv").read_text()
    assert all(f"own_minus_other,{judge}," in profiles for judge in JUDGES)
    section = (figures / "attention_section.html").read_text()
    for judge in (NULL, PLANTED):
        assert f"Own \u2212 other heads: {judge}" in section and f"Per-layer own \u2212 other: {judge}" in section
    page = build_report(organism_run).read_text()
    assert all(f"head map {judge}" in page for judge in JUDGES)
    lenses = page.split("Evaluator Quality Baseline</h2>")[1].split("</table>")[0]
    assert all(f"<td>{judge}</td>" in lenses for judge in JUDGES)


def test_figure2_grid_has_every_judge(organism_run):
    from interp.report.dbg import figure2_rows
    from interp.run.store import RunDir

    summary = RunDir(organism_run).read_summary()
    labels = [label for label, _ in figure2_rows(summary)]
    assert labels == [
        f"Judge: {X}",
        f"Judge: {NULL} (own: {X})",
        f"Judge: {PLANTED} (own: {X})",
        "Gold (reference)",
        f"Judge: {Y}",
    ]
    for judge in JUDGES:
        assert summary.judges[judge].own_model == own_model(judge)
        assert "dbg_hard" in summary.judges[judge].model_fields_set


def test_sweeps_and_interventions_pick_the_organisms(organism_run):
    """`interp sweep` and `interp intervene` test every judge whose own model is an author (`self_judges`)."""
    from types import SimpleNamespace

    from interp.engine.variants import self_judges
    from interp.run.store import RunDir

    run = SimpleNamespace(config=RunDir(organism_run).read_config())
    assert self_judges(run, None) == list(JUDGES)
    assert self_judges(run, [PLANTED]) == [PLANTED]


def test_metrics_run_lenses_include_the_organisms(organism_run):
    from interp.analysis.lenses import run_lenses

    lenses = run_lenses(organism_run, n_boot=50)
    assert set(lenses["self_preference"]) == set(JUDGES)
    assert set(lenses["gold_lenses"]) == set(JUDGES)


def _stub(name: str) -> LoadedModel:
    return LoadedModel(
        name=name,
        hf_model=torch.nn.Linear(2, 2),
        tokenizer=None,
        kind="post",
        source="stub",
        n_layers=2,
        n_heads=2,
        context_length=64,
    )


def test_bias_builder_self_target_defaults_to_the_organisms_own_model(organisms):
    from interp.core.backends import Batch
    from interp.core.spans import TokenizedPrompt
    from interp.hooks.compile import bias_builder
    from interp.hooks.spec import AttentionIntervention

    prompt = TokenizedPrompt(list(range(12)), {"a": (2, 4), "b": (6, 8)}, "t")
    batch = Batch(torch.ones(1, 12, dtype=torch.long), torch.ones(1, 12, dtype=torch.long))
    authors = [(X, Y)]  # X's answer in slot A

    def bias(target: str, judge: str):
        build = bias_builder(AttentionIntervention(target=target, alpha=0.0), _stub(judge), authors=authors)
        return build(batch, [0], [prompt])

    for organism in (NULL, PLANTED):
        self_bias, slot_a = bias("self", organism), bias("a", organism)
        assert set(self_bias) == set(slot_a) and all(torch.equal(self_bias[k], slot_a[k]) for k in slot_a)
        other = bias("other", organism)
        assert all(torch.equal(other[k], bias("b", organism)[k]) for k in other)


def test_dampen_self_target_defaults_to_the_organisms_own_model(organisms, tiny_llama):
    from interp.core.spans import TokenizedPrompt
    from interp.hooks.context import dampen

    organism = dataclasses.replace(tiny_llama, name=PLANTED)
    ids = torch.arange(5, 17)[None]
    prompt = TokenizedPrompt(ids[0].tolist(), {"a": (2, 5), "b": (6, 9)}, "t")
    outputs = {}
    for target in ("self", "a"):
        with dampen(organism, target, alpha=0.0, prompts=[prompt], authors=[(X, Y)]), torch.no_grad():
            outputs[target] = organism.hf_model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
    with torch.no_grad():
        plain = organism.hf_model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
    assert torch.equal(outputs["self"], outputs["a"]) and not torch.allclose(outputs["self"], plain)


def test_metrics_run_cli_prints_every_judge(organism_run):
    from typer.testing import CliRunner

    from interp.cli import app

    result = CliRunner().invoke(app, ["metrics", "run", str(organism_run), "--n-boot", "50"])
    assert result.exit_code == 0, result.output
    text = result.output
    unjustified = text.split("Unjustified and legitimate")[1].split("Evaluator Quality Baseline")[0]
    quality = text.split("Evaluator Quality Baseline")[1]
    for judge in JUDGES:
        assert judge in unjustified and judge in quality
    as_json = CliRunner().invoke(app, ["metrics", "run", str(organism_run), "--n-boot", "50", "--json"])
    payload = json.loads(as_json.output)
    assert set(payload["gold_lenses"]) == set(JUDGES)
    assert payload["gold_lenses"][NULL]["own_model"] == X
