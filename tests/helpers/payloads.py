"""What a run, a causal test and a sweep hand the results table, with every part filled: the inputs of the
check that `--json` prints what it printed before the payload was typed (tests/fixtures/terminal/), and the
judge, causal record and sweep rows tests/report/test_terminal.py reads too."""

from __future__ import annotations

JUDGE_A = {
    "own_model": "author-a",
    "dbg_hard": 0.125,
    "dbg_ci": [0.05, 0.2],
    "dbg_soft": 0.1,
    "position_consistency": 0.8,
    "mean_label_mass": 0.9,
    "unreliable_because": [],
    "tie_share": 0.375,
    "dbg_no_ties": 0.0625,
}
CAUSAL_A = {
    "causal": True,
    "verdict": "author-a: causal effect on self-preference: ...",
    "p_value": 0.004,
    "p_holm": 0.008,
    "test_alpha": 0.05,
    "within_judge": {"effect": -0.21, "ci": [-0.3, -0.12], "p_value": 0.001},
    "n_test": 40,
    "test": {"n_controls": 5},
    "share_removed": {"estimate": 0.4, "low": 0.1, "high": 0.7},
}
SUMMARY = {
    "n_items": 12,
    "models": ["author-a", "author-b"],
    "judges": {
        "author-a": JUDGE_A,
        "weak-judge": {
            "own_model": "author-b",
            "dbg_hard": float("nan"),
            "dbg_ci": [None, None],
            "dbg_soft": 0.0,
            "position_consistency": 0.0,
            "mean_label_mass": 0.19,
            "unreliable_because": ["position consistency 0% < 50%"],
        },
        "old-summary": {"position_consistency": 0.2, "mean_label_mass": 0.9},
    },
    "gold": {
        "judges": ["reference", "other"],
        "win_rate": {"author-a": 0.5, "author-b": 0.5},
        "win_rate_soft": {"author-a": 0.4, "author-b": 0.6},
        "human": {
            "n_items": 10,
            "judges": {
                "reference": {
                    "n": 10,
                    "agreement": 0.7,
                    "agreement_ci": [0.4, 0.9],
                    "gold_win_rate_first": 0.6,
                    "human_win_rate_first": 0.5,
                    "human_tie_share": 0.1,
                }
            },
            "ensemble": {
                "n": 10,
                "agreement": 0.8,
                "agreement_ci": [0.5, 1.0],
                "gold_win_rate_first": 0.55,
                "human_win_rate_first": 0.5,
                "human_tie_share": 0.1,
            },
        },
    },
    "reasoning": {"author-a": {"n_answers": 3, "n_items": 12, "mean_chars": 41.5, "mean_words": 7.25}},
    "pointwise": {
        "author-a": {
            "mean_label_mass": 0.9,
            "unreliable_because": [],
            "reliable": True,
            "authors": {
                "author-a": {"n": 12, "mean_expected_score": 3.5, "n_parsed": 11, "mean_parsed_score": 3.4},
                "author-b": {"n": 12, "mean_expected_score": 2.5, "n_parsed": 0, "mean_parsed_score": None},
            },
        },
        "weak-judge": {
            "mean_label_mass": 0.1,
            "unreliable_because": ["label mass 10% < 50%"],
            "authors": {"author-a": {"n": 12, "mean_expected_score": 3.0, "n_parsed": 2, "mean_parsed_score": 3.0}},
        },
    },
    "correctness": {"author-a": {"graded": 10, "correct": 7}, "author-b": {"graded": 10, "correct": 4}, "no_target": 2},
}
CAUSAL = {
    "author-a": CAUSAL_A,
    "weak-judge": {
        "causal": None,
        "reason": "too weak to judge",
        "verdict": "not tested",
        "effects": {"self": {"mean": -0.01, "ci": [-0.05, 0.03]}},
    },
    "no-effect": {"causal": False, "verdict": "no-effect: no causal effect shown"},
}
SWEEP_ROWS = [
    {
        "judge": "j",
        "target": "self",
        "alpha": "0",
        "layers": "1",
        "effect": "-0.02",
        "effect_lo": "-0.05",
        "effect_hi": "0.01",
        "dbg_hard": "0.1",
        "dbg_lo": "0",
        "dbg_hi": "0.2",
        "key": "k1",
    },
    {
        "judge": "j",
        "target": "self",
        "alpha": "0",
        "layers": "2",
        "effect": "-0.2",
        "effect_lo": "-0.3",
        "effect_hi": "-0.1",
        "dbg_hard": "0.0",
        "dbg_lo": "-0.1",
        "dbg_hi": "0.1",
        "key": "k2",
    },
    {
        "judge": "j",
        "target": "other",
        "alpha": "0",
        "layers": "2",
        "effect": "",
        "effect_lo": "",
        "effect_hi": "",
        "dbg_hard": "",
        "dbg_lo": "",
        "dbg_hi": "",
        "key": "k3",
    },
]
SWEEP = [SWEEP_ROWS[0] | {"p_value": "0.3", "p_holm": "0.6"}, *SWEEP_ROWS[1:]]
FILES = {"run": "runs/x", "report": "runs/x/report.html"}
TIMINGS = {
    "steps": {"generation": 30.0, "judging author-a": 10.0},
    "total_s": 40.0,
    "torch_threads": 1,
    "torch_threads_used": [1, 2],
    "peak_rss_gb": 1.5,
    "peak_gpu_gb": 0.25,
}
TRUTH = [
    {
        "claim": "the planted organism prefers its own answer",
        "known_truth": "yes",
        "toolkit": "DBG +12.5",
        "agrees": True,
    }
]
