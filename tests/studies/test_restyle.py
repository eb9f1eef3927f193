"""Style rewriting (DBG paper, Section 4.2 and Appendix A.3): `interp restyle` on a tiny run of random models,
the plain normaliser as rewriter; refusals; `interp compare` of the source and derived runs; the llama.cpp
server as a `humorous` rewriter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import interp
from interp.errors import InterpError
from interp.results import codec
from interp.run.plain_style import plain_style
from interp.run.store import RunDir
from interp.studies.restyle import RestyleOptions, restyle_run
from tests.helpers.models import save_tiny, tiny_llama_config

ITEMS = [  # id, query, reference, the other writer's answer (markup the plain style removes)
    (
        "capital",
        "What is the capital of France?",
        "The capital of France is Paris.",
        "## Answer\n\n**Paris** is the capital!!!",
    ),
    (
        "boil",
        "At what temperature does water boil?",
        "Water boils at 100 degrees Celsius.",
        "- about 90 degrees\n- at SEA LEVEL",
    ),
    (
        "legs",
        "How many legs does a spider have?",
        "A spider has eight legs.",
        "A spider has *six* legs \u2014 I think.",
    ),
    (
        "sky",
        "Why is the sky blue?",
        "Air scatters blue light more than red light.",
        "1. Sunlight scatters.\n2. Blue scatters most.",
    ),
]


@pytest.fixture(scope="module")
def source_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer):
    """A finished run: the tiny Llama answers and judges; three other tiny Llamas (other seeds) judge as its
    control judges; `writer-y`'s answers are imported."""
    from transformers import LlamaForCausalLM

    folder = tmp_path_factory.mktemp("restyle")
    controls = [
        str(
            save_tiny(
                folder / f"control-{seed}",
                tiny_llama_config(smollm2_tokenizer),
                LlamaForCausalLM,
                smollm2_tokenizer,
                seed=seed,
            )
        )
        for seed in (11, 12, 13)
    ]
    (folder / "items.jsonl").write_text(
        "".join(json.dumps({"id": i, "task": "helpfulness", "query": q, "reference": r}) + "\n" for i, q, r, _ in ITEMS)
    )
    (folder / "other.jsonl").write_text("".join(json.dumps({"item_id": i, "text": b}) + "\n" for i, _, _, b in ITEMS))
    judge = str(tiny_llama_dir)
    config = dict(
        n=len(ITEMS),
        data=str(folder / "items.jsonl"),
        models=(judge, "writer-y"),
        judges=[judge, *controls],
        n_boot=20,
        device="cpu",
        max_new_tokens=8,
        max_words=30,
        empty_answers="judge",
        imports={"writer-y": str(folder / "other.jsonl")},
    )
    run = interp.dbg(config, folder / "source", progress=False).path
    return {"run": run, "judge": judge, "controls": controls, "folder": folder}


@pytest.fixture(scope="module")
def restyled(source_run, tiny_llama_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("restyled") / "plain"
    result = interp.restyle(source_run["run"], out=out, embedder=str(tiny_llama_dir), progress=False)
    return result, out


def test_restyle_plain_makes_a_derived_run_with_the_judge_level_test(source_run, restyled):
    result, out = restyled
    judge, controls = source_run["judge"], source_run["controls"]
    written = json.loads((out / "restyle.json").read_text())
    assert written["judges"].keys() == result.judges.keys() == {judge}  # the one judge that is an author
    assert result == codec.read_restyle(out)  # what it returns is what it wrote
    record = written["judges"][judge]
    before = json.loads((source_run["run"] / "summary.json").read_text())["judges"][judge]
    after = json.loads((out / "summary.json").read_text())["judges"][judge]
    assert record["dbg_before"] == before["dbg_hard"] and record["dbg_after"] == after["dbg_hard"]
    # the judge-level test's fields, as an intervention's result.json has them
    for key in (
        "share_removed",
        "share_removed_reason",
        "causal",
        "p_value",
        "test",
        "within_judge",
        "gap_before",
        "gap_after",
        "verdict",
    ):
        assert key in record, key
    assert (
        record["test"]["design"] == "between-judge"
        and record["test"]["n_controls"] == 3
        and record["test"]["controls"] == controls
    )
    assert record["causal"] in (True, False) and 0 <= record["p_value"] <= 1
    assert (record["share_removed"] is None) == (record["share_removed_reason"] is not None)
    sim = record["similarity"]
    assert (
        {"mean", "min", "n_flagged"} <= set(sim) and sim["min"] <= sim["mean"] <= 1.0 + 1e-6 and sim["n"] == len(ITEMS)
    )
    # the derived run judged the rewrites: writer-y's answers are its originals in the plain style
    responses = RunDir(out).read_responses()
    originals = RunDir(source_run["run"]).read_responses()
    assert responses["writer-y"] == {i: plain_style(text) for i, text in originals["writer-y"].items()}
    assert responses["writer-y"]["capital"] == "Answer.\n\nParis is the capital."
    assert RunDir(out).read_config().name.startswith("dbg-restyle-") and len(
        RunDir(out).read_judgments(judge)
    ) == 2 * len(ITEMS)
    rows = [json.loads(line) for line in (out / "restyle" / "rewrites.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * len(ITEMS) and {"original", "rewrite", "cosine", "flagged"} <= set(rows[0])
    assert written["restyle"] == {
        "style": "plain",
        "kind": "normaliser",
        "rewriter": "plain-normaliser",
        "prompt_version": 1,
    }


def test_restyle_writes_the_similarity_figure_and_the_report_section(restyled):
    result, out = restyled
    figure = out / "figures" / "restyle_embedding.png"
    assert figure.stat().st_size > 1000 and result.projection == "PCA"  # 16 texts: below t-SNE's 30
    assert (out / "figures" / "restyle_figure7.png").stat().st_size > 1000  # both runs stored attention
    html = (out / "report.html").read_text()
    assert (
        "Style rewriting: DBG before and after" in html and "share of the gap removed" in html and "mean cosine" in html
    )
    assert html.count("data:image/png;base64") >= 3  # the similarity map and Figure 7 before/after, beside DBG's own


def test_restyle_again_rewrites_and_judges_nothing(source_run, restyled, tiny_llama_dir, monkeypatch):
    result, out = restyled
    from interp.run import judging, rewriting

    judged, rewritten = [], []
    monkeypatch.setattr(judging, "judge_batch", lambda *a, **k: judged.append(a) or pytest.fail("judged again"))
    monkeypatch.setattr(rewriting, "plain_style", lambda text: rewritten.append(text) or plain_style(text))
    judgments = (out / "judgments.jsonl").read_bytes()
    again = restyle_run(source_run["run"], out, RestyleOptions(embedder=str(tiny_llama_dir)), progress=False)
    assert judged == [] and (out / "judgments.jsonl").read_bytes() == judgments
    assert len(rewritten) == 2 * len(
        ITEMS
    )  # plain rewrites are recomputed (deterministic); an LLM's come from the cache
    assert again.to_json()["judges"] == json.loads((out / "restyle.json").read_text())["judges"]
    assert again.key == result.key


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(style="humorous", rewriter="writer-y"), "is an author of this run"),
        (dict(style="humorous", rewriter="{judge}"), "is an author of this run"),
        (dict(style="humorous", rewriter="{control}"), "is a judge under test of this run"),
        (dict(style="humorous"), "is prompted: give --rewriter"),
        (dict(style="plain", rewriter="someone"), "takes no --rewriter"),
        (dict(style="shouty"), "unknown style"),
        (dict(threshold=1.5), "--threshold"),
    ],
)
def test_bad_restyles_are_refused_before_anything_is_written(source_run, tmp_path, options, message):
    options = {
        k: v.format(judge=source_run["judge"], control=source_run["controls"][0]) if isinstance(v, str) else v
        for k, v in options.items()
    }
    out = tmp_path / "never"
    with pytest.raises(InterpError, match=message):
        interp.restyle(source_run["run"], out=out, progress=False, **options)
    assert not out.exists()


def test_restyle_cli_refuses_in_one_line_and_compare_shows_both_runs(source_run, restyled, tmp_path, forked_cli):
    _, out = restyled
    refused = forked_cli(
        "restyle", source_run["run"], "--style", "humorous", "--rewriter", source_run["judge"], "--out", tmp_path / "x"
    )
    assert (
        refused.returncode == 2
        and refused.stderr.startswith("error:")
        and len(refused.stderr.strip().splitlines()) == 1
    )
    assert not (tmp_path / "x").exists()
    same = forked_cli("restyle", source_run["run"], "--out", source_run["run"])
    assert same.returncode == 2 and "is the source run" in same.stderr
    shown = forked_cli("compare", source_run["run"], out, "--json")
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)
    judge = source_run["judge"]
    by_run = {(r["run"], r["judge"]): r["dbg_hard"] for r in rows}
    assert (
        by_run[(str(source_run["run"]), judge)]
        == json.loads((source_run["run"] / "summary.json").read_text())["judges"][judge]["dbg_hard"]
    )
    assert by_run[(str(out), judge)] == json.loads((out / "restyle.json").read_text())["judges"][judge]["dbg_after"]
    table = forked_cli("compare", source_run["run"], out)
    assert table.returncode == 0 and "name" in table.stdout and Path(out).name in table.stdout


@pytest.mark.slow
def test_a_humorous_restyle_with_the_llama_cpp_server_as_rewriter(source_run, tiny_llama_dir, tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp.server")
    from tests.helpers.servers import llama_server

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    with llama_server(tmp_path) as url:
        result = interp.restyle(
            source_run["run"],
            out=tmp_path / "humorous",
            style="humorous",
            rewriter="smollm2",
            rewriter_url=url,
            embedder=str(tiny_llama_dir),
            progress=False,
        )
    assert (
        result.restyle.kind == "server" and result.restyle.style == "humorous" and "humorous" in result.restyle.prompt
    )
    record = result.judges[source_run["judge"]]
    assert {"dbg_before", "dbg_after", "share_removed", "causal", "test", "similarity"} <= record.model_fields_set
    rewrites = [
        json.loads(line) for line in (tmp_path / "humorous" / "restyle" / "rewrites.jsonl").read_text().splitlines()
    ]
    assert (
        all(r["rewrite"].strip() for r in rewrites)
        and sum(r["rewrite"] != r["original"] for r in rewrites) >= len(rewrites) // 2
    )
    assert (tmp_path / "humorous" / "figures" / "restyle_embedding.png").is_file()


def test_a_local_model_rewrites_with_the_prompt_and_its_rewrites_are_cached(
    source_run, tiny_gemma3_dir, tiny_llama_dir, tmp_path, monkeypatch
):
    """A local rewriter (any folder the project loads; here a tiny random Gemma-3): every rewrite is its answer
    to the stated prompt, cached under its weights, so a second restyle generates nothing."""
    from interp.run import responses

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    prompts: list[str] = []
    real = responses.generation_prompt
    monkeypatch.setattr(responses, "generation_prompt", lambda *a, **k: prompts.append(a[2]) or real(*a, **k))
    out = tmp_path / "formal"
    result = interp.restyle(
        source_run["run"],
        out=out,
        style="formal",
        rewriter=str(tiny_gemma3_dir),
        embedder=str(tiny_llama_dir),
        progress=False,
    )
    assert result.restyle.kind == "local" and len(result.restyle.fingerprint) > 8
    assert len(set(prompts)) == 2 * len(ITEMS) and all(
        p.startswith("Rewrite the response below in a formal style") for p in prompts
    )
    assert any("**Paris** is the capital!!!" in p for p in prompts)  # the original answer is in the prompt, as written
    assert len(list((tmp_path / "cache" / "responses").glob("*.json"))) == 2 * len(ITEMS)
    rewrites = {
        (r["author"], r["item_id"]): r["rewrite"]
        for r in map(json.loads, (out / "restyle" / "rewrites.jsonl").read_text().splitlines())
    }
    assert RunDir(out).read_responses()["writer-y"] == {i: rewrites[("writer-y", i)] for i, *_ in ITEMS}
    generated = []
    monkeypatch.setattr(responses, "check_generation_lengths", lambda model, items, *a, **k: generated.extend(items))
    again = interp.restyle(
        source_run["run"],
        out=out,
        style="formal",
        rewriter=str(tiny_gemma3_dir),
        embedder=str(tiny_llama_dir),
        progress=False,
    )
    assert generated == [] and again.key == result.key  # every rewrite came from the cache
