"""Keys by content (issue 77, items 2, 8, 9): a model given as files is keyed by what they hold, a wrapped model by
its object's weights, and the packaged names keep the keys they had."""

from __future__ import annotations

import os
import shutil

import pytest
import torch

import interp
from interp.core.model_files import file_digest, folder_digest, judge_content_key, spec_content_key
from interp.engine.variants import NO_INTERVENTION, digest, run_identity, variant_key
from interp.errors import InterpError
from interp.run.pipeline import run_dbg
from interp.run.store import read_run
from tests.helpers.models import save_tiny, tiny_llama_config
from tests.helpers.runs import small_run_config


@pytest.fixture(scope="module")
def two_tiny(tmp_path_factory, smollm2_tokenizer):
    """Two tiny Llamas of one shape and tokenizer, different weights (seeds 0 and 1)."""
    from transformers import LlamaForCausalLM

    root = tmp_path_factory.mktemp("two-tiny")
    config = tiny_llama_config(smollm2_tokenizer)
    a = save_tiny(root / "a", config, LlamaForCausalLM, smollm2_tokenizer, seed=0)
    b = save_tiny(root / "b", config, LlamaForCausalLM, smollm2_tokenizer, seed=1)
    return a, b


def test_a_folder_is_keyed_by_its_files_content(two_tiny, tmp_path):
    a, b = two_tiny
    mut = tmp_path / "mut"
    shutil.copytree(a, mut)
    assert spec_content_key(str(mut)) == spec_content_key(str(a))  # a byte-identical copy is the same content
    before = spec_content_key(str(mut))
    shutil.copy(b / "model.safetensors", mut / "model.safetensors")  # the probe's `cp seed4/model.safetensors mut/`
    assert spec_content_key(str(mut)) not in (before, None)
    shutil.copy(a / "model.safetensors", mut / "model.safetensors")
    assert spec_content_key(str(mut)) == before  # back to a's bytes: a's key again
    (mut / "tokenizer_config.json").write_text((a / "tokenizer_config.json").read_text().replace("{", '{"x": 1, ', 1))
    assert spec_content_key(str(mut)) != before  # a tokenizer file changed alone
    (mut / "README.md").write_text("notes")
    key = spec_content_key(str(mut))
    (mut / "README.md").write_text("other notes")
    assert spec_content_key(str(mut)) == key  # a read-me is no part of the model


def test_spellings_symlinks_and_hard_links_of_one_folder_are_one_key(two_tiny, tmp_path):
    a, _ = two_tiny
    link = tmp_path / "link"
    link.symlink_to(a, target_is_directory=True)
    hard = tmp_path / "hard"
    hard.mkdir()
    for file in a.iterdir():
        os.link(file, hard / file.name)
    spellings = [str(a), f"{a}/", f"{a.parent}/./{a.name}", f"{a}/../{a.name}", str(link), str(hard)]
    assert len({spec_content_key(s) for s in spellings}) == 1


def test_an_in_place_write_that_keeps_size_and_mtime_is_hashed_again(tmp_path):
    """The digest cache is keyed by the change time too: a write restoring the old mtime is still seen."""
    path = tmp_path / "w.gguf"
    path.write_bytes(b"a" * 64)
    first = file_digest(path)
    stat = path.stat()
    with open(path, "r+b") as handle:  # the same inode and size
        handle.write(b"b")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_mtime_ns == stat.st_mtime_ns and file_digest(path) != first
    assert spec_content_key(str(path)).startswith("file:")


def test_packaged_names_keep_their_keys(tmp_path):
    """An alias, a shipped organism and an HF id add nothing to a variant's key: existing runs resume."""
    from interp.core.adapters import shipped_adapters

    organism = next(iter(shipped_adapters()))
    for spec in ("smollm2-135m-instruct", organism, "org/not-cached"):
        assert spec_content_key(spec) is None and judge_content_key(spec) is None


def test_a_run_with_a_judge_folder_changed_in_place_is_refused_and_its_variants_rekeyed(two_tiny, tmp_path):
    a, b = two_tiny
    judge = tmp_path / "judge"
    shutil.copytree(a, judge)
    config = interp.config.RunConfig(**small_run_config(tmp_path, str(judge)))
    out = tmp_path / "run"
    run_dbg(config, out, progress=False)
    run = read_run(out)
    key = variant_key(run, str(judge), "hf", NO_INTERVENTION, run.items)
    old_formula = digest(
        {
            "run": run_identity(run),
            "judge": str(judge),
            "backend": "hf",
            "items": [i.id for i in run.items],
            "variant": NO_INTERVENTION.identity(),
        }
    )
    assert key != old_formula  # the content is part of a file spec's key
    run_dbg(config, out, progress=False)  # unchanged: resumes
    shutil.copy(b / "model.safetensors", judge / "model.safetensors")
    listing = sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*"))
    with pytest.raises(InterpError, match="other files in .*judge.* than are there now"):
        run_dbg(config, out, progress=False)
    assert sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*")) == listing  # nothing written
    from interp.engine.judges import judge_pool

    with pytest.raises(InterpError, match="other files in"):
        judge_pool(read_run(out))
    assert variant_key(run, str(judge), "hf", NO_INTERVENTION, run.items) != key  # a control outside: re-judged


def test_two_models_wrapped_under_one_name_have_two_keys(two_tiny, tmp_path):
    from interp.core.models import load_model, wrap_model

    a, b = two_tiny
    config = interp.config.RunConfig(**small_run_config(tmp_path, str(a)))
    run_dbg(config, tmp_path / "run", progress=False)
    run = read_run(tmp_path / "run")
    first, second = (load_model(str(f)) for f in (a, b))
    held = [wrap_model(m.hf_model, m.tokenizer, name="ctl-mem") for m in (first, second)]
    keys = [variant_key(run, "ctl-mem", "hf", NO_INTERVENTION, run.items, model=m) for m in held]
    assert keys[0] != keys[1]
    assert variant_key(run, "ctl-mem", "hf", NO_INTERVENTION, run.items, model=held[0]) == keys[0]  # stable
    with torch.no_grad():
        next(held[0].hf_model.parameters()).mul_(2.0)  # changed in place: keyed anew
    assert variant_key(run, "ctl-mem", "hf", NO_INTERVENTION, run.items, model=held[0]) not in keys


def test_folder_digest_ignores_subfolders_and_hidden_files(two_tiny, tmp_path):
    a, _ = two_tiny
    copy = tmp_path / "copy"
    shutil.copytree(a, copy)
    (copy / ".cache").mkdir()
    (copy / ".cache" / "x").write_text("1")
    (copy / ".lock").write_text("1")
    assert folder_digest(copy) == folder_digest(a)


@pytest.fixture(scope="module")
def judged(two_tiny, tmp_path_factory):
    """A finished run judged by tiny Llama a (its own answers against imported ones)."""
    a, _ = two_tiny
    root = tmp_path_factory.mktemp("judged")
    config = interp.config.RunConfig(**small_run_config(root, str(a)))
    run_dbg(config, root / "run", progress=False)
    return read_run(root / "run"), str(a)


def test_one_control_spelled_twice_or_copied_is_refused(two_tiny, judged, tmp_path):
    from interp.causal.design import TestDesign, resolve_controls

    run, judge = judged
    _, b = two_tiny
    copy = tmp_path / "copy-of-b"
    shutil.copytree(b, copy)
    link = tmp_path / "link-to-b"
    link.symlink_to(b, target_is_directory=True)
    for twice in ([str(b), f"{b.parent}/./{b.name}"], [str(b), f"{b}/../{b.name}/"], [str(b), str(link)]):
        with pytest.raises(InterpError, match="twice .*are one model"):
            resolve_controls(run, judge, TestDesign(control_judges=tuple(twice)))
    with pytest.raises(InterpError, match="twice"):  # a byte-identical copy is the same control
        resolve_controls(run, judge, TestDesign(control_judges=(str(b), str(copy))))
    with pytest.raises(InterpError, match="is the judge under test"):  # a copy of the judge itself
        judge_copy = tmp_path / "judge-copy"
        shutil.copytree(judge, judge_copy)
        resolve_controls(run, judge, TestDesign(control_judges=(str(judge_copy),)))
    assert resolve_controls(run, judge, TestDesign(control_judges=(str(b),))) == [str(b)]


def test_a_pair_of_one_model_and_gold_equal_to_a_judge_are_refused(two_tiny, tmp_path):
    a, b = two_tiny
    base = small_run_config(tmp_path, str(a))
    cases = {
        "are one model": base | {"models": (str(a), f"{a}/../{a.name}/"), "judges": [str(a)], "imports": {}},
        "is a judge of the run": base | {"judges": [str(a), str(b)], "gold": {"models": [f"{b.parent}/./{b.name}"]}},
        "one of the judged pair": base | {"gold": {"models": [f"{a}/"]}},
        "names .* twice": base | {"judges": [str(a), f"{a}/"]},
    }
    for message, keys in cases.items():
        out = tmp_path / "out"
        with pytest.raises(InterpError, match=message):
            run_dbg(interp.config.RunConfig(**keys), out, progress=False)
        assert not out.exists()


# ---- the hostile re-probe of the keys (variants the fifth probe did not try) ------------------------------------


def test_a_symlinked_weight_file_repointed_or_a_config_edited_changes_the_key(two_tiny, tmp_path):
    a, b = two_tiny
    folder = tmp_path / "linked"
    folder.mkdir()
    for file in a.iterdir():
        (folder / file.name).symlink_to(file)
    key = spec_content_key(str(folder))
    assert key == spec_content_key(str(a))  # symlinks followed: a's content
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").symlink_to(b / "model.safetensors")
    assert spec_content_key(str(folder)) != key
    copy = tmp_path / "copy"
    shutil.copytree(a, copy)
    config = (copy / "config.json").read_text()
    (copy / "config.json").write_text(config.replace('"rms_norm_eps"', '"rms_norm_eps_x": 1, "rms_norm_eps"'))
    assert spec_content_key(str(copy)) != key
    (copy / "config.json").write_text(config)
    (copy / "model-00002-of-00002.safetensors").write_bytes(b"a second shard")
    assert spec_content_key(str(copy)) != key  # a file added beside the weights


def test_load_state_dict_into_a_wrapped_model_rekeys_it(two_tiny, tmp_path):
    from interp.core.models import load_model, wrap_model

    a, b = two_tiny
    first, second = (load_model(str(f)) for f in (a, b))
    held = wrap_model(first.hf_model, first.tokenizer, name="mine")
    before = judge_content_key("mine", held)
    assert judge_content_key("mine", held) == before
    held.hf_model.load_state_dict(second.hf_model.state_dict())
    assert judge_content_key("mine", held) not in (before, None)
    same = wrap_model(second.hf_model, second.tokenizer, name="mine")
    assert judge_content_key("mine", same) == judge_content_key("mine", held)  # equal weights: one key


def test_a_control_changed_in_place_gets_a_new_causal_result(two_tiny, judged, tmp_path):
    """Item 8 end to end: `intervene` with a control folder, the control's weights replaced in place, `intervene`
    again: a new result folder and fresh judgments, not the old result byte for byte."""
    from transformers import LlamaForCausalLM

    from interp.causal.design import TestDesign
    from interp.causal.intervene import intervene_run
    from interp.hooks import AttentionIntervention
    from tests.helpers.models import tiny_llama_config

    source, judge = judged
    run = tmp_path / "run"
    shutil.copytree(source.dir.root, run)
    _, b = two_tiny
    control = tmp_path / "control"
    shutil.copytree(b, control)
    spec = AttentionIntervention(target="self", alpha=0.0, name="mask")
    design = TestDesign(control_judges=(str(control),))
    first = intervene_run(run, spec, design=design)
    tokenizer = __import__("transformers").AutoTokenizer.from_pretrained(b)
    other = save_tiny(tmp_path / "seed7", tiny_llama_config(tokenizer), LlamaForCausalLM, tokenizer, seed=7)
    shutil.copy(other / "model.safetensors", control / "model.safetensors")
    second = intervene_run(run, spec, design=design)
    folders = sorted(p.name for p in (run / "interventions").iterdir() if p.is_dir())
    assert len(folders) == 2  # a second key: nothing of the first result is read back
    assert first.control_variant_keys != second.control_variant_keys
    assert first.variant_keys == second.variant_keys  # the tested judge did not change: its judgments are reused


def test_two_models_wrapped_under_one_name_as_controls_get_two_results(two_tiny, judged, tmp_path):
    """Item 9 end to end: `interp.intervene` with `Judge.wrap(b, name="ctl-mem")`, then another model wrapped
    under the same name: a second result, not the first one reused."""
    from interp.core.models import load_model

    source, _ = judged
    run = tmp_path / "run"
    shutil.copytree(source.dir.root, run)
    _, b = two_tiny
    one = load_model(str(b))
    other = load_model(str(b))
    with torch.no_grad():
        for parameter in other.hf_model.parameters():
            parameter.mul_(0.5)
    results = [
        interp.intervene(
            run,
            target="self",
            alpha=0.0,
            name="mask",
            control_judge=[interp.Judge.wrap(m.hf_model, m.tokenizer, name="ctl-mem")],
            progress=False,
        )
        for m in (one, other)
    ]
    assert len([p for p in (run / "interventions").iterdir() if p.is_dir()]) == 2
    keys = [r.result.control_variant_keys for r in results]
    assert keys[0] != keys[1]


def test_an_author_that_judges_nothing_may_change_once_its_answers_are_written(two_tiny, tmp_path):
    from interp.engine.judges import judge_pool

    a, b = two_tiny
    author, judge = tmp_path / "author", tmp_path / "judge"
    shutil.copytree(a, author)
    shutil.copytree(b, judge)
    keys = small_run_config(tmp_path, str(author)) | {"judges": [str(judge)]}
    config = interp.config.RunConfig(**keys)
    run_dbg(config, tmp_path / "run", progress=False)
    shutil.copy(b / "model.safetensors", author / "model.safetensors")
    judge_pool(read_run(tmp_path / "run"))  # its answers are stored: re-judging them is sound
    run_dbg(config, tmp_path / "run", progress=False)
    shutil.copy(a / "model.safetensors", judge / "model.safetensors")
    with pytest.raises(InterpError, match="other files in .*judge"):
        judge_pool(read_run(tmp_path / "run"))
