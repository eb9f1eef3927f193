"""The report's causal section tells the truth about its test: the words under the table are generated from the
test each row records (name, H0, k control judges, df), the figure draws each control judge's change beside
the tested judge's with Crawford-Howell's interval, and control lists are short (family and k, members folded)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from interp.metrics.judge_level import crawford_howell, crawford_howell_interval
from interp.report.interventions import control_family, control_figure, intervention_section
from interp.results import codec

OLD_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "old_run"


def test_the_section_names_the_test_that_decided_each_row(tmp_path):
    results = codec.read_causal_results(OLD_RUN)
    text = intervention_section(results, tmp_path).read_text()
    assert (
        "sign-flip permutation test of the per-item contrast" not in text
    )  # the single-control test, which decides no row
    decision = re.search(
        r"author-a: Crawford-Howell test of the judge&#39;s mean change of P\(own\).*?</p>", text
    ).group(0)
    assert "k = 4 control judges" in decision and "df = 3" in decision and "H0: the tested judge" in decision
    assert "p &lt; 0.001" in decision and "alpha 0.05" in decision and "-&gt; causal" in decision
    assert "author-b: decided by an older test (sign-flip" in text  # an old row says what decided it
    assert "0.000" not in re.sub(r"<img[^>]*>", "", text)  # p = 0.0001 is "< 0.001", never 0.000
    assert (
        "<details><summary>author-a: control judges, named control judges (k = 4)</summary><p>c1, c2, c3, "
        "c4</p></details>" in text
    )
    assert "Crawford-Howell, df 3" in text and "80% [30%, 120%]" in text


def test_the_figure_draws_every_control_judge_and_the_interval(tmp_path):
    (result,) = codec.read_causal_results(OLD_RUN)
    ax = control_figure([result]).axes[0]
    points = [c.get_offsets() for c in ax.collections if type(c).__name__ == "PathCollection"]
    dots = sorted(float(x) for offsets in points for x, y in offsets if y == 0)
    assert np.allclose(dots, [0.0, 1.0, 1.0, 2.0])  # four control judges of author-a, in points
    low, high = crawford_howell_interval([0.0, 0.02, 0.01, 0.01], 0.05)
    bands = [
        p.get_paths()[0].vertices[:, 0]
        for p in ax.collections
        if type(p).__name__ in ("PolyCollection", "FillBetweenPolyCollection")
    ]
    assert any(np.isclose(b.min(), 100 * low) and np.isclose(b.max(), 100 * high) for b in bands)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["author-a (p < 0.001)", "author-b (p 0.400)"]


def test_the_interval_is_where_crawford_howell_does_not_reject():
    controls = np.array([0.1, -0.05, 0.02, 0.08, 0.0])
    low, high = crawford_howell_interval(controls, 0.05)
    assert (
        abs(crawford_howell(high, controls).p_value - 0.05) < 1e-6
        and abs(crawford_howell(low, controls).p_value - 0.05) < 1e-6
    )
    assert crawford_howell_interval(controls[:2]) is None  # fewer than 3 controls: no test, no interval


def test_a_family_is_named_by_what_its_members_share():
    assert control_family(["organisms/smollm2-null-seed1", "organisms/smollm2-null-seed2"]) == "smollm2-null-seed"
    assert control_family(["alpha", "beta"]) == "named control judges" and control_family([]) == "none"
