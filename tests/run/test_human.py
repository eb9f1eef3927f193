"""Gold against human labels (DBG paper, Table 1): labels read in both formats, agreement per gold judge and for
the ensemble in summary.json, the terminal table and report.html."""

from __future__ import annotations

import json

import pytest

from interp.config import RunConfig
from interp.data import Item
from interp.errors import InterpError
from interp.metrics.human import human_agreement
from interp.report.build import build_report
from interp.report.terminal import print_results, results_payload
from interp.run.gold.human import human_labels
from interp.run.pipeline import run_dbg
from interp.run.store import RunDir

ITEMS = [Item(str(k), "helpfulness", f"Question {k}?", f"Reference {k}.") for k in (81, 82, 83, 84)]
MODELS = ("writer-x", "writer-y")


def test_agreement_counts_equal_verdicts_ties_included():
    result = human_agreement([1.0, 0.0, 0.5, 1.0], [1.0, 1.0, 0.5, 0.5], n_boot=20)
    assert result["n"] == 4 and result["agreement"] == 0.5  # agree on items 1 and 3 (a tie on both sides)
    assert (
        result["gold_win_rate_first"] == 0.625
        and result["human_win_rate_first"] == 0.75
        and result["human_tie_share"] == 0.5
    )
    low, high = result["agreement_ci"]
    assert 0.0 <= low <= 0.5 <= high <= 1.0


def test_labels_in_both_formats_and_annotators_averaged(tmp_path):
    simple = tmp_path / "simple.jsonl"
    simple.write_text(
        "".join(
            json.dumps(r) + "\n" for r in [{"item_id": "81", "winner": "writer-y"}, {"item_id": "82", "winner": "tie"}]
        )
    )
    assert human_labels(simple, ITEMS, MODELS) == {"81": 0.0, "82": 0.5}
    mt_bench = tmp_path / "mt_bench_human.jsonl"
    rows = [
        {
            "question_id": 81,
            "model_a": "writer-y",
            "model_b": "writer-x",
            "winner": "model_b",
            "judge": "expert_0",
            "turn": 1,
        },
        {
            "question_id": 81,
            "model_a": "writer-x",
            "model_b": "writer-y",
            "winner": "model_b",
            "judge": "expert_1",
            "turn": 1,
        },
        {
            "question_id": 81,
            "model_a": "writer-x",
            "model_b": "writer-y",
            "winner": "model_a",
            "judge": "expert_2",
            "turn": 2,
        },  # turn 2
        {
            "question_id": 82,
            "model_a": "writer-x",
            "model_b": "other",
            "winner": "model_a",
            "judge": "expert_0",
            "turn": 1,
        },  # another pair
        {
            "question_id": 83,
            "model_a": "writer-x",
            "model_b": "writer-y",
            "winner": "tie (bothbad)",
            "judge": "expert_0",
            "turn": 1,
        },
    ]
    mt_bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert human_labels(mt_bench, ITEMS, MODELS) == {"81": 0.5, "83": 0.5}  # 81: one vote each way
    with pytest.raises(InterpError, match="no human label for any of the run's 4 items"):
        human_labels(mt_bench, ITEMS, ("a", "b"))
    simple.write_text(json.dumps({"item_id": "81", "winner": "A"}) + "\n")
    with pytest.raises(InterpError, match='simple.jsonl:1: "winner" must be'):
        human_labels(simple, ITEMS, MODELS)


def test_a_run_with_human_labels_reports_gold_against_them(tmp_path, tiny_llama_dir):
    judge = str(tiny_llama_dir)
    (tmp_path / "items.jsonl").write_text(
        "".join(
            json.dumps({"id": i.id, "task": i.task, "query": i.query, "reference": i.reference}) + "\n" for i in ITEMS
        )
    )
    (tmp_path / "y.jsonl").write_text(
        "".join(json.dumps({"item_id": i.id, "text": f"Reference {i.id}."}) + "\n" for i in ITEMS)
    )  # y: the reference
    labels = {"81": "writer-y", "82": judge, "83": "tie"}  # people: y, x, tie; item 84 unlabelled
    (tmp_path / "human.jsonl").write_text(
        "".join(json.dumps({"item_id": k, "winner": v}) + "\n" for k, v in labels.items())
    )
    config = RunConfig(
        n=len(ITEMS),
        data=str(tmp_path / "items.jsonl"),
        models=(judge, "writer-y"),
        judges=[judge],
        n_boot=20,
        device="cpu",
        max_new_tokens=4,
        imports={"writer-y": str(tmp_path / "y.jsonl")},
        empty_answers="judge",
        attention="none",
        gold={"human": str(tmp_path / "human.jsonl")},
    )
    out = tmp_path / "run"
    summary = run_dbg(config, out, progress=False)
    human = summary.gold.human
    assert human.n_items == 3 and set(human.judges) == {"reference"} and human.ensemble.n == 3
    gold = RunDir(out).read_gold()["reference"]  # P(first = the tiny model wins); the reference answer is y's
    expected = (
        sum((gold[k] > 0.5) - (gold[k] < 0.5) == {"writer-y": -1, judge: 1, "tie": 0}[v] for k, v in labels.items()) / 3
    )
    assert human.ensemble.agreement == pytest.approx(expected)
    assert human.ensemble.human_win_rate_first == pytest.approx(0.5)
    from rich.console import Console

    console = Console(record=True, width=200)
    print_results(results_payload(summary), console)
    shown = console.export_text()
    assert "Gold against human labels" in shown and "ensemble" in shown
    assert "Gold against human labels (Table 1)" in build_report(out).read_text()
    config_bad = config.model_copy(
        update={"gold": config.gold.model_copy(update={"human": str(tmp_path / "none.jsonl")})}
    )
    with pytest.raises(InterpError, match="no such file of human labels"):
        run_dbg(config_bad, tmp_path / "run2", progress=False)
    assert not (tmp_path / "run2").exists()
