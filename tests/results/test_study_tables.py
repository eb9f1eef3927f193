"""The studies' nested tables read back as models (attribute access) and a file is written in its writer's key
order: what a writer gives is what lands on disk, and a file read and written again is the same bytes."""

from __future__ import annotations

import json

from interp.results import codec
from interp.results.studies import DirectionProbe, RestyleJudge, SteeringRow, TruthRow, ValidationOrganism

EFFECT = {"mean": -0.05, "ci": [-0.1, 0.0]}
ROW = {
    "judge": "j",
    "intervention": "self-mask",
    "description": "alpha 0 on the self span",
    "variant": {"attention": {"target": "self", "alpha": 0.0}, "steering": None},
    "dbg_hard": 0.25,
    "dbg_ci": [0.0, 0.5],
    "dbg_soft": 0.2,
    "mean_p_own": 0.6,
    "win_rate_own_hard": 0.75,
    "effect": EFFECT,
    "gold_agreement": 0.5,
    "gold_agreement_ci": [0.25, 0.75],
    "n_items": 4,
    "mirror": {"unjustified": 1, "unjustified_flipped": 0, "unjustified_flipped_share": 0.0, "reference": "r"},
}
TABLE = {
    "run_dir": "runs/r",
    "n_items": 4,
    "settings": {"layer": None, "position": "spans", "coefficient": -1, "emphasis_alpha": 4, "seed": 0},
    "probe": {
        "j": {
            "layer": 2,
            "position": "spans",
            "norm": 1.5,
            "accuracy": {"train": 1.0, "heldout": float("nan"), "train_paired": 1.0, "heldout_paired": 0.5},
            "n": {"train_items": 3, "heldout_items": 1, "train_examples": 12, "heldout_examples": 4},
            "train_ids": ["a", "b", "c"],
            "heldout_ids": ["d"],
            "mean_item_ids": ["a", "b", "c"],
            "path": None,
        }
    },
    "rows": [ROW],
    "reused": {"responses": 8, "responses_generated": 0, "gold_verdicts": 4, "gold_judges": ["g"]},
}
# a restyle judge's record as `judge_level_fields` orders it: the test's `alternative` before `control_effects`,
# Fieller's share with `bounded` last
JUDGE = {
    "own": "writer-x",
    "dbg_before": 0.25,
    "dbg_after": 0.0,
    "dbg_before_ci": [0.0, 0.5],
    "dbg_after_ci": [-0.25, 0.25],
    "causal": False,
    "p_value": 0.4,
    "test_alpha": 0.05,
    "reason": None,
    "test": {
        "design": "between-judge",
        "n_controls": 3,
        "x": -0.1,
        "df": 2,
        "p_value": 0.4,
        "alternative": "two-sided",
        "p_rank_controls": 0.5,
        "control_effects": [0.0, 0.1, -0.1],
        "p_rank": 0.5,
        "controls": ["c1", "c2", "c3"],
    },
    "p_holm": 0.4,
    "verdict": "not causal",
    "share_removed": {
        "estimate": 0.5,
        "low": None,
        "high": None,
        "level": 0.95,
        "kind": "whole line",
        "df": 2.0,
        "t": 4.3,
        "bounded": False,
    },
    "share_removed_reason": None,
    "similarity": {"n": 2, "mean": 0.9, "min": 0.8, "n_flagged": 0, "threshold": 0.5},
    "causal_unadjusted": False,
}
RESTYLE = {
    "source_run": "runs/r",
    "derived_run": "runs/r-plain",
    "key": "k",
    "restyle": {"style": "plain", "kind": "normaliser", "rewriter": "plain", "prompt_version": 1},
    "gold_judges": ["g"],
    "embedder": {"model": "e", "pooling": "mean"},
    "threshold": 0.5,
    "n_items": 2,
    "test": {"kind": "between-judge", "claim": "c", "controls": {"j": ["c1", "c2", "c3"]}, "alpha": 0.05},
    "similarity": {
        "per_author": {
            "writer-x": {
                "n": 2,
                "mean": 0.9,
                "min": 0.8,
                "n_flagged": 1,
                "flagged": ["a"],
                "threshold": 0.5,
                "unrelated_mean": 0.3,
            }
        }
    },
    "judges": {"j": JUDGE},
    "multiple_comparisons": "none (one judge)",
    "projection": "PCA",
    "figures": {"embedding": "figures/restyle_embedding.png"},
}


def _written_as_given(path, data) -> None:
    """The file holds the writer's data in its order, and reads back and dumps to the same bytes."""
    assert path.read_text() == json.dumps({"schema_version": codec.SCHEMA_VERSION, **data}, indent=2)


def test_a_steering_table_reads_back_as_models_and_is_written_as_given(tmp_path):
    path = tmp_path / "table.json"
    codec.write_steering_table(path, TABLE)
    _written_as_given(path, TABLE)
    table = codec.read_steering_table(path)
    assert codec.dumps(table) == path.read_text()
    (row,) = table.rows
    assert isinstance(row, SteeringRow) and row.effect.ci == [-0.1, 0.0] and row.mirror.unjustified == 1
    probe = table.probe["j"]
    assert isinstance(probe, DirectionProbe) and probe.n.heldout_items == 1 and probe.accuracy.train_paired == 1.0
    assert table.settings.coefficient == -1 and isinstance(table.settings.coefficient, int)  # as the caller gave it
    assert table.reused.gold_judges == ["g"]


def test_a_restyle_result_reads_back_as_models_and_is_written_as_given(tmp_path):
    codec.write_restyle(tmp_path, RESTYLE)
    _written_as_given(tmp_path / "restyle.json", RESTYLE)
    result = codec.read_restyle(tmp_path)
    assert codec.dumps(result) == (tmp_path / "restyle.json").read_text()
    judge = result.judges["j"]
    assert isinstance(judge, RestyleJudge) and judge.test.controls == ["c1", "c2", "c3"]
    assert judge.share_removed.kind == "whole line" and judge.similarity.flagged is None
    assert result.similarity.per_author["writer-x"].flagged == ["a"] and result.test.controls["j"] == ["c1", "c2", "c3"]
    assert result.restyle.style == "plain" and result.embedder.model == "e"


def test_a_validation_result_and_an_attention_summary_read_back_as_models(tmp_path):
    data = {
        "plan": {"n_boot": 10},
        "run_dir": "r",
        "splits": {"selection": ["a"], "test": ["b"], "chosen_on": "selection", "measured_on": "test"},
        "organisms": {
            "null": {
                "metrics": {"dbg_hard": 0.0},
                "unreliable_because": [],
                "top_heads_selection": [[1, 2, 0.5]],
                "causal_test": {"verdict": "v", "causal": False, "effects": {"self": EFFECT}},
                "positive_control": {"effect": EFFECT, "before": {"dbg_hard": 0.1}, "after": {"dbg_hard": 0.0}},
            }
        },
        "legitimate_gap": None,
        "truth_table": [{"claim": "c", "known_truth": "t", "toolkit": "v", "agrees": None}],
    }
    codec.write_validation(tmp_path, data)
    _written_as_given(tmp_path / "validation.json", data)
    result = codec.read_validation(tmp_path)
    organism = result.organisms["null"]
    assert isinstance(organism, ValidationOrganism) and organism.positive_control.effect.mean == -0.05
    assert organism.causal_test.effects["self"].ci == [-0.1, 0.0] and organism.top_heads_selection == [[1, 2, 0.5]]
    assert isinstance(result.truth_table[0], TruthRow) and result.splits.test == ["b"]
    summary = {
        "judges": ["j"],
        "top_heads": {"j": [{"layer": 1, "head": 0, "own_minus_other_mean": 0.1}]},
        "top_heads_mass": {"j": [{"layer": 1, "head": 0, "own_minus_other_mass": None}]},
        "length_regression": [{"judge": "j", "stat": "mass", "slope": 0.1, "intercept": 0.0, "r": None, "n": 4}],
    }
    path = tmp_path / "attention_summary.json"
    codec.write_attention_summary(path, summary)
    _written_as_given(path, summary)
    read = codec.read_attention_summary(path)
    assert read.top_heads["j"][0].own_minus_other_mean == 0.1 and read.length_regression[0].n == 4
