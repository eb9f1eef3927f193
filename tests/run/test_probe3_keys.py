"""Caches keyed by content, files keyed by identity, and refusals before work.

Each test is a case where a key could be too coarse, on tiny models built here:
- two wrapped models, and a model retrained into the same folder, each get their own answers;
- two judges whose names share a path label keep their own attention;
- a run whose config.toml was edited after it ran is refused on resume and on read;
- a control judge that owns one of the answers is refused;
- empty answers are refused before any judging; a missing reference answer before any write;
- a file where a run keeps a sub-folder is one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from interp.config import RunConfig
from interp.core.models import load_model, wrap_model
from interp.data import Item
from interp.errors import InterpError
from interp.run.pipeline import run_dbg
from interp.run.responses import Decoding, generate_responses
from interp.run.store import read_run
from tests.helpers.models import save_tiny, tiny_llama_config

ITEMS = [
    Item(
        f"q{k}", "helpfulness", f"Tell me one fact about the number {k * 7 + 3}.", reference=f"{k * 7 + 3} is a number."
    )
    for k in range(4)
]
DECODING = Decoding(max_words=12, max_new_tokens=10, batch_size=4)


def _tiny(folder: Path, tokenizer, seed: int) -> Path:
    from transformers import LlamaForCausalLM

    return save_tiny(folder, tiny_llama_config(tokenizer), LlamaForCausalLM, tokenizer, seed=seed)


def _texts(model, cache: Path, monkeypatch) -> list[str]:
    monkeypatch.setenv("INTERP_CACHE", str(cache))
    return [r.text for r in generate_responses(model, ITEMS, DECODING, progress=False)]


def _items_file(folder: Path, items=ITEMS) -> Path:
    path = folder / "items.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {"id": i.id, "task": i.task, "query": i.query, **({"reference": i.reference} if i.reference else {})}
            )
            + "\n"
            for i in items
        )
    )
    return path


def test_wrapped_models_get_their_own_answers(tmp_path, smollm2_tokenizer, monkeypatch):
    """Every `wrap_model` model has source "user": the key is the weights, so alpha's answers never reach beta,
    nor a third model wrapped later."""
    from transformers import AutoModelForCausalLM

    folders = [_tiny(tmp_path / f"m{seed}", smollm2_tokenizer, seed) for seed in (1, 2, 3)]
    models = [
        wrap_model(AutoModelForCausalLM.from_pretrained(f), smollm2_tokenizer, name=n)
        for f, n in zip(folders, ("alpha", "beta", "gamma"), strict=False)
    ]
    alone = [_texts(m, tmp_path / f"alone-{m.name}", monkeypatch) for m in models]
    assert alone[0] != alone[1] and alone[1] != alone[2]  # the seeds answer differently
    shared = tmp_path / "shared-cache"
    assert [_texts(m, shared, monkeypatch) for m in models] == alone


def test_retrained_weights_and_generation_config_in_one_folder_get_new_answers(
    tmp_path, smollm2_tokenizer, monkeypatch
):
    folder = tmp_path / "model"
    cache = tmp_path / "cache"
    first = _texts(load_model(str(_tiny(folder, smollm2_tokenizer, seed=1)), device="cpu"), cache, monkeypatch)
    retrained = _texts(load_model(str(_tiny(folder, smollm2_tokenizer, seed=5)), device="cpu"), cache, monkeypatch)
    assert retrained == _texts(load_model(str(folder), device="cpu"), tmp_path / "fresh", monkeypatch)
    assert retrained != first
    # only generation_config.json changes: a repetition penalty changes greedy text, and the key with it
    config = json.loads((folder / "generation_config.json").read_text())
    (folder / "generation_config.json").write_text(json.dumps(config | {"repetition_penalty": 5.0}))
    model = load_model(str(folder), device="cpu")
    assert (
        model.fingerprint()
        != load_model(str(_tiny(tmp_path / "copy", smollm2_tokenizer, seed=5)), device="cpu").fingerprint()
    )
    assert _texts(model, cache, monkeypatch) == _texts(
        load_model(str(folder), device="cpu"), tmp_path / "fresh2", monkeypatch
    )


def test_the_fingerprint_follows_weights_not_names(tmp_path, smollm2_tokenizer):
    from transformers import AutoModelForCausalLM

    folder = _tiny(tmp_path / "m", smollm2_tokenizer, seed=1)
    a = wrap_model(AutoModelForCausalLM.from_pretrained(folder), smollm2_tokenizer, name="a")
    b = wrap_model(AutoModelForCausalLM.from_pretrained(folder), smollm2_tokenizer, name="b")
    assert a.fingerprint() == b.fingerprint() == load_model(str(folder), device="cpu").fingerprint()
    with torch.no_grad():  # one weight of one layer moved by a single ulp
        weight = b.hf_model.model.layers[1].mlp.down_proj.weight
        weight[3, 5] = torch.nextafter(weight[3, 5], torch.tensor(1.0))
    assert a.fingerprint() != b.fingerprint()


@pytest.fixture(scope="module")
def label_run(tmp_path_factory, smollm2_tokenizer):
    """A run whose two judges' names share one path label: `tq/x` and `tq_x` (each a tiny Llama folder)."""
    root = tmp_path_factory.mktemp("labels")
    _tiny(root / "tq" / "x", smollm2_tokenizer, seed=11)
    _tiny(root / "tq_x", smollm2_tokenizer, seed=12)
    specs = (str(root / "tq" / "x"), str(root / "tq_x"))
    config = RunConfig(
        name="labels",
        n=len(ITEMS),
        data=str(_items_file(root)),
        models=specs,
        max_new_tokens=8,
        max_words=12,
        batch_size=4,
        n_boot=20,
        device="cpu",
    )
    run_dbg(config, root / "run", progress=False)
    return root / "run", specs, config


def test_judges_with_one_label_keep_their_own_attention(label_run):
    from interp.analysis.attention_store import attention_judges, load_attention
    from interp.storage import path_label

    run, specs, _ = label_run
    assert path_label(specs[0]) == path_label(specs[1])
    first, second = (load_attention(run, spec) for spec in specs)
    assert first.judge == specs[0] and second.judge == specs[1]
    assert not torch.equal(first.mass, second.mass)  # two models, two sets of attention
    assert attention_judges(run) == list(specs)
    assert len(list((run / "attention").glob("*.safetensors"))) == 2


def test_an_older_runs_shared_label_file_is_not_read_for_the_other_judge(label_run, tmp_path):
    """A run written before the key: one `<label>.json` file; it is read for the judge its index names only."""
    import shutil

    from interp.analysis.attention_store import load_attention
    from interp.storage import keyed_label, path_label

    run, specs, _ = label_run
    old = tmp_path / "old"
    shutil.copytree(run, old)
    label = path_label(specs[0])
    for suffix in (".safetensors", ".json"):
        (old / "attention" / f"{keyed_label(specs[0])}{suffix}").rename(old / "attention" / f"{label}{suffix}")
        (old / "attention" / f"{keyed_label(specs[1])}{suffix}").unlink()
    assert load_attention(old, specs[0]).judge == specs[0]
    with pytest.raises(InterpError, match="holds judge"):
        load_attention(old, specs[1])


def test_an_edited_config_is_refused_on_resume_and_on_read(label_run, tmp_path):
    import shutil

    run, specs, config = label_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    text = (copy / "config.toml").read_text()
    (copy / "config.toml").write_text("# a comment changes nothing the run made\n" + text)
    assert read_run(copy).config.seed == config.seed  # comments and formatting are not the config
    edited = config.model_copy(update={"seed": config.seed + 1})
    (copy / "config.toml").write_text(edited.model_copy(update={"dtype": "float32"}).to_toml())
    with pytest.raises(InterpError, match="was edited after the run"):
        run_dbg(edited, copy, progress=False)
    with pytest.raises(InterpError, match="was edited after the run"):
        read_run(copy)
    with pytest.raises(InterpError, match="different config"):  # the file restored, a new config still refused
        (copy / "config.toml").write_text(text)
        run_dbg(edited, copy, progress=False)


def test_a_control_judge_that_owns_an_answer_is_refused(label_run, tmp_path, smollm2_tokenizer):
    from interp.causal.design import TestDesign, resolve_controls

    run, specs, _ = label_run
    loaded = read_run(run)
    outsider = _tiny(tmp_path / "outsider", smollm2_tokenizer, seed=21)
    design = TestDesign(control_judges=(str(outsider), specs[1]))
    with pytest.raises(InterpError, match="wrote one of the run's answers"):
        resolve_controls(loaded, specs[0], design)
    spelled = specs[1] + "/"
    with pytest.raises(InterpError, match="wrote one of the run's answers"):  # the author spelled otherwise
        resolve_controls(loaded, specs[0], TestDesign(control_judges=(spelled,)))
    assert resolve_controls(loaded, specs[0], TestDesign(control_judges=(str(outsider),))) == [str(outsider)]


def test_empty_answers_are_refused_before_any_judging(tmp_path, smollm2_tokenizer):
    """A model whose generation config suppresses every token but EOS answers nothing: refused, naming the model
    and the items, with no judgment, attention or response file written."""
    mute = _tiny(tmp_path / "mute", smollm2_tokenizer, seed=3)
    config = json.loads((mute / "generation_config.json").read_text())
    eos = smollm2_tokenizer.eos_token_id
    config["suppress_tokens"] = [t for t in range(len(smollm2_tokenizer)) if t != eos]
    (mute / "generation_config.json").write_text(json.dumps(config))
    other = _tiny(tmp_path / "other", smollm2_tokenizer, seed=4)
    run = RunConfig(
        n=len(ITEMS),
        data=str(_items_file(tmp_path)),
        models=(str(other), str(mute)),
        max_new_tokens=6,
        max_words=12,
        n_boot=20,
        device="cpu",
    )
    with pytest.raises(InterpError, match=r"mute gave an empty answer to 4 of the run's 4 items \(q0, q1, q2, q3\)"):
        run_dbg(run, tmp_path / "run", progress=False)
    for name in ("responses.jsonl", "judgments.jsonl", "attention", "summary.json"):
        assert not (tmp_path / "run" / name).exists()


def test_a_missing_reference_is_refused_before_any_write(tmp_path, smollm2_tokenizer):
    items = [*ITEMS[:2], Item("noref", "helpfulness", "Name a colour."), *ITEMS[2:]]
    folder = _tiny(tmp_path / "m", smollm2_tokenizer, seed=1)
    run = RunConfig(
        n=len(items),
        data=str(_items_file(tmp_path, items)),
        models=(str(folder), "imported"),
        imports={"imported": str(tmp_path / "imp.jsonl")},
        n_boot=20,
        device="cpu",
    )
    (tmp_path / "imp.jsonl").write_text(
        "".join(json.dumps({"item_id": i.id, "text": "An answer."}) + "\n" for i in items)
    )
    with pytest.raises(InterpError, match=r"1 of the run's 5 items have no reference answer \('noref'\)"):
        run_dbg(run, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("folder", ["attention", "variants", "figures"])
def test_a_file_where_a_run_keeps_a_folder_is_one_line(folder, tmp_path, smollm2_tokenizer):
    out = tmp_path / "run"
    out.mkdir()
    (out / folder).write_text("not a folder")
    model = _tiny(tmp_path / "m", smollm2_tokenizer, seed=1)
    run = RunConfig(
        n=2,
        data=str(_items_file(tmp_path)),
        models=(str(model), "imported"),
        imports={"imported": str(tmp_path / "imp.jsonl")},
        n_boot=20,
        device="cpu",
    )
    with pytest.raises(InterpError, match=f"{folder} is a file where the run keeps a folder"):
        run_dbg(run, out, progress=False, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == [folder]


def test_a_file_in_a_finished_runs_folder_place_is_refused_on_read(label_run, tmp_path):
    import shutil

    run, _, _ = label_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    (copy / "interventions").write_text("x")
    with pytest.raises(InterpError, match="interventions is a file where the run keeps a folder"):
        read_run(copy)
