"""One intervention family: every kind subclasses `Intervention`, is registered by name, and a variant's key is
the key it had before the family had one base (a resumed run finds its judgments); old spec files still load."""

import json

import pytest
import torch

from interp.engine.variants import Variant, digest
from interp.errors import InterpError
from interp.hooks.base import Intervention, kind_class, registered_kinds
from interp.hooks.nodes import as_intervention, node_from_dict
from interp.hooks.spec import AttentionIntervention
from interp.hooks.steering import ResidualSteering

DIRECTION = torch.linspace(-1, 1, 8)


def _variants() -> dict[str, Variant]:
    def node(**keys):
        return node_from_dict(keys)

    return {
        "mask": Variant("self", (AttentionIntervention(target="self", alpha=0.0, name="self-mask"),)),
        "dampen": Variant(
            "d",
            (
                AttentionIntervention(
                    target="other", alpha=0.5, layers=(1, 3), heads={1: [0], 3: [1, 2]}, queries="final"
                ),
            ),
        ),
        "emphasis": Variant("e", (AttentionIntervention(target="other", alpha=4.0, emphasis=True),)),
        "steering": Variant("s", (ResidualSteering(2, -1.5, "add", "spans", DIRECTION),)),
        "project": Variant("p", (ResidualSteering(1, 1.0, "project_out", "all", DIRECTION),)),
        "node_zero": Variant("z", (node(site="head_output", op="zero", layers=[2], heads=[1, 3], positions="final"),)),
        "node_mean": Variant("m", (node(site="mlp_output", op="mean", layers=[0]),), reference=("i1", "i2")),
        "node_add": Variant("a", (node(site="residual", op="add", direction=[1.0, 0.0, 2.0], coefficient=3.0),)),
        "node_patch": Variant("pt", (node(site="head_pattern", op="patch", counterfactual="swap", heads={"1": [0]}),)),
        "combo": Variant(
            "c",
            (
                AttentionIntervention(target="a", alpha=0.0, layers=(0,)),
                ResidualSteering(0, 2.0, "add", "final", DIRECTION),
                node(site="residual", op="resample", positions="final"),
            ),
        ),
        "none": Variant("none"),
    }


# Computed with the three-field Variant (attention=, steering=, nodes=) before the family had one base.
PINNED = {
    "mask": "c0cf6553af3d8a40",
    "dampen": "f853251d36a6d163",
    "emphasis": "fd89a4f600950281",
    "steering": "a1a0b4accf91de64",
    "project": "55c7a3b09f901868",
    "node_zero": "7715d58c39e50ad4",
    "node_mean": "638527575df84f33",
    "node_add": "ffd6fb94aa689f65",
    "node_patch": "e5e68d552e4cf35e",
    "combo": "4771925a1334d064",
    "none": "a427f80929048e78",
}


def test_variant_keys_are_the_keys_stored_before():
    keys = {name: digest(variant.identity()) for name, variant in _variants().items()}
    assert keys == PINNED


def test_the_order_of_kinds_in_a_variant_does_not_change_its_key():
    combo = _variants()["combo"]
    reversed_ = Variant("c", tuple(reversed(combo.interventions)))
    assert digest(reversed_.identity()) == PINNED["combo"]


def test_every_kind_is_an_intervention_registered_by_name():
    for kind in ("attention", "steering", "zero", "mean", "resample", "patch", "project_out", "add"):
        assert kind in registered_kinds()
        assert issubclass(kind_class(kind), Intervention)
    for variant in _variants().values():
        assert all(isinstance(i, Intervention) and kind_class(i.kind) is type(i) for i in variant.interventions)


def test_a_variant_refuses_what_is_not_an_intervention():
    with pytest.raises(InterpError, match="not an intervention"):
        Variant("x", ({"target": "self", "alpha": 0.0},))


def test_old_spec_files_still_load(tmp_path):
    attention = tmp_path / "mask.toml"
    attention.write_text('target = "self"\nalpha = 0.0\nlayers = [3]\n')
    node = tmp_path / "node.json"
    node.write_text(json.dumps({"site": "head_output", "op": "zero", "layers": [1], "heads": {"1": [0, 2]}}))
    assert as_intervention(attention) == AttentionIntervention(target="self", alpha=0.0, layers=(3,))
    expected = node_from_dict({"site": "head_output", "op": "zero", "layers": [1], "heads": {1: [0, 2]}})
    assert as_intervention(node) == expected


def test_steering_reads_back_from_its_keys():
    steering = ResidualSteering(2, -1.5, "add", "spans", DIRECTION)
    again = ResidualSteering.from_dict(json.loads(json.dumps(steering.to_dict())))
    assert again.identity() == steering.identity()


def test_adding_a_direction_has_one_definition():
    from interp.hooks import nodes, steering

    assert nodes.add_direction is steering.add_direction
    assert nodes.remove_direction is steering.remove_direction


def test_a_spec_with_its_kind_reads_back_for_every_kind(tmp_path):
    from interp.hooks.nodes import spec_keys

    for variant in _variants().values():
        for intervention in variant.interventions:
            path = tmp_path / "spec.json"
            path.write_text(json.dumps(spec_keys(intervention)))
            again = as_intervention(path)
            assert type(again) is type(intervention) and again.identity() == intervention.identity()


def test_attention_is_a_registered_site_like_the_node_sites():
    from interp.hooks.base import kinds_at, site_names

    assert site_names()[:4] == ["attention", "head_output", "mlp_output", "residual"]
    assert kinds_at("attention") == ["attention"]
    assert "zero" in kinds_at("head_output") and "attention" not in kinds_at("residual")


def test_the_node_ops_are_read_from_the_family_s_one_registry():
    """One registry (issue 82 item 2): the node ops are the family's registered `NodeIntervention` kinds, no
    second table beside `interp.hooks.base`'s."""
    import interp.hooks.nodes as nodes
    from interp.hooks.base import registered_classes, registered_kinds

    node_kinds = {k for k in registered_kinds() if issubclass(registered_classes()[k], nodes.NodeIntervention)}
    assert set(nodes.registered_ops()) == node_kinds and {"zero", "mean", "add"} <= node_kinds
    assert "attention" not in nodes.registered_ops() and not hasattr(nodes, "_REGISTRY")
