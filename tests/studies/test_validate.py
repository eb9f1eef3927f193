"""`interp validate` on the shipped organisms: the notebook runs on a small slice, and what it writes holds up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interp.analysis.attention_stats import heads_table, top_heads
from interp.results import codec
from interp.results.studies import ValidationResult
from interp.studies.validate import NULL, PLANTED, layer_bands, organism_splits, strongest, truth_rows

REPO = Path(__file__).resolve().parents[2]


def test_layer_bands_cover_every_layer_once():
    bands = layer_bands(30, 7)
    assert [layer for band in bands for layer in band] == list(range(30))
    assert bands[-1] == (28, 29)


def test_heads_table_and_strongest():
    assert heads_table([(3, 1, 0.5), (3, 4, 0.4), (7, 0, 0.1)]) == {3: [1, 4], 7: [0]}
    effects = {
        "a": {"mean": -0.1, "ci": [-0.2, -0.01]},
        "b": {"mean": -0.3, "ci": [-0.5, 0.1]},
        "c": {"mean": -0.05, "ci": [-0.08, -0.02]},
    }
    assert strongest(effects)[0] == "a"  # b lowers P(own) more but its interval contains 0
    assert strongest({"b": effects["b"]}) is None


def test_splits_are_disjoint_and_from_the_manifest():
    splits = organism_splits(PLANTED)
    ids = {name: {item.id for item in items} for name, items in splits.items()}
    assert (
        not (ids["train"] & ids["selection"])
        and not (ids["train"] & ids["test"])
        and not (ids["selection"] & ids["test"])
    )
    assert {name: {i.id for i in items} for name, items in organism_splits(NULL).items()} == ids  # one split for both


def _metrics(pc, agree, dbg, ci, legit):
    return {
        "position_consistency": pc,
        "agreement_with_gold": {"value": agree},
        "dbg_hard": dbg,
        "dbg_hard_ci": ci,
        "agreement_legitimate": {"value": legit, "n": 5},
    }


def _organism(metrics, effect_ci, after_ci, causal):
    return {
        "metrics": metrics,
        "unreliable_because": [],
        "positive_control": {
            "effect": {"mean": sum(effect_ci) / 2, "ci": effect_ci},
            "after": {"dbg_hard": 0.0, "dbg_ci": after_ci},
        },
        "causal_test": {"verdict": "v", "causal": causal},
    }


def _validation(data: dict) -> ValidationResult:
    return codec.parse(ValidationResult, data, "a validation")


def test_truth_table_marks_a_working_and_a_broken_organism_pair():
    good = {
        "organisms": {
            NULL: _organism(_metrics(0.8, 0.7, 0.02, [-0.1, 0.12], 0.8), [-0.05, 0.05], [-0.1, 0.1], False),
            PLANTED: _organism(_metrics(0.7, 0.6, 0.3, [0.15, 0.45], 0.78), [-0.3, -0.1], [-0.08, 0.1], True),
        }
    }
    assert [r.agrees for r in truth_rows(_validation(good))] == [True, True, True, True, True, True, True, True]
    bad = json.loads(json.dumps(good))
    bad["organisms"][NULL]["metrics"]["position_consistency"] = 0.1  # cannot judge
    bad["organisms"][PLANTED]["metrics"]["dbg_hard_ci"] = [-0.05, 0.4]  # interval contains 0
    bad["organisms"][PLANTED]["positive_control"]["after"]["dbg_ci"] = [0.1, 0.3]  # DBG did not fall to 0
    bad["organisms"][NULL]["causal_test"]["causal"] = True  # an effect where none was planted
    bad["organisms"][PLANTED]["causal_test"]["causal"] = False  # the planted effect missed
    agrees = [r.agrees for r in truth_rows(_validation(bad))]
    assert (
        agrees[0] is False and agrees[2] is False and agrees[5] is False and agrees[6] is False and agrees[7] is False
    )
    # once the null organism is flagged as too weak, its rows other than "can judge" are no checks
    bad["organisms"][NULL]["unreliable_because"] = ["position consistency 10% < 50%"]
    weak_rows = truth_rows(_validation(bad))
    assert weak_rows[0].agrees is False  # "can judge" stays a check
    assert [weak_rows[i].agrees for i in (1, 4, 6)] == [None, None, None]
    assert all("judge too weak" in weak_rows[i].toolkit for i in (1, 4, 6))


@pytest.mark.slow
def test_validation_notebook_on_a_small_slice(tmp_path, monkeypatch):
    import nbclient
    import nbformat

    path = REPO / "notebooks" / "validate_organisms.ipynb"
    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), (
        "commit the notebook with outputs cleared"
    )
    monkeypatch.setenv("INTERP_VALIDATION_SMALL", "1")
    monkeypatch.setenv("INTERP_VALIDATION_OUT", str(tmp_path / "validation"))
    client = nbclient.NotebookClient(
        notebook, kernel_name="python3", timeout=1200, resources={"metadata": {"path": str(REPO / "notebooks")}}
    )
    client.execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 2

    result = json.loads((tmp_path / "validation" / "validation.json").read_text())
    selection, test = result["splits"]["selection"], result["splits"]["test"]
    assert len(selection) == 2 and len(test) == 3 and not set(selection) & set(test)
    run_dir = Path(result["run_dir"])
    for name in (NULL, PLANTED):
        record = result["organisms"][name]
        assert record["metrics"]["n_items"] == 3  # measured on the test split only
        # the causal test's heads are the top heads of the selection split, not of the items it is tested on
        assert record["top_heads_selection"] == [list(h) for h in top_heads(run_dir, name, 2, items=selection)]
        # positive control: with both responses masked at every layer, both orders read the same tokens at the
        # same positions, so P(own) is 0.5 on every item (up to float noise)
        assert abs(record["positive_control"]["after"]["mean_p_own"] - 0.5) < 1e-3
    planted = result["organisms"][PLANTED]
    assert set(planted["sweep"]["effects"]) == {"self-L0-14", "self-L15-29", "other-L0-14", "other-L15-29"}
    assert set(planted["steering"]["effects"]) == {
        "self-mask",
        "other-emphasis",
        "direction-removal",
        "direction-reversal",
    }
    assert len(result["truth_table"]) == 11  # 9 checks + the two organisms' top-heads localization rows
    # the test of record ran on both organisms against the shipped null family (the null one leave-one-out)
    family = [f"smollm2-135m-judge-seed{seed}" for seed in range(1, 6)]
    assert result["organisms"][NULL]["causal_test"]["test"]["controls"] == family
    assert result["organisms"][PLANTED]["causal_test"]["test"]["controls"] == [NULL, *family]
    assert result["organisms"][NULL]["causal_test"]["causal"] is not None  # k >= 3: a between-judge verdict
    # the paired gap is over the same legitimate pairs as each organism's own agreement, so it is their difference
    gap, legit = (
        result["legitimate_gap"],
        {name: result["organisms"][name]["metrics"]["agreement_legitimate"] for name in (NULL, PLANTED)},
    )
    assert gap["n"] == legit[NULL]["n"] == legit[PLANTED]["n"]
    if gap["n"]:
        assert abs(gap["value"] - (legit[PLANTED]["value"] - legit[NULL]["value"])) < 1e-12
        assert gap["ci"][0] <= gap["value"] <= gap["ci"][1]
    report = (run_dir / "report.html").read_text()
    assert "Validation on organisms with a known answer" in report and "known truth" in report
