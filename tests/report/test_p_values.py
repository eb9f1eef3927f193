"""A p-value is written to three decimals and never as "0.000": below 0.001 it is "< 0.001", below 1e-4 "< 1e-4"."""

from __future__ import annotations

import re

from interp.formatting import p_value


def test_small_p_values_are_never_zero():
    assert p_value(0.0001) == "< 0.001" and p_value(1e-12) == "< 1e-4" and p_value(9e-19) == "< 1e-4"
    assert p_value(0.001) == "0.001" and p_value(0.0423) == "0.042" and p_value(1.0) == "1.000"
    assert p_value(None) == "n/a" and p_value(float("nan")) == "n/a"


def test_a_tiny_p_is_never_zero_in_the_terminal_the_verdict_or_the_report(tmp_path):
    """The same p = 0.0001 in the terminal table, the verdict sentence and the report section."""
    import numpy as np
    from rich.console import Console

    from interp.metrics.judge_level import between_judge_test
    from interp.report.interventions import intervention_section
    from interp.report.terminal import print_results, results_payload

    record = {
        "causal": True,
        "p_value": 0.0001,
        "p_holm": 0.0001,
        "test_alpha": 0.05,
        "n_test": 8,
        "verdict": "j: causal",
        "within_judge": {"effect": -0.1, "ci": [-0.2, 0.0], "p_value": 0.0001},
        "test": {"n_controls": 4, "df": 3},
    }
    console = Console(record=True, width=220)
    print_results(results_payload(causal={"j": record}), console)
    shown = console.export_text()
    assert "< 0.001" in shown and "0.000" not in shown
    rng = np.random.default_rng(0)
    test = between_judge_test(np.full(16, -0.3) + rng.normal(0, 0.01, 16), rng.normal(0, 0.01, (4, 16)), n_flips=2000)
    assert test.p_value < 0.001 and "< 0.001" in test.verdict("j") and "0.000" not in test.verdict("j")
    section = intervention_section([{"judges": {"j": record}, "n_items": 8}], tmp_path).read_text()
    assert "&lt; 0.001" in section and "0.000" not in re.sub(r"<img[^>]*>", "", section)
