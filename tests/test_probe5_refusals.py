"""The fifth hostile probe's reproductions (issue 77, items 13, 15, 17-21 and the unsure cases decided): each is
refused in one line (exit 2, nothing written) or kept intact."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

import interp
from interp.config import RunConfig
from interp.errors import InterpError
from interp.run.pipeline import run_dbg
from tests.helpers.runs import small_run_config


def _listing(folder: Path) -> list:
    return sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*"))


def _one_error_line(result) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory, tiny_llama_dir):
    """A finished run of the tiny Llama (attention read at the verdict), its config written as TOML."""
    root = tmp_path_factory.mktemp("probe5")
    config = RunConfig(**small_run_config(root, str(tiny_llama_dir)))
    run_dbg(config, root / "run", progress=False)
    (root / "run.toml").write_text(config.to_toml())
    return root, config


def test_a_folder_of_a_users_files_named_like_a_runs_is_not_taken_over(finished, tmp_path, forked_cli):
    """Item 17: adapters.json, report.html and thesis.tex of a user's: refused without --overwrite."""
    root, _ = finished
    out = tmp_path / "out"
    out.mkdir()
    for name in ("adapters.json", "report.html", "thesis.tex"):
        (out / name).write_text(f"the user's {name}")
    before = _listing(out)
    line = _one_error_line(forked_cli("dbg", root / "run.toml", "--out", out, "--no-report"))
    assert "did not write" in line and "--overwrite" in line
    assert _listing(out) == before


@pytest.mark.parametrize("lens", ["chen2025", "salieri", "pls"])
def test_metrics_refuse_a_device_or_pipe_before_reading_it(lens, tmp_path, forked_cli):
    """Item 18: /dev/zero would be read until memory runs out; a FIFO would never end."""
    line = _one_error_line(forked_cli("metrics", lens, "/dev/zero"))
    assert "not a regular file" in line
    import os

    fifo = tmp_path / "scores.csv"
    os.mkfifo(fifo)
    assert "not a regular file" in _one_error_line(forked_cli("metrics", lens, fifo))


def test_a_line_without_end_is_refused_not_read_into_memory(tmp_path):
    from interp.metrics.tables import iter_jsonl
    from interp.storage import bounded_lines

    path = tmp_path / "one.jsonl"
    path.write_text("x" * 5000)
    with open(path) as handle, pytest.raises(InterpError, match="a line longer than"):
        list(bounded_lines(handle, path, max_line=1000))
    path.write_text('{"a": 1}\n{"a": 2}\n')
    assert [n for n, _ in iter_jsonl(path)] == [1, 2]


def test_attention_refuses_a_newer_summary_before_writing_figures(finished, tmp_path, forked_cli):
    """Item 19: summary.json at schema_version 99: one line, figures/ untouched."""
    root, _ = finished
    run = tmp_path / "run"
    shutil.copytree(root / "run", run)
    summary = json.loads((run / "summary.json").read_text())
    (run / "summary.json").write_text(json.dumps(summary | {"schema_version": 99}))
    before = _listing(run)
    line = _one_error_line(forked_cli("attention", run))
    assert "schema_version 99 is newer" in line
    assert _listing(run) == before


def test_a_newer_causal_result_is_refused_not_replaced(finished, tmp_path):
    """Item 19: an interventions/*/result.json of a newer interp under the same key is refused, kept as it is."""
    from interp.causal.design import TestDesign
    from interp.causal.intervene import intervene_run
    from interp.hooks import AttentionIntervention

    root, _ = finished
    run = tmp_path / "run"
    shutil.copytree(root / "run", run)
    spec = AttentionIntervention(target="self", alpha=0.0, name="mask")
    design = TestDesign(control_judges=())
    result = intervene_run(run, spec, design=design)
    (path,) = (run / "interventions").glob("*/result.json")
    path.write_text(json.dumps(json.loads(path.read_text()) | {"schema_version": 99}))
    text = path.read_text()
    with pytest.raises(InterpError, match="schema_version 99 is newer"):
        intervene_run(run, spec, design=design)
    assert path.read_text() == text
    path.write_text("{ torn")  # a damaged one is made again
    assert intervene_run(run, spec, design=design).judges.keys() == result.judges.keys()


def test_an_op_without_a_site_is_refused(finished, forked_cli):
    """Item 20: --op zero without --site head_output would silently run the attention mask."""
    root, _ = finished
    before = _listing(root / "run")
    line = _one_error_line(forked_cli("intervene", root / "run", "--all-layers", "--op", "zero"))
    assert "--site head_output" in line
    assert _listing(root / "run") == before
    from interp.causal.design import design_from_options

    design = design_from_options(spec_given=False, all_layers=True, top_heads=None, site="head_output", op=None)
    assert design.op == "mean"  # the default op of head_output is kept


def test_an_organism_recipe_with_one_author_twice_is_refused(tiny_llama_dir):
    """Item 21."""
    from interp.config import validate_config
    from interp.organisms.config import OrganismConfig

    recipe = {"name": "twice", "base_model": "smollm2-135m-instruct"}
    with pytest.raises(InterpError, match="names 'smollm2-135m-instruct' twice"):
        validate_config(OrganismConfig, recipe | {"data": {"authors": ["smollm2-135m-instruct"] * 2}}, "organism.toml")
    spellings = [str(tiny_llama_dir), f"{tiny_llama_dir}/"]
    with pytest.raises(InterpError, match="are one model"):
        validate_config(OrganismConfig, recipe | {"base_model": spellings[0], "data": {"authors": spellings}}, "o.toml")


def test_a_model_on_the_meta_device_or_converted_after_wrapping_is_refused(tiny_llama_dir):
    """Item 13 and the unsure dtype case: no verdict of P(A) 0.5 from weights that hold nothing, no placement
    that says float32 for bfloat16 weights."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    from interp.core.backends import make_backend
    from interp.core.judge import judge_batch, label_tokens
    from interp.core.spans import build_judge_prompt

    for move, message in (
        (lambda m: m.to("meta"), "on the meta device"),
        (lambda m: m.to(torch.bfloat16), "wrapped in float32 and now holds bfloat16"),
    ):
        hf = LlamaForCausalLM.from_pretrained(tiny_llama_dir)
        tokenizer = AutoTokenizer.from_pretrained(tiny_llama_dir)
        model = interp.wrap_model(hf, tokenizer, name="mine")
        prompt = build_judge_prompt(model, "helpfulness", "What is 2 + 2?", "4", "5")
        backend = make_backend(model, "hf")
        assert judge_batch(backend, [prompt], label_tokens(tokenizer))  # judges as wrapped
        move(hf)
        with pytest.raises(InterpError, match=message):
            judge_batch(backend, [prompt], label_tokens(tokenizer))


def test_an_import_with_two_lines_for_one_item_is_refused(tmp_path, tiny_llama_dir):
    """Item 15: the last line would win silently."""
    config = small_run_config(tmp_path, str(tiny_llama_dir))
    other = tmp_path / "other.jsonl"
    first = other.read_text().splitlines()[0]
    other.write_text(other.read_text() + first.replace("Lyon", "Marseille") + "\n")
    with pytest.raises(InterpError, match="two lines answer item 'capital'"):
        run_dbg(RunConfig(**config), tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_a_resume_after_the_items_or_imports_changed_is_refused(tmp_path, tiny_llama_dir):
    """Item 15: items edited or imported answers changed since the run started: one line, nothing written."""
    for name, message in (
        ("other.jsonl", "the answers of writer-y changed"),
        ("items.jsonl", "the items of .* changed"),
    ):
        folder = tmp_path / name.split(".")[0]
        folder.mkdir()
        config = RunConfig(**small_run_config(folder, str(tiny_llama_dir)))
        run_dbg(config, folder / "run", progress=False)
        path = folder / name
        path.write_text(path.read_text().replace("Lyon", "Nice").replace("Paris.", "Paris!"))
        before = _listing(folder / "run")
        with pytest.raises(InterpError, match=message):
            run_dbg(config, folder / "run", progress=False)
        assert _listing(folder / "run") == before


@pytest.mark.parametrize("cast", [torch.int64, torch.float64, torch.bfloat16])
def test_a_hook_returning_another_dtype_is_refused(tiny_llama_dir, cast):
    """Unsure case decided: an int64 return truncates the activation, a float64 one runs the rest of the pass in
    another precision than the run records; neither is cast silently."""
    judge = interp.Judge.load(str(tiny_llama_dir), device="cpu")
    point = "blocks.0.hook_resid_post"
    with judge.hooks({point: lambda h: h.to(cast)}):
        with pytest.raises(InterpError, match=f"returned a {str(cast)[6:]} tensor for a float32 activation"):
            judge("What is 2 + 2?", "4", "5")
    with judge.hooks({point: lambda h: h.to(cast).to(h.dtype)}):  # cast back: allowed
        assert 0 <= judge("What is 2 + 2?", "4", "5").p_a <= 1


def test_dbg_refuses_an_out_inside_another_run(finished, forked_cli):
    """Unsure case decided: `--out runA/sub` would mix a run into another's files."""
    root, _ = finished
    before = _listing(root / "run")
    line = _one_error_line(forked_cli("dbg", root / "run.toml", "--out", root / "run" / "sub", "--no-report"))
    assert "lies inside the run" in line
    assert _listing(root / "run") == before


def test_a_run_missing_the_identity_it_was_written_with_is_refused(finished, tmp_path):
    """Unsure case decided: without identity.json an edited config.toml would pass for the one run."""
    from interp.run.store import RunDir

    root, _ = finished
    run = tmp_path / "run"
    shutil.copytree(root / "run", run)
    assert RunDir(run).read_config() is not None
    (run / "identity.json").unlink()
    with pytest.raises(InterpError, match="identity.json is missing"):
        RunDir(run).read_config()


def test_compare_refuses_a_summary_without_an_authors_dbg(finished, tmp_path):
    """Unsure case decided: `compare` printed dbg_hard null from a damaged summary."""
    from interp.analysis.compare import compare_runs

    root, config = finished
    run = tmp_path / "run"
    shutil.copytree(root / "run", run)
    assert compare_runs([run]).rows[0].dbg_hard is not None
    summary = json.loads((run / "summary.json").read_text())
    summary["judges"][config.judge_specs[0]]["dbg_hard"] = None
    (run / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(InterpError, match="has no DBG for"):
        compare_runs([run])


# ---- the hostile re-probe of the refusals (variants the fifth probe did not try) --------------------------------


def test_variants_of_the_refusals(tmp_path, forked_cli):
    from interp.causal.design import design_from_options
    from interp.run.imported import imported_responses

    with pytest.raises(InterpError, match="--site head_output"):  # an op beside a spec is as lost
        design_from_options(spec_given=True, all_layers=False, top_heads=None, op="zero")
    assert "is a directory" in _one_error_line(forked_cli("metrics", "pls", tmp_path))
    other = tmp_path / "responses.jsonl"  # another run's responses: one line per (model, item) is no duplicate
    other.write_text(
        "".join(json.dumps({"item_id": "x", "model": m, "text": f"answer of {m}"}) + "\n" for m in ("m1", "m2"))
    )
    (item,) = [interp.Item(id="x", task="helpfulness", query="q?")]
    assert imported_responses(other, [item], "m2", max_words=50)[0].text == "answer of m2"
    other.write_text(other.read_text() + json.dumps({"item_id": "x", "model": "m2", "text": "again"}) + "\n")
    with pytest.raises(InterpError, match="two lines answer item 'x' for m2"):
        imported_responses(other, [item], "m2", max_words=50)
