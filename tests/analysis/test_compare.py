"""Runs side by side (DBG Figures 3-4): `interp.compare` and `interp compare` over two tiny runs that differ in
one config key, one with stored attention (Figure 7 across runs) and one without."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import interp
from interp.analysis.compare import size_from_name
from interp.errors import InterpError
from interp.report.figures import Figure

ITEMS = [  # id, query, reference, the other writer's answer
    ("capital", "What is the capital of France?", "The capital of France is Paris.", "I think it is Lyon."),
    ("boil", "At what temperature does water boil?", "Water boils at 100 degrees Celsius.", "About 90 degrees."),
    ("legs", "How many legs does a spider have?", "A spider has eight legs.", "A spider has six legs."),
]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, tiny_llama_dir) -> tuple[Path, Path, str]:
    folder = tmp_path_factory.mktemp("compare")
    judge = str(tiny_llama_dir)
    (folder / "items.jsonl").write_text(
        "".join(json.dumps({"id": i, "task": "helpfulness", "query": q, "reference": r}) + "\n" for i, q, r, _ in ITEMS)
    )
    (folder / "other.jsonl").write_text("".join(json.dumps({"item_id": i, "text": b}) + "\n" for i, _, _, b in ITEMS))
    runs = []
    for words, attention in ((20, "final"), (8, "none")):
        config = dict(
            n=len(ITEMS),
            data=str(folder / "items.jsonl"),
            models=(judge, "writer-y"),
            judges=[judge],
            n_boot=20,
            device="cpu",
            max_new_tokens=8,
            max_words=words,
            attention=attention,
            empty_answers="judge",
            imports={"writer-y": str(folder / "other.jsonl")},
        )
        runs.append(interp.dbg(config, folder / f"run-{words}", progress=False).path)
    return runs[0], runs[1], judge


def test_compare_gives_dbg_per_judge_with_the_keys_that_differ(two_runs, tiny_llama):
    first, second, judge = two_runs
    table = interp.compare([first, interp.load_run(second)])
    assert isinstance(table, interp.RunComparison) and [r.run for r in table.rows] == [str(first), str(second)]
    assert "max_words" in table.differing and "attention" in table.differing and "judges" not in table.differing
    assert [r.config["max_words"] for r in table.rows] == [20, 8]
    for row, run in zip(table.rows, (first, second), strict=False):
        scores = json.loads((run / "summary.json").read_text())["judges"][judge]
        assert row.judge == judge and row.dbg_hard == scores["dbg_hard"] and list(row.dbg_ci) == scores["dbg_ci"]
        assert row.tie_share == scores["tie_share"] and row.own_model == judge
        # the size the run recorded: the tiny model's parameter count, not a guess from its name
        assert row.size_source == "recorded" and row.n_parameters == tiny_llama.n_parameters
    frame = table.frame()
    assert list(frame["max_words"]) == [20, 8] and list(frame["dbg_hard"]) == [r.dbg_hard for r in table.rows]
    assert isinstance(interp.compare_figure(table, by="max_words"), Figure)
    assert isinstance(interp.compare_figure([first, second]), Figure)
    with pytest.raises(InterpError, match="not a key that differs"):
        interp.compare_figure(table, by="seed")
    with pytest.raises(InterpError, match="at least one run"):
        interp.compare([])
    with pytest.raises(InterpError, match="not a finished run"):
        interp.compare([first, first.parent / "nowhere"])


def test_figure7_across_runs_draws_the_runs_with_attention(two_runs):
    from interp.analysis.compare import own_minus_other_profiles

    first, second, judge = two_runs
    profiles, without = own_minus_other_profiles([first, second])
    assert [(p.run, p.judge) for p in profiles] == [(str(first), judge)] and without == [str(second)]
    assert (
        profiles[0].depth[0] == 0.0
        and profiles[0].depth[-1] == 1.0
        and len(profiles[0].own_minus_other) == len(profiles[0].depth)
    )
    fig = interp.figure7_across_runs([first, second])
    assert isinstance(fig, Figure) and len(fig.axes[0].lines) >= 1


def test_compare_cli_prints_json_rows_a_table_and_writes_the_figures(two_runs, tmp_path, forked_cli):
    first, second, judge = two_runs
    shown = forked_cli("compare", first, second, "--json")
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)
    assert [(r["run"], r["judge"]) for r in rows] == [(str(first), judge), (str(second), judge)]
    for row, run in zip(rows, (first, second), strict=False):
        assert row["dbg_hard"] == json.loads((run / "summary.json").read_text())["judges"][judge]["dbg_hard"]
        assert {"dbg_soft", "dbg_ci", "dbg_soft_ci", "n_parameters", "tie_share", "config"} <= set(row)
    out = tmp_path / "cmp"
    table = forked_cli("compare", first, second, "--by", "max_words", "--out", out)
    assert table.returncode == 0, table.stderr
    assert "DBG per judge across runs" in table.stdout and "max_words" in table.stdout
    # the table names each run by its path below the folder the runs share, so a narrow pipe keeps the part
    # that tells them apart
    assert "runs under" in table.stdout
    assert first.name in table.stdout and second.name in table.stdout
    for name in ("compare.csv", "dbg_by_max_words.png", "dbg_by_max_words.pdf", "figure7_across_runs.png"):
        assert (out / name).stat().st_size > 0
    assert (out / "compare.csv").read_text().count("\n") == 3  # header + one row per (run, judge)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "Missing argument"),
        (("{tmp}",), "not a finished run"),
        (("{run}", "--by", "seed"), "not a key that differs"),
    ],
)
def test_compare_bad_input_is_one_error_line(two_runs, tmp_path, forked_cli, args, message):
    first, _, _ = two_runs
    result = forked_cli("compare", *[a.format(tmp=tmp_path, run=first) for a in args])
    assert result.returncode == 2 and result.stderr.startswith("error:") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_run_labels_cut_the_shared_folder_only():
    from interp.report.compare import run_labels

    assert run_labels(["/a/b/x/run", "/a/b/y"]) == ("/a/b", {"/a/b/x/run": "x/run", "/a/b/y": "y"})
    assert run_labels(["/a/run", "/a/run"]) == (None, {"/a/run": "/a/run"})  # one run: its path
    assert run_labels(["/a/run", "/a/run/sub"])[0] is None  # one run inside another: the paths
    assert run_labels(["/x/run", "/y/run"]) == (None, {"/x/run": "/x/run", "/y/run": "/y/run"})  # only / shared
    assert run_labels(["rel/a", "/abs/b"])[0] is None  # relative and absolute: no common folder


def test_judge_labels_name_folder_judges_below_their_shared_folder_and_keep_hub_ids():
    from interp.report.compare import judge_labels

    common, labels = judge_labels(["/o/org/attn-seed5", "/o/org/attn-seed6", "smollm2-135m-judge"])
    assert common == "/o/org"
    assert labels == {
        "/o/org/attn-seed5": "attn-seed5",
        "/o/org/attn-seed6": "attn-seed6",
        "smollm2-135m-judge": "smollm2-135m-judge",
    }
    assert judge_labels(["/o/org/attn-seed5", "HuggingFaceTB/SmolLM2-135M"]) == (
        "/o/org",
        {"/o/org/attn-seed5": "attn-seed5", "HuggingFaceTB/SmolLM2-135M": "HuggingFaceTB/SmolLM2-135M"},
    )  # a hub id is not a folder: as given, and one folder judge by its last part
    assert judge_labels(["HuggingFaceTB/SmolLM2-135M", "HuggingFaceTB/SmolLM2-360M"])[0] is None
    assert judge_labels(["/o/org/attn-seed5"]) == ("/o/org", {"/o/org/attn-seed5": "attn-seed5"})
    assert judge_labels(["a", "b"]) == (None, {"a": "a", "b": "b"})


def test_sizes_read_from_names():
    assert size_from_name("Qwen2.5-0.5B-Instruct") == 500_000_000 and size_from_name("Llama-3.1-8B") == 8_000_000_000
    assert size_from_name("smollm2-135m-judge") == 135_000_000 and size_from_name("gpt4") is None
