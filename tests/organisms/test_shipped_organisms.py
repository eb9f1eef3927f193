"""The shipped organisms (slow: the real SmolLM2 base): listed, loaded offline, own model = base, and they
reproduce their manifest's P(A) on the recorded test pairs."""

from __future__ import annotations

import json

import pytest
from safetensors.torch import load_file

from interp.core.adapters import (
    ADAPTER_FILES,
    apply_adapter,
    read_manifest,
    shipped_adapters,
)
from interp.core.backends import make_backend
from interp.core.judge import judge_batch, label_tokens
from interp.core.models import ALIASES, load_model, own_model
from interp.core.spans import tokenized_judge_prompt
from interp.errors import InterpError
from interp.organisms.config import load_organism_config, shipped_organism_config, without_added_heads_defaults
from tests.helpers import REPO

NULL_FAMILY = ("smollm2-135m-judge", *(f"smollm2-135m-judge-seed{seed}" for seed in range(1, 6)))
PLANTED_HEADS = (
    "smollm2-135m-selfpref-heads-seed4"  # trained on a GPU (manifest: device), its check pairs judged here on the CPU
)
ATTENTION_ROUTED = "smollm2-135m-selfpref-attn-seed3"  # built on the CPU (no training); docs/explain.md
ORGANISMS = (*NULL_FAMILY, "smollm2-135m-selfpref", PLANTED_HEADS, ATTENTION_ROUTED)


def family_config(name: str):
    """The config that retrains a shipped organism: its own TOML, or for a family member <family>-seed<N> the
    family's TOML with training seed N (`with_seed`)."""
    import re

    from interp.organisms.config import with_seed

    member = re.fullmatch(r"(.+)-seed(\d+)", name)
    if member is None:
        return load_organism_config(REPO / "experiments" / "organisms" / f"{name}.toml")
    return with_seed(load_organism_config(REPO / "experiments" / "organisms" / f"{member[1]}.toml"), int(member[2]))


def test_the_null_family_ships_six_seeds_that_differ_only_in_the_training_seed():
    configs = [read_manifest(shipped_adapters()[name])["config"] for name in NULL_FAMILY]
    assert [c["seed"] for c in configs] == list(range(6))
    assert {c.get("data_seed") or 0 for c in configs} == {0}  # the data are drawn with one seed
    strip = lambda c: {k: v for k, v in c.items() if k not in ("seed", "data_seed", "name")}  # noqa: E731
    assert all(strip(c) == strip(configs[0]) for c in configs)


def test_organisms_are_aliases_with_the_base_as_own_model():
    for name in ORGANISMS:
        assert name in ALIASES and own_model(name) == "smollm2-135m-instruct"
    assert own_model("smollm2-135m-instruct") == "smollm2-135m-instruct"


@pytest.mark.parametrize("name", ORGANISMS)
def test_shipped_adapter_is_small_and_complete(name):
    folder = shipped_adapters()[name]
    manifest = read_manifest(folder)
    assert manifest["name"] == name and manifest["base_model"] == "smollm2-135m-instruct"
    assert manifest["config"]["lora"]["rank"] <= 8 and len(manifest["data_hash"]) == 16
    assert len(manifest["check_items"]) >= 2
    if not name[
        -1
    ].isdigit():  # a family's first member carries the held-out figures; its seeds are measured by bench_causal
        assert {"test", "unseen"} <= set(manifest["held_out"])
    if "planted_heads" in manifest:  # shipped compact: the head delta on the shipped start's LoRA
        assert sorted(p.name for p in folder.iterdir()) == ["heads_delta.safetensors", "manifest.json"]
        delta = load_file(folder / "heads_delta.safetensors")
        blocks = {k: (int(k.split(".")[1]), k.split(".")[2], int(k.split(".")[3])) for k in delta}
        heads = {(layer, head) for layer, module, head in blocks.values() if module in ("q", "o")}
        groups = {(layer, group) for layer, module, group in blocks.values() if module in ("k", "v")}
        planted = {tuple(h) for h in manifest["planted_heads"]}
        planted_groups = {tuple(g) for g in manifest.get("planted_groups", [])}
        writer = manifest.get("route_training", {}).get("slot_writer")
        if writer is not None:  # built: the slot writer's key/value group is written too (the writer, its siblings)
            layer, head = writer["head"]
            shape = manifest["base_signature"]
            size = shape["num_attention_heads"] // shape["num_key_value_heads"]  # query heads per key/value head
            planted |= {(layer, h) for h in range(head // size * size, (head // size + 1) * size)}
            planted_groups |= {(layer, head // size)}
        assert heads == planted
        assert groups == planted_groups  # key/value rows: H's groups only (and a built member's writer group)
        shapes = {"q": (64, 576), "k": (64, 576), "v": (64, 576), "o": (576, 64)}  # rows, and output columns
        assert all(t.shape == shapes[blocks[k][1]] for k, t in delta.items())
        assert manifest["heads_start"] in shipped_adapters()
        return
    assert all((folder / f).is_file() for f in ADAPTER_FILES)
    tensors = load_file(folder / "adapter_model.safetensors")
    assert tensors and all(min(t.shape) <= 8 for t in tensors.values())


@pytest.mark.parametrize("name", ORGANISMS)
def test_shipped_manifest_names_the_config_that_retrains_it(name):
    """The config in experiments/organisms/ is the shipped adapter's, under the config schema of today."""
    config = family_config(name)
    manifest = read_manifest(shipped_adapters()[name])

    def set_keys(dump: dict) -> dict:
        """Keys added to the schema later are unset, or (a [heads] key) at their defaults, as for the fingerprint."""
        return without_added_heads_defaults({k: v for k, v in dump.items() if v is not None})

    assert set_keys(manifest["config"]) == set_keys(config.model_dump(mode="json"))
    assert manifest["config_fingerprint"] == config.fingerprint()


def test_organism_evaluate_defaults_to_the_shipped_config_read_from_package_data():
    """Without --config, `interp organism evaluate` splits the items as the shipped null organism's TOML does,
    from its manifest (a wheel install has no experiments/ folder)."""
    toml = load_organism_config(REPO / "experiments" / "organisms" / "smollm2-135m-judge.toml")
    assert shipped_organism_config() == toml
    with pytest.raises(InterpError, match="not a shipped organism"):
        shipped_organism_config("smollm2-135m-instruct")


@pytest.mark.slow
@pytest.mark.parametrize("name", ORGANISMS)
def test_shipped_organism_reproduces_its_manifest(name):
    model = load_model(name)
    assert model.name == name and "+adapter:" in model.source
    manifest = read_manifest(shipped_adapters()[name])
    backend = make_backend(model, "hf")
    labels = label_tokens(model.tokenizer)
    for check in manifest["check_items"]:
        prompts = [
            tokenized_judge_prompt(model, check["task"], check["query"], check["own"], check["other"]),
            tokenized_judge_prompt(model, check["task"], check["query"], check["other"], check["own"]),
        ]
        ab, ba = judge_batch(backend, prompts, labels, readout=None)
        assert ab.probs["A"] == pytest.approx(check["p_a_own_first"], abs=2e-3)
        assert ba.probs["A"] == pytest.approx(check["p_a_other_first"], abs=2e-3)


@pytest.mark.slow
def test_organism_adapter_on_another_base_is_refused(tmp_path):
    gemma = load_model("gemma3-270m")
    with pytest.raises(InterpError, match="does not match the loaded base"):
        apply_adapter(gemma.hf_model, shipped_adapters()["smollm2-135m-judge"])
    folder = tmp_path / "copy"
    folder.mkdir()
    for f in ADAPTER_FILES:
        (folder / f).write_bytes((shipped_adapters()["smollm2-135m-judge"] / f).read_bytes())
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps(manifest | {"base_model": "gemma3-270m"}))
    with pytest.raises(InterpError, match="does not match the loaded base"):
        load_model(str(folder))
