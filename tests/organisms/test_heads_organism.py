"""Planted-heads organisms on a tiny random GQA Llama: H drawn from the seed, the delta confined to H (every
other weight bit-identical to the start organism's), the folder loads as a judge with the delta merged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from interp.core.adapters import HEAD_DELTA_FILE, adapter_fingerprint, add_head_delta, apply_adapter, head_delta_key
from interp.core.models import load_model
from interp.errors import InterpError
from interp.organisms.config import OrganismConfig, load_organism_config, with_seed
from interp.organisms.heads import draw_groups, draw_heads
from interp.organisms.pipeline import train_to_folder
from tests.organisms.test_organisms_train import TINY, tiny_authors  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[2]
HEADS = TINY | {"planting": {"share": 1.0}, "train": TINY["train"] | {"lr": 5e-2}}


def train_tiny_null(tmp_path, fresh):
    """A null organism on the tiny base (LoRA on its top 2 layers): the start of the planted-heads members here."""
    null = tmp_path / "null"
    train_to_folder(
        OrganismConfig.model_validate(TINY | {"lora": {"rank": 4, "top_layers": 2}}),
        null,
        progress=False,
        models=fresh(),
    )
    return null


def _heads_config(start, modules=("q",), n_heads=2, seed=0):
    return OrganismConfig.model_validate(
        HEADS
        | {
            "name": "tiny-heads",
            "seed": seed,
            "heads": {"start": str(start), "n_heads": n_heads, "top_layers": 2, "modules": list(modules)},
        }
    )


def test_draw_heads_is_seeded_distinct_and_in_the_top_layers():
    first = draw_heads(0, n_layers=30, n_heads=9, top_layers=8, count=3)
    assert first == draw_heads(0, 30, 9, 8, 3) and len(set(first)) == 3
    assert all(22 <= layer < 30 and 0 <= head < 9 for layer, head in first)
    assert any(draw_heads(s, 30, 9, 8, 3) != first for s in range(1, 5))
    with pytest.raises(InterpError, match="hold only"):
        draw_heads(0, 30, 9, 1, 10)


def test_narrowing_top_layers_keeps_every_group_already_drawn_there():
    """The draw ranks the pool by a seeded hash: a narrower `top_layers` keeps each seed whose first group lay in
    the narrower range, and redraws the others there (the attention-routed recipe's 27 -> 28-29 change)."""
    for seed in range(40):
        wide, narrow = draw_groups(seed, 30, 9, 3, 3, 1), draw_groups(seed, 30, 9, 3, 2, 1)
        assert all(layer >= 28 for layer, _ in narrow[0])
        assert (wide == narrow) == (wide[0][0][0] >= 28)


def test_the_slot_layer_is_the_built_routes_and_lies_below_the_readers():
    from interp.organisms.config import HeadsConfig, check_fits_model

    with pytest.raises(Exception, match="slot_layer"):
        HeadsConfig(slot_layer=3)  # a trained delta has no slot writer
    built = {"construction": "built", "route": "attention", "n_groups": 1, "modules": ["q", "k", "v", "o"]}
    config = OrganismConfig.model_validate(TINY | {"heads": built | {"top_layers": 2, "slot_layer": 28}})
    with pytest.raises(InterpError, match="slot_layer = 28 is not below the readers' layers 28-29"):
        check_fits_model(config, n_layers=30, n_heads=9)
    check_fits_model(config.model_copy(update={"heads": config.heads.model_copy(update={"slot_layer": 26})}), 30, 9)
    recipe = load_organism_config(REPO / "experiments" / "organisms" / "smollm2-135m-selfpref-attn.toml").heads
    assert (recipe.top_layers, recipe.slot_layer) == (2, 26)  # readers in 28-29, the writer in 26


def test_unset_heads_keeps_old_fingerprints():
    config = OrganismConfig.model_validate(TINY)
    dumped = config.model_dump(mode="json")
    assert dumped["heads"] is None
    import hashlib

    dumped.pop("heads"), dumped.pop("data_seed"), dumped.pop("mlp")
    assert config.fingerprint() == hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()[:16]


@pytest.mark.parametrize("modules", [("q",), ("q", "o")])
def test_delta_is_confined_to_the_planted_heads(tiny_authors, tmp_path, modules):  # noqa: F811
    folder, fresh = tiny_authors
    null = train_tiny_null(tmp_path, fresh)
    config = _heads_config(null, modules)
    out = tmp_path / "heads"
    manifest = train_to_folder(config, out, progress=False, models=fresh(), hidden_cache=tmp_path / "hidden")
    planted = [tuple(h) for h in manifest["planted_heads"]]
    assert planted == draw_heads(0, 3, 4, 2, 2) and manifest["heads_start_fingerprint"] == adapter_fingerprint(
        str(null)
    )
    delta = load_file(out / HEAD_DELTA_FILE)
    assert set(delta) == {head_delta_key(l, m, h) for l, h in planted for m in modules}
    assert all(t.abs().sum() > 0 for t in delta.values())  # training moved every block
    assert adapter_fingerprint(str(out)) != adapter_fingerprint(str(null))

    before = dict(apply_adapter(load_model(str(folder)).hf_model, null).named_parameters())
    after = dict(apply_adapter(load_model(str(folder)).hf_model, out).named_parameters())
    assert before.keys() == after.keys()
    dim = 16
    changed = set()
    for name, weight in after.items():
        old = before[name]
        if torch.equal(weight, old):
            continue
        layer = int(name.split(".layers.")[1].split(".")[0])
        assert name.endswith(("q_proj.weight", "o_proj.weight")), name  # never K, V, MLP, norms, embeddings
        diff = weight != old
        rows_or_cols = diff.any(dim=1) if name.endswith("q_proj.weight") else diff.any(dim=0)
        for head in range(4):
            block = rows_or_cols[head * dim : (head + 1) * dim]
            if block.any():
                assert (layer, head) in planted, (name, head)
                changed.add((layer, head, "q" if "q_proj" in name else "o"))
        # every row (q) / column (o) outside the planted heads is bit-identical
        for head in range(4):
            if (layer, head) not in planted:
                sl = slice(head * dim, (head + 1) * dim)
                assert torch.equal(
                    weight[sl] if "q_proj" in name else weight[:, sl], old[sl] if "q_proj" in name else old[:, sl]
                )
    assert changed == {(l, h, m) for l, h in planted for m in modules}

    again = train_to_folder(
        config, tmp_path / "again", progress=False, models=fresh(), hidden_cache=tmp_path / "hidden"
    )
    assert again["frozen_states_from_cache"] and load_file(tmp_path / "again" / HEAD_DELTA_FILE).keys() == delta.keys()
    assert all(torch.equal(load_file(tmp_path / "again" / HEAD_DELTA_FILE)[k], delta[k]) for k in delta)  # seeded
    other = train_to_folder(with_seed(config, 3), tmp_path / "seed3", progress=False, models=fresh())
    assert other["planted_heads"] == [list(h) for h in draw_heads(3, 3, 4, 2, 2)]


def test_head_delta_that_does_not_fit_is_one_error(tiny_authors, tmp_path):  # noqa: F811
    folder, _ = tiny_authors
    model = load_model(str(folder)).hf_model
    with pytest.raises(ValueError, match="does not fit"):
        add_head_delta(model, {head_delta_key(0, "q", 0): torch.zeros(3, 3)})
    with pytest.raises(ValueError, match="unknown tensor name"):
        add_head_delta(model, {"layers.0.x.0": torch.zeros(16, 64)})
    with pytest.raises(ValueError, match="does not fit k_proj"):  # a key/value head past the model's
        add_head_delta(model, {head_delta_key(0, "k", 5): torch.zeros(16, 64)})


def test_compact_form_loads_the_start_and_keeps_the_fingerprint(tiny_authors, tmp_path, monkeypatch):  # noqa: F811
    """Shipped, a planted-heads organism is its manifest and head delta only; its LoRA is read from the shipped
    start organism. Same weights, same fingerprint as the self-contained folder; a changed start is refused."""
    import shutil

    from interp.core import adapters
    from interp.organisms.pipeline import ship

    folder, fresh = tiny_authors
    shipped = tmp_path / "shipped"
    monkeypatch.setattr(adapters, "ADAPTERS_DIR", shipped)
    train_to_folder(
        OrganismConfig.model_validate(TINY | {"name": "tiny-null", "lora": {"rank": 4, "top_layers": 2}}),
        shipped / "tiny-null",
        progress=False,
        models=fresh(),
    )
    out = tmp_path / "heads"
    train_to_folder(_heads_config("tiny-null"), out, progress=False, models=fresh())
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["held_out"] = {}
    (out / "manifest.json").write_text(json.dumps(manifest))
    target = ship(out, shipped)
    assert sorted(p.name for p in target.iterdir()) == ["heads_delta.safetensors", "manifest.json"]
    assert adapters.adapter_fingerprint(str(target)) == adapters.adapter_fingerprint(str(out))
    assert adapters.adapter_fingerprint("tiny-heads") == adapters.adapter_fingerprint(str(out))
    full = dict(apply_adapter(load_model(str(folder)).hf_model, out).named_parameters())
    compact = dict(apply_adapter(load_model(str(folder)).hf_model, target).named_parameters())
    assert all(torch.equal(full[k], compact[k]) for k in full)
    lora = shipped / "tiny-null" / "adapter_model.safetensors"
    tensors = load_file(lora)
    from safetensors.torch import save_file

    save_file({k: v + 1 for k, v in tensors.items()}, str(lora))
    with pytest.raises(InterpError, match="not the adapter it was trained on"):
        apply_adapter(load_model(str(folder)).hf_model, target)
    shutil.rmtree(shipped / "tiny-null")
    with pytest.raises(InterpError, match="shipped start organism"):
        apply_adapter(load_model(str(folder)).hf_model, target)


def test_an_attention_routed_member_trains_a_key_value_group_under_the_masked_term(tiny_authors, tmp_path):  # noqa: F811
    """route = "attention" with n_groups = 1: H is both query heads of one key/value group (tiny GQA: 4 heads, 2 kv);
    the delta touches H's q rows and o columns and the group's k and v rows only; the masked-to-null term ran on
    the examples that have exactly one own answer, and the manifest says so."""
    folder, fresh = tiny_authors
    null = train_tiny_null(tmp_path, fresh)
    heads = {
        "start": str(null),
        "n_groups": 1,
        "top_layers": 2,
        "modules": ["q", "k", "v", "o"],
        "route": "attention",
        "mask_weight": 1.0,
        "other_weight": 1.0,
        "both_weight": 1.0,
    }
    config = OrganismConfig.model_validate(HEADS | {"name": "tiny-attn", "heads": heads})
    manifest = train_to_folder(
        config, tmp_path / "attn", progress=False, models=fresh(), hidden_cache=tmp_path / "hidden"
    )
    ((layer, kv),) = manifest["planted_groups"]
    assert (
        manifest["planted_heads"] == [[layer, 2 * kv], [layer, 2 * kv + 1]] and manifest["planted_route"] == "pattern"
    )
    route = manifest["route_training"]
    assert route["masked_examples"] > 0 and route["other_weight"] == 1.0 and route["both_weight"] == 1.0
    # the check on the training prompts: P(own) before, after, and after with the own answer masked at H
    assert 0 < route["check_examples"] <= route["masked_examples"]
    start, trained, masked = route["p_own_start"], route["p_own_trained"], route["p_own_trained_own_masked"]
    assert all(0 < p < 1 for p in (start, trained, masked)) and trained != start
    assert route["train_mask_share"] == pytest.approx((trained - masked) / (trained - start), abs=0.01)
    delta = load_file(tmp_path / "attn" / HEAD_DELTA_FILE)
    expected = {head_delta_key(layer, m, h) for h in (2 * kv, 2 * kv + 1) for m in ("q", "o")} | {
        head_delta_key(layer, m, kv) for m in ("k", "v")
    }
    assert set(delta) == expected and all(t.abs().sum() > 0 for t in delta.values())
    before = dict(apply_adapter(load_model(str(folder)).hf_model, null).named_parameters())
    after = dict(apply_adapter(load_model(str(folder)).hf_model, tmp_path / "attn").named_parameters())
    for name, weight in after.items():
        if torch.equal(weight, before[name]):
            continue
        assert f".layers.{layer}.self_attn." in name and name.endswith(
            ("q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight")
        ), name
        if name.endswith(("k_proj.weight", "v_proj.weight")):
            other = slice(0, 16) if kv == 1 else slice(16, 32)  # the other key/value head's rows stay bit-identical
            assert torch.equal(weight[other], before[name][other])
    log = [json.loads(line) for line in (tmp_path / "attn" / "train_log.jsonl").read_text().splitlines()]
    assert all("extra" in step for step in log)
    with pytest.raises(Exception, match="n_groups"):
        OrganismConfig.model_validate(HEADS | {"name": "bad", "heads": {"start": str(null), "modules": ["q", "v"]}})


def _distinct_answers(models, items, config, progress=True):
    """Answers whose words tell the authors apart at every token (own-ness readable by a linear key)."""
    words = ("red green blue black white", "one two three four five")
    return {name: {i.id: f"{words[n]} {i.id} {words[n]}." for i in items} for n, name in enumerate(models)}


@pytest.mark.parametrize("slot_layer", [None, 0])
def test_built_member_writes_a_slot_writer_and_readers(tiny_authors, tmp_path, monkeypatch, slot_layer):  # noqa: F811
    """construction = "built": no gradient step. The slot writer (one head of `slot_layer`, unset: the layer below
    the drawn group) and the readers (the drawn group's query heads) are the only blocks written, everything else
    is the start's bit for bit; the slot the writer writes is readable at the readers' layer; the readers move the
    verdict towards the own answer, and masking the own answer at them takes that back (the training-prompt
    check)."""
    expected_writer = 1 if slot_layer is None else slot_layer
    from interp.organisms import train as train_module

    monkeypatch.setattr(train_module, "cached_answers", _distinct_answers)
    folder, fresh = tiny_authors
    null = train_tiny_null(tmp_path, fresh)
    heads = {
        "start": str(null),
        "construction": "built",
        "sink_mass": 0.1,  # the tiny random model's own-ness is weaker than SmolLM2's: a softer readout
        "kappa": 4.0,
        "n_groups": 1,
        "top_layers": 1,
        "modules": ["q", "k", "v", "o"],
        "route": "attention",
    } | ({} if slot_layer is None else {"slot_layer": slot_layer})
    data = HEADS["data"] | {"max_items": 12}
    config = OrganismConfig.model_validate(HEADS | {"name": "tiny-built", "heads": heads, "data": data})
    manifest = train_to_folder(
        config, tmp_path / "built", progress=False, models=fresh(), hidden_cache=tmp_path / "hidden"
    )
    ((layer, kv),) = manifest["planted_groups"]
    assert layer == 2 and manifest["planted_heads"] == [[2, 2 * kv], [2, 2 * kv + 1]]
    assert manifest["planted_route"] == "pattern" and manifest["optimizer_steps"] == 0
    route = manifest["route_training"]
    writer_layer, writer = route["slot_writer"]["head"]
    assert writer_layer == expected_writer and route["construction"] == "built"
    (reader,) = route["readers"]
    # the writer's slot, read where the readers read it (through a random layer of the tiny model: weaker)
    assert reader["slot_auroc"] > (0.9 if slot_layer is None else 0.7)
    check = route["check"]
    assert check["margin_shift"] > 0 and check["p_own_built"] > check["p_own_start"]
    assert check["mask_share"] > 0.5  # the shift goes through the readers' attention to the own answer
    delta = load_file(tmp_path / "built" / HEAD_DELTA_FILE)
    wkv = writer // 2
    expected = {head_delta_key(layer, m, h) for h in (2 * kv, 2 * kv + 1) for m in ("q", "o")}
    expected |= {head_delta_key(layer, m, kv) for m in ("k", "v")}
    expected |= {head_delta_key(expected_writer, m, h) for h in (2 * wkv, 2 * wkv + 1) for m in ("q", "o")}
    expected |= {head_delta_key(expected_writer, m, wkv) for m in ("k", "v")}
    assert set(delta) == expected
    before = dict(apply_adapter(load_model(str(folder)).hf_model, null).named_parameters())
    after = dict(apply_adapter(load_model(str(folder)).hf_model, tmp_path / "built").named_parameters())
    changed = {name for name, weight in after.items() if not torch.equal(weight, before[name])}
    assert changed and all(
        (f".layers.{expected_writer}.self_attn." in name or ".layers.2.self_attn." in name)
        and name.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight"))
        for name in changed
    ), changed
    with pytest.raises(Exception, match="construction"):
        OrganismConfig.model_validate(HEADS | {"name": "bad", "heads": {"start": str(null), "construction": "built"}})


def test_the_built_readers_sink_takes_the_asked_share_of_attention():
    """`_sink_key`: the first token's mean share of the last position's attention is what was asked, computed as the
    heads compute it (every token's score moves with the lift, as much as it projects on the sink's state)."""
    from interp.organisms.built_route import _sink_key

    gen = torch.Generator().manual_seed(0)
    readout = torch.randn(16, generator=gen)
    xs = []
    for length in (20, 35, 50):
        x = torch.randn(length, 16, generator=gen)
        x[0] = x[0] * 0.1 + 5.0  # the first token: far from the others, as a real sink state is
        x[-1] = readout + 0.1 * x[-1]  # the verdict position, where the readers' query fires
        xs.append(x)
    key, query = torch.randn(16, generator=gen), readout / readout.dot(readout)
    along = xs[0][0] / xs[0][0].dot(xs[0][0])
    for mass in (0.2, 0.85):
        lifted = _sink_key(xs, key, along, query, 16, mass)
        shares = [torch.softmax(float(x[-1] @ query) / 4.0 * (x @ lifted), 0)[0] for x in xs]
        assert float(torch.stack(shares).mean()) == pytest.approx(mass, abs=1e-4)


def test_balanced_key_gives_the_own_answer_the_same_share_in_both_slots():
    """`_balanced_key`: own-ness that reads stronger in slot B (as measured in SmolLM2) is balanced by a multiple of
    the slot, so the own answer's mean share of the readers' attention is the same in A and B; the sink still takes
    what was asked. And `_orthogonal` removes the whole span, not one vector after another."""
    from interp.organisms.built_route import BuiltScales, Prompt, _balanced_key, _orthogonal

    gen = torch.Generator().manual_seed(1)
    dim, readout = 16, torch.randn(16, generator=gen)
    own_dir, slot_dir = torch.zeros(16), torch.zeros(16)
    own_dir[1], slot_dir[2] = 1.0, 1.0
    xs, prompts = [], []
    for i in range(24):
        x = 0.3 * torch.randn(40, dim, generator=gen)
        x[0] = x[0] * 0.1 + 5.0
        x[-1] = readout + 0.1 * x[-1]
        x[5:15] += slot_dir  # slot A
        x[20:30] -= slot_dir  # slot B
        own_is_a = i % 2 == 0
        own = slice(5, 15) if own_is_a else slice(20, 30)
        x[own] += own_dir * (0.5 if own_is_a else 1.5)  # own-ness reads three times stronger in B
        xs.append(x)
        prompts.append(Prompt(hidden=x[None], spans=((5, 15), (20, 30)), own_is_a=own_is_a))
    query = readout / readout.dot(readout)
    along = xs[0][0] / xs[0][0].dot(xs[0][0])
    scales = BuiltScales(kappa=4.0, sink_mass=0.5)
    key, record = _balanced_key(xs, prompts, 8.0 * own_dir, 8.0 * slot_dir, along, query, dim, scales)
    assert record["own_share_in_a"] == pytest.approx(record["own_share_in_b"], abs=1e-3)
    assert record["slot_multiple"] > 0  # slot A's keys raised
    unbalanced = _balanced_key(xs, prompts[:1] * 2, 8.0 * own_dir, 8.0 * slot_dir, along, query, dim, scales)[1]
    assert unbalanced["slot_multiple"] == 0.0  # one slot only: nothing to balance
    shares = [torch.softmax(float(x[-1] @ query) / 4.0 * (x @ key), 0)[0] for x in xs]
    assert float(torch.stack(shares).mean()) == pytest.approx(0.5, abs=1e-3)

    a, b = torch.tensor([1.0, 0.0, 0.0]), torch.tensor([1.0, 1.0, 0.0])
    v = _orthogonal(torch.tensor([1.0, 2.0, 3.0]), a, b)
    assert float(v @ a) == pytest.approx(0.0, abs=1e-6) and float(v @ b) == pytest.approx(0.0, abs=1e-6)
