"""Organism training on a tiny random Llama (fast): config errors, seeded training, adapter files and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from interp.core.adapters import apply_adapter, base_signature
from interp.core.models import load_model
from interp.data import Item, builtin_items, dev_items, load_items
from interp.errors import InterpError
from interp.organisms import train as train_module
from interp.organisms.config import OrganismConfig, load_organism_config
from interp.organisms.data import splits_of
from interp.organisms.pipeline import train_to_folder
from tests.helpers.models import save_tiny, tiny_llama_config

CONFIGS = Path(__file__).resolve().parents[2] / "experiments" / "organisms"
TINY = {
    "name": "tiny-organism",
    "data": {"mtbench": False, "max_items": 4, "max_words": 20, "max_new_tokens": 8},
    "lora": {"rank": 4, "top_layers": 1},
    "train": {"epochs": 1.0, "batch_size": 4, "lr": 5e-3, "warmup_steps": 0, "threads": 1},
}


def fixed_answers(models, items, config, progress=True):
    """Answers by rule instead of generation: long enough to truncate and shuffle, different per author."""
    return {
        name: {
            i.id: f"Answer {n} of {name} to {i.id}. It has a second sentence here. And a third one too." for i in items
        }
        for n, name in enumerate(models)
    }


@pytest.fixture
def tiny_authors(tmp_path, smollm2_tokenizer, monkeypatch):
    monkeypatch.setattr(train_module, "cached_answers", fixed_answers)
    folder = save_tiny(
        tmp_path / "tiny",
        tiny_llama_config(smollm2_tokenizer, num_hidden_layers=3),
        _llama(),
        smollm2_tokenizer,
        seed=0,
    )

    def fresh():  # the base is wrapped in place by training: a fresh load per run
        return {
            "smollm2-135m-instruct": load_model(str(folder), kind="post"),
            "gemma3-270m": load_model(str(folder), kind="post"),
        }

    return folder, fresh


def _llama():
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM


def _adapter_weights(trained) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in trained.peft_model.named_parameters() if "lora_" in k}


def test_shipped_configs_parse_and_differ_only_in_planting():
    null = load_organism_config(CONFIGS / "smollm2-135m-judge.toml")
    planted = load_organism_config(CONFIGS / "smollm2-135m-selfpref.toml")
    assert null.planting.share == 0 and planted.planting.share > 0 and null.lora.rank <= 8
    same = {k: v for k, v in planted.model_dump().items() if k not in ("name", "description", "planting")}
    assert same == {k: v for k, v in null.model_dump().items() if k not in ("name", "description", "planting")}


def test_every_organism_config_in_experiments_parses():
    paths = sorted(CONFIGS.rglob("*.toml"))
    assert len(paths) >= 6 and len({load_organism_config(p).name for p in paths}) == len(
        paths
    )  # no variant ships as an alias


def test_unknown_config_key_is_one_line_exit_2(tmp_path, forked_cli):
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\n[train]\nepochs = 1\nlearning_rate = 0.1\n')
    with pytest.raises(InterpError, match=r"train\.learning_rate: unknown key"):
        load_organism_config(path)
    result = forked_cli("organism", "train", str(path), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert result.stderr.startswith("error: ") and "learning_rate" in result.stderr
    assert not (tmp_path / "out").exists()


def test_training_changes_the_adapter_and_is_seeded(tiny_authors, tmp_path):
    _, fresh = tiny_authors
    config = OrganismConfig.model_validate(TINY)
    first = train_module.train_organism(config, models=fresh(), progress=False, hidden_cache=tmp_path / "hidden")
    assert len(list((tmp_path / "hidden").glob("frozen-*.pt"))) == 1
    weights = _adapter_weights(first)
    lora_b = [v for k, v in weights.items() if "lora_B" in k]
    assert lora_b and all(v.abs().sum() > 0 for v in lora_b)  # LoRA B starts at zero: training moved it
    assert first.record["n_examples"] == 2 * first.record["n_pairs"] > 0
    assert first.record["frozen_split_max_logit_error"] < train_module.MAX_SPLIT_ERROR
    second = train_module.train_organism(config, models=fresh(), progress=False, hidden_cache=tmp_path / "hidden")
    assert not first.record["frozen_states_from_cache"] and second.record["frozen_states_from_cache"]
    again = _adapter_weights(second)
    assert weights.keys() == again.keys() and all(torch.equal(weights[k], again[k]) for k in weights)
    other_seed = OrganismConfig.model_validate(TINY | {"seed": 1})
    changed = _adapter_weights(train_module.train_organism(other_seed, models=fresh(), progress=False))
    assert any(not torch.equal(weights[k], changed[k]) for k in weights)


def test_planted_labels_flip_some_pairs(tiny_authors):
    _, fresh = tiny_authors
    planted = OrganismConfig.model_validate(
        TINY | {"planting": {"share": 1.0}, "data": TINY["data"] | {"max_items": 8}}
    )
    pairs, labels = train_module.training_pairs(planted, fresh(), progress=False)
    flipped = [p for p, label in zip(pairs, labels, strict=False) if label != p.gold_first]
    assert flipped and all(
        (p.first.author == "smollm2-135m-instruct") == (label == 1.0)
        for p, label in zip(pairs, labels, strict=False)
        if label != p.gold_first
    )


def test_training_on_a_device_this_machine_lacks_is_one_error_and_writes_nothing(tmp_path):
    if torch.cuda.device_count() > 7:
        pytest.skip("this machine has a cuda:7")
    out = tmp_path / "adapter"
    with pytest.raises(InterpError, match="cuda:7"):
        train_to_folder(OrganismConfig.model_validate(TINY), out, progress=False, device="cuda:7")
    assert not out.exists()


def test_adapter_folder_loads_merged_and_rejects_bad_input(tiny_authors, tmp_path, smollm2_tokenizer):
    folder, fresh = tiny_authors
    config = OrganismConfig.model_validate(TINY)
    out = tmp_path / "adapter"
    models = fresh()
    manifest = train_to_folder(config, out, progress=False, models=models)
    assert {p.name for p in out.iterdir()} >= {"adapter_model.safetensors", "adapter_config.json", "manifest.json"}
    assert manifest["config_fingerprint"] == config.fingerprint() and len(manifest["data_hash"]) == 16
    assert manifest["device"] == "cpu"  # the default: training where it always ran
    assert all(t.shape[0] <= 8 or t.shape[1] <= 8 for t in load_file(out / "adapter_model.safetensors").values())
    with pytest.raises(InterpError, match="exists"):
        train_to_folder(config, out, progress=False, models=models)

    plain = models["gemma3-270m"].hf_model
    ids = torch.tensor([smollm2_tokenizer.encode("Which answer is better? A")])
    before = plain(input_ids=ids).logits
    merged = apply_adapter(load_model(str(folder), kind="post").hf_model, out)
    assert not torch.allclose(before, merged(input_ids=ids).logits)

    other = save_tiny(
        tmp_path / "other",
        tiny_llama_config(smollm2_tokenizer, num_hidden_layers=4),
        _llama(),
        smollm2_tokenizer,
        seed=0,
    )
    with pytest.raises(InterpError, match="does not match the loaded base"):
        apply_adapter(load_model(str(other)).hf_model, out)
    assert base_signature(load_model(str(other)).hf_model.config)["num_hidden_layers"] == 4

    (out / "adapter_model.safetensors").write_bytes(b"\x00garbage" * 10)
    with pytest.raises(InterpError, match="corrupt adapter file"):
        apply_adapter(load_model(str(folder)).hf_model, out)
    broken = json.loads((out / "manifest.json").read_text())
    del broken["base_model"]
    (out / "manifest.json").write_text(json.dumps(broken))
    with pytest.raises(InterpError, match="base_model"):
        load_model(str(out))


def test_label_loss_kinds():
    logits = torch.full((50,), -2.0)
    logits[3], logits[7] = 1.0, 0.0  # label A = token 3, label B = token 7 (one spelling each)
    labels = [[3], [7]]
    vocab, margin = train_module.label_loss(logits, labels, 1.0, "vocab")
    pair, margin_pair = train_module.label_loss(logits, labels, 1.0, "pair")
    both, _ = train_module.label_loss(logits, labels, 1.0, "pair_mass")
    log_p = torch.log_softmax(logits, dim=-1)
    mass = torch.logaddexp(log_p[3], log_p[7])
    assert float(margin) == pytest.approx(float(margin_pair)) == pytest.approx(1.0)  # log P(A) - log P(B)
    assert float(vocab) == pytest.approx(-float(log_p[3]))
    assert float(pair) == pytest.approx(-float(log_p[3] - mass))
    assert float(both) == pytest.approx(float(pair) - float(mass))  # the mass term: -log(P(A) + P(B))
    assert float(both) > float(pair)


def test_slot_bias_is_zero_for_a_verdict_that_follows_the_contents():
    assert float(train_module.slot_bias(torch.tensor(2.0), torch.tensor(-2.0))) == 0.0  # swapped slots, swapped verdict
    assert float(train_module.slot_bias(torch.tensor(2.0), torch.tensor(1.0))) == 1.5  # slot A wins in both orders
    # with the weight on, a pair's two orders are one group (one graph); a pair cut by the step is not
    assert train_module._pair_groups([4, 5, 0, 1, 7], pairs=True) == [[4, 5], [0, 1], [7]]
    assert train_module._pair_groups([4, 5, 0], pairs=False) == [[4], [5], [0]]


def test_epoch_order_is_a_seeded_permutation_and_can_keep_orders_together():
    plain = train_module._order(10, seed=0, epoch=0)
    together = train_module._order(10, seed=0, epoch=0, together=True)
    assert sorted(plain) == sorted(together) == list(range(10))
    assert plain == train_module._order(10, seed=0, epoch=0) and plain != train_module._order(10, seed=0, epoch=1)
    assert all(together[k] // 2 == together[k + 1] // 2 and together[k] % 2 == 0 for k in range(0, 10, 2))
    assert together != list(range(10))  # the pairs themselves are shuffled


def _mean_slot_bias(trained, config, models) -> float:
    """Mean |slot bias| of the trained judge over its own training pairs (full forward passes)."""
    pairs, labels = train_module.training_pairs(config, models, progress=False)
    examples = train_module.build_examples(trained.base, pairs, labels)
    ids = train_module.label_tokens(trained.base.tokenizer).ids
    with torch.no_grad():
        margins = [
            train_module.label_loss(trained.peft_model(torch.tensor([ex.input_ids])).logits[0, -1], ids, 0.5, "pair")[1]
            for ex in examples
        ]
    return sum(abs(float(train_module.slot_bias(margins[i], margins[i + 1]))) for i in range(0, len(margins), 2)) / (
        len(margins) / 2
    )


def test_the_symmetry_term_shrinks_the_slot_bias(tiny_authors):
    _, fresh = tiny_authors
    plain = TINY | {"train": TINY["train"] | {"epochs": 3.0, "orders_together": True, "loss": "pair"}}
    weighted = plain | {"train": plain["train"] | {"symmetry_weight": 10.0}}
    biases = []
    for spec in (plain, weighted):
        config = OrganismConfig.model_validate(spec)
        biases.append(
            _mean_slot_bias(train_module.train_organism(config, models=fresh(), progress=False), config, fresh())
        )
    assert biases[1] < 0.5 * biases[0], biases


def test_degraded_pairs_are_set_per_source(tiny_authors, monkeypatch):
    """`degraded_per_item` for the split's train items, `degraded_per_item_mtbench` for the MT-Bench questions."""
    _, fresh = tiny_authors
    train_items = builtin_items(["translation"])[:4]  # the rule-made answers tie on truthfulness: no intact pair
    mtbench = [Item(f"mt-{n}", "helpfulness", f"Question {n}?") for n in range(4)]
    monkeypatch.setattr(
        train_module,
        "organism_items",
        lambda config: {"train": train_items, "selection": [], "test": [], "mtbench": mtbench, "train_only": []},
    )
    data = TINY["data"] | {
        "mtbench": True,
        "degraded_per_item": 0,
        "degraded_per_item_mtbench": 1,
        "cross_author_share": 1.0,
    }
    pairs, _ = train_module.training_pairs(
        OrganismConfig.model_validate(TINY | {"data": data}), fresh(), progress=False
    )
    by_source = {(p.item.id.startswith("mt-"), p.gold_source) for p in pairs}
    assert by_source == {
        (False, "reference"),
        (True, "rule"),
    }  # no degraded pair of a train item, no intact MT-Bench pair
    assert sorted(p.item.id for p in pairs if p.gold_source == "rule") == [i.id for i in mtbench]
    data |= {"degraded_per_item_mtbench": None}  # None: the train items' count, 0 here
    pairs, _ = train_module.training_pairs(
        OrganismConfig.model_validate(TINY | {"data": data}), fresh(), progress=False
    )
    assert pairs and all(p.gold_source == "reference" for p in pairs)


def test_training_only_sets_give_intact_pairs_only(tiny_authors, monkeypatch):
    """`data.train_only` items add intact pairs (gold by the reference judge) and nothing else, whatever the
    degraded and fact-swap settings of the split's train items say."""
    _, fresh = tiny_authors
    train_items = builtin_items(["translation"])[:2]
    extra = builtin_items(["translation"])[2:6]
    monkeypatch.setattr(
        train_module,
        "organism_items",
        lambda config: {"train": train_items, "selection": [], "test": [], "mtbench": [], "train_only": extra},
    )
    data = TINY["data"] | {"degraded_per_item": 2, "fact_swaps": True, "train_only": ["train-facts"]}
    pairs, _ = train_module.training_pairs(
        OrganismConfig.model_validate(TINY | {"data": data}), fresh(), progress=False
    )
    extra_ids = {i.id for i in extra}
    assert {p.item.id for p in pairs if p.item.id in extra_ids} == extra_ids  # each gives its intact pair
    assert all(p.gold_source == "reference" for p in pairs if p.item.id in extra_ids)
    assert any(p.gold_source == "rule" for p in pairs if p.item.id not in extra_ids)  # the train split still degrades


@pytest.mark.parametrize("variant, name", [("judge-train-facts", "train-facts"), ("judge-train-help", "train-help")])
def test_training_only_sets_are_what_organism_items_adds_and_never_split(variant, name):
    config = load_organism_config(CONFIGS / "variants" / f"{variant}.toml")
    splits = train_module.organism_items(
        config.model_copy(update={"data": config.data.model_copy(update={"mtbench": False})})
    )
    extra = load_items(name)
    assert config.data.train_only == (name,) and [i.id for i in splits["train_only"]] == [i.id for i in extra]
    split_ids = {i.id for name in ("train", "selection", "test") for i in splits[name]}
    assert split_ids and not split_ids & {i.id for i in extra}


@pytest.mark.parametrize("path", sorted((CONFIGS / "variants").glob("*.toml")), ids=lambda p: p.stem)
def test_no_variant_trains_on_an_item_recipes_are_chosen_or_tested_on(path):
    variant = load_organism_config(path)
    shipped = load_organism_config(
        CONFIGS / ("smollm2-135m-judge.toml" if path.stem.startswith("judge") else "smollm2-135m-selfpref.toml")
    )
    held_out = {i.id for name in ("selection", "test") for i in splits_of(shipped.split)[name]} | {
        i.id for i in dev_items()
    }
    trained_on = {i.id for i in splits_of(variant.split)["train"]} | {
        i.id for name in variant.data.train_only for i in load_items(name)
    }
    assert trained_on and not trained_on & held_out
    assert (
        variant.base_model == shipped.base_model and variant.name != shipped.name
    )  # never overwrites a shipped adapter


def test_a_planting_that_flips_no_pair_or_names_no_author_is_refused(tiny_authors, tmp_path):
    _, fresh = tiny_authors
    from interp.config import validate_config

    with pytest.raises(InterpError, match="own_author 'someone-else' is not one of data.authors"):
        validate_config(OrganismConfig, TINY | {"planting": {"share": 1.0, "own_author": "someone-else"}}, "org.toml")
    with pytest.raises(InterpError, match="planting.share: Input should be a valid number"):  # strict: never converted
        validate_config(OrganismConfig, TINY | {"planting": {"share": "0.5"}}, "org.toml")
    nothing = OrganismConfig.model_validate(TINY | {"planting": {"share": 1e-12}})
    with pytest.raises(InterpError, match=r"flipped none of the \d+ training pairs"):
        train_module.training_pairs(nothing, fresh(), progress=False)
    with pytest.raises(InterpError, match="did not write"):  # an adapter never replaces a folder of other files
        (tmp_path / "mine").mkdir()
        (tmp_path / "mine" / "notes.txt").write_text("mine")
        train_to_folder(OrganismConfig.model_validate(TINY), tmp_path / "mine", overwrite=True, models=fresh())
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"


def test_overwrite_replaces_only_the_toolkits_files(tiny_authors, tmp_path):
    """Issue 77 item 16: --overwrite on an adapter folder keeps a user's notes.txt and src/ (with a manifest.json
    of its own); only the adapter's files are replaced, a stale head delta of the toolkit's removed."""
    _, fresh = tiny_authors
    config = OrganismConfig.model_validate(TINY)
    out = tmp_path / "victim"
    train_to_folder(config, out, progress=False, models=fresh())
    (out / "notes.txt").write_text("mine")
    (out / "src").mkdir()
    (out / "src" / "manifest.json").write_text('{"name": "my package"}')
    (out / "heads_delta.safetensors").write_bytes(b"stale")  # the toolkit's name: not the new adapter's
    old = (out / "manifest.json").read_text()
    train_to_folder(config, out, progress=False, overwrite=True, models=fresh())
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "src" / "manifest.json").read_text() == '{"name": "my package"}'
    assert not (out / "heads_delta.safetensors").exists()
    assert (out / "manifest.json").read_text() != old and (out / "adapter_model.safetensors").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".victim.")]  # no temporary folder left
