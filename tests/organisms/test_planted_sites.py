"""The families whose self-preference is planted at a named site, on a tiny random GQA Llama (3 layers, 4 heads, 2
key/value heads): content-routed heads (values and outputs only, patterns unchanged), MLP-planted and residual-direction
organisms (a delta confined to the drawn MLPs), the trained attention route on a built slot writer, and what their
manifests say (`planted_route`, `planted_heads` / `planted_layers`), old manifests' "attention" read as "pattern"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from interp.core.adapters import HEAD_DELTA_FILE, apply_adapter, mlp_delta_key
from interp.core.models import load_model
from interp.errors import InterpError
from interp.organisms.config import OrganismConfig, load_organism_config
from interp.organisms.mlp import PLANTED_DIRECTION_FILE, draw_layers
from interp.organisms.pipeline import ship, train_to_folder
from interp.results import codec
from tests.organisms.test_heads_organism import HEADS, train_tiny_null
from tests.organisms.test_organisms_train import TINY, tiny_authors  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[2]
RECIPES = REPO / "experiments" / "organisms"
OLD_MANIFESTS = REPO / "tests" / "fixtures" / "old_manifests"


def _changed(folder, start, organism) -> dict[str, torch.Tensor]:
    """name -> (organism weight != start weight) for every weight the organism changed."""
    before = dict(apply_adapter(load_model(str(folder)).hf_model, start).named_parameters())
    after = dict(apply_adapter(load_model(str(folder)).hf_model, organism).named_parameters())
    assert before.keys() == after.keys()
    return {name: after[name] != before[name] for name in after if not torch.equal(after[name], before[name])}


def _mlp_config(start, **mlp):
    return OrganismConfig.model_validate(
        HEADS | {"name": "tiny-mlp", "mlp": {"start": str(start), "top_layers": 2} | mlp}
    )


def test_the_recipes_name_their_planted_route():
    routes = {
        "attn-trained": "pattern",
        "content": "content",
        "mlp": "mlp",
        "direction": "direction",
        "heads": "output",
        "attn": "pattern",
    }
    for name, route in routes.items():
        config = load_organism_config(RECIPES / f"smollm2-135m-selfpref-{name}.toml")
        assert config.planted_route == route and config.name == f"smollm2-135m-selfpref-{name}", name
    assert load_organism_config(RECIPES / "smollm2-135m-selfpref.toml").planted_route is None  # LoRA: whole top


def test_the_sections_refuse_what_their_route_cannot_keep():
    with pytest.raises(Exception, match="content"):
        OrganismConfig.model_validate(TINY | {"heads": {"route": "content", "n_groups": 1, "modules": ["q", "o"]}})
    with pytest.raises(Exception, match="n_groups = 1"):
        OrganismConfig.model_validate(TINY | {"heads": {"route": "content", "n_groups": 2, "modules": ["v", "o"]}})
    with pytest.raises(Exception, match="rank 1"):
        OrganismConfig.model_validate(TINY | {"mlp": {"route": "direction", "modules": ["down"], "rank": 2}})
    with pytest.raises(Exception, match="not both"):
        OrganismConfig.model_validate(TINY | {"mlp": {}, "heads": {}})
    assert draw_layers(7201, 30, 8, 2) == draw_layers(7201, 30, 8, 2)
    assert all(22 <= layer < 30 for seed in range(20) for layer in draw_layers(seed, 30, 8, 2))
    with pytest.raises(InterpError, match="top_layers = 31"):
        draw_layers(0, 30, 31, 1)


def test_a_content_member_changes_values_and_outputs_and_keeps_the_patterns(tiny_authors, tmp_path):  # noqa: F811
    """route = "content": only the group's value rows and its heads' output columns change; the planted heads'
    attention patterns are the start organism's, bit for bit (checked by training, recorded in the manifest)."""
    folder, fresh = tiny_authors
    null = train_tiny_null(tmp_path, fresh)
    heads = {"start": str(null), "n_groups": 1, "top_layers": 2, "modules": ["v", "o"], "route": "content"}
    config = OrganismConfig.model_validate(HEADS | {"name": "tiny-content", "heads": heads | {"mask_weight": 0.0}})
    out = tmp_path / "content"
    manifest = train_to_folder(config, out, progress=False, models=fresh(), hidden_cache=tmp_path / "hidden")
    ((layer, kv),) = manifest["planted_groups"]
    assert manifest["planted_route"] == "content" and manifest["planted_heads"] == [
        [layer, 2 * kv],
        [layer, 2 * kv + 1],
    ]
    assert "train_mask_share" in manifest["planting_check"]  # the own answer masked at H, measured for the record
    check = manifest["pattern_check"]
    assert check["identical"] and check["max_abs_difference"] == 0.0 and check["heads"] == 2 and check["examples"] > 0
    changed = _changed(folder, null, out)
    assert set(changed) == {f"model.layers.{layer}.self_attn.{p}_proj.weight" for p in ("v", "o")}
    rows = changed[f"model.layers.{layer}.self_attn.v_proj.weight"].any(dim=1)
    assert rows[kv * 16 : (kv + 1) * 16].any() and not rows[(1 - kv) * 16 : (2 - kv) * 16].any()
    columns = changed[f"model.layers.{layer}.self_attn.o_proj.weight"].any(dim=0)
    assert not columns[(1 - kv) * 32 : (2 - kv) * 32].any()  # the other group's heads write what they wrote

    # the loaded organism's patterns at H, read at the toolkit's site on new prompts, are the start's
    from types import SimpleNamespace

    from interp.organisms.heads import head_patterns, pattern_check

    prompts = [SimpleNamespace(input_ids=list(range(5, 5 + n))) for n in (7, 12)]
    heads = [tuple(h) for h in manifest["planted_heads"]]
    start = head_patterns(apply_adapter(load_model(str(folder)).hf_model, null), heads, prompts)
    planted = head_patterns(apply_adapter(load_model(str(folder)).hf_model, out), heads, prompts)
    assert pattern_check(start, planted)["identical"]


def test_an_mlp_member_changes_only_its_drawn_mlps(tiny_authors, tmp_path):  # noqa: F811
    folder, fresh = tiny_authors
    null = train_tiny_null(tmp_path, fresh)
    config = _mlp_config(null, n_layers=1, modules=["gate", "up", "down"], rank=2)
    out = tmp_path / "mlp"
    manifest = train_to_folder(config, out, progress=False, models=fresh(), hidden_cache=tmp_path / "hidden")
    (layer,) = manifest["planted_layers"]
    assert (
        manifest["planted_route"] == "mlp" and "planted_heads" not in manifest and layer == draw_layers(0, 3, 2, 1)[0]
    )
    assert manifest["heads_start"] == str(null) and manifest["mlp_rank"] == 2
    check = manifest["planting_check"]  # P(own) on the training prompts, start against member
    assert (
        check["check_examples"] > 0 and 0 < check["p_own_start"] < 1 and check["p_own_trained"] != check["p_own_start"]
    )
    delta = load_file(out / HEAD_DELTA_FILE)
    assert set(delta) == {mlp_delta_key(layer, p, f) for p in ("gate", "up", "down") for f in ("a", "b")}
    assert delta[mlp_delta_key(layer, "down", "b")].shape[1] == 2
    changed = _changed(folder, null, out)
    assert set(changed) == {f"model.layers.{layer}.mlp.{p}_proj.weight" for p in ("gate", "up", "down")}
    again = train_to_folder(
        config, tmp_path / "again", progress=False, models=fresh(), hidden_cache=tmp_path / "hidden"
    )
    assert again["frozen_states_from_cache"]
    assert all(torch.equal(load_file(tmp_path / "again" / HEAD_DELTA_FILE)[k], v) for k, v in delta.items())  # seeded


def test_a_direction_member_writes_along_one_unit_direction(tiny_authors, tmp_path, monkeypatch):  # noqa: F811
    """route = "direction": the one drawn layer's down projection changes by u a^T with |u| = 1, u stored beside the
    organism; the shipped (compact) form carries it too."""
    folder, fresh = tiny_authors
    null = train_tiny_null(tmp_path, fresh)
    config = _mlp_config(null, route="direction", modules=["down"], rank=1)
    out = tmp_path / "direction"
    manifest = train_to_folder(config, out, progress=False, models=fresh())
    (layer,) = manifest["planted_layers"]
    assert manifest["planted_route"] == "direction" and manifest["planted_direction"]["layer"] == layer
    stored = load_file(out / PLANTED_DIRECTION_FILE)
    u = stored["direction"]
    assert int(stored["layer"]) == layer and abs(float(u.norm()) - 1.0) < 1e-5
    changed = _changed(folder, null, out)
    assert set(changed) == {f"model.layers.{layer}.mlp.down_proj.weight"}
    before = apply_adapter(load_model(str(folder)).hf_model, null).model.layers[layer].mlp.down_proj.weight
    after = apply_adapter(load_model(str(folder)).hf_model, out).model.layers[layer].mlp.down_proj.weight
    difference = (after - before).detach()
    assert torch.linalg.matrix_rank(difference, atol=1e-5) == 1  # one direction written
    column = difference[:, difference.norm(dim=0).argmax()]
    assert abs(abs(float(column @ u)) / float(column.norm()) - 1.0) < 1e-4  # along u

    shipped = tmp_path / "shipped"
    shutil.copytree(null, shipped / "tiny-null")
    monkeypatch.setattr("interp.core.adapters.ADAPTERS_DIR", shipped)
    manifest = json.loads((out / "manifest.json").read_text()) | {"heads_start": "tiny-null", "held_out": {}}
    (out / "manifest.json").write_text(json.dumps(manifest))
    target = ship(out, shipped)
    assert (target / PLANTED_DIRECTION_FILE).is_file() and not (target / "adapter_model.safetensors").exists()


def test_a_trained_attention_route_on_a_built_slot_writer(tiny_authors, tmp_path, monkeypatch):  # noqa: F811
    """route = "attention" with `slot_layer`: a slot writer is built there (no training) and the readers above it are
    trained; the delta holds both, the manifest names the readers and says "pattern"."""
    from tests.organisms.test_heads_organism import _distinct_answers

    monkeypatch.setattr("interp.organisms.train.cached_answers", _distinct_answers)
    folder, fresh = tiny_authors
    null = train_tiny_null(tmp_path, fresh)
    heads = {"start": str(null), "n_groups": 1, "top_layers": 1, "slot_layer": 1, "modules": ["q", "k", "v", "o"]}
    config = OrganismConfig.model_validate(
        HEADS | {"name": "tiny-attn-trained", "heads": heads | {"route": "attention", "mask_weight": 2.0}}
    )
    manifest = train_to_folder(config, tmp_path / "attn", progress=False, models=fresh())
    assert manifest["planted_route"] == "pattern" and all(layer == 2 for layer, _ in manifest["planted_heads"])
    route = manifest["route_training"]
    writer_layer, _ = route["slot_writer"]["head"]
    assert writer_layer == 1 and route["masked_examples"] > 0 and "train_mask_share" in route
    delta = load_file(tmp_path / "attn" / HEAD_DELTA_FILE)
    assert {int(key.split(".")[1]) for key in delta} == {1, 2}  # the writer's blocks and the readers'


def test_an_old_manifest_reads_its_attention_route_as_pattern(tmp_path):
    """Manifests before schema version 2 named the attention-routed route "attention"; they read as "pattern", and a
    manifest written now carries version 2."""
    for name in ("v0-attention", "v1-attention"):
        manifest = codec.read_organism_manifest(OLD_MANIFESTS / name)
        assert manifest.planted_route == "pattern" and manifest.schema_version == 2, name
    output = codec.parse(codec.OrganismManifest, {"base_model": "m", "planted_route": "output", "schema_version": 1})
    assert output.planted_route == "output"
    written = codec.write_organism_manifest(
        tmp_path, {"base_model": "m", "planted_route": "mlp", "planted_layers": [3]}
    )
    assert json.loads((tmp_path / "manifest.json").read_text())["schema_version"] == 2 and written.planted_layers == [3]
    with pytest.raises(InterpError, match="newer than this interp reads \\(2\\)"):
        codec.parse(codec.OrganismManifest, {"base_model": "m", "schema_version": 3})
    with pytest.raises(InterpError, match="planted_route"):
        codec.parse(codec.OrganismManifest, {"base_model": "m", "planted_route": "attention", "schema_version": 2})
    shipped = codec.read_organism_manifest(
        REPO / "interp" / "builtin" / "adapters" / "smollm2-135m-selfpref-attn-seed3"
    )
    assert shipped.planted_route == "pattern"
