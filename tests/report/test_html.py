"""The report's HTML: config-derived names are escaped (autoescaping templates), toolkit markup is not."""

from __future__ import annotations

import json

import torch
from interp.analysis.token_attention import tokens_html
from interp.report.build import build_report
from interp.report.html import table_html

SCRIPT = "<script>alert(1)</script>"


def judge_scores() -> dict:
    return {
        "win_rate_first_hard": 0.5, "dbg_hard": 0.1, "dbg_ci": [-0.1, 0.3], "win_rate_own_hard": 0.6, "gold_win_rate_hard": 0.5,
        "dbg_soft": 0.05, "position_consistency": 0.75, "top_not_label": 0, "n_judgments": 8, "mean_label_mass": 0.9,
    }  # fmt: skip


def test_a_script_in_a_gold_judge_or_model_name_is_escaped_in_report_html(tmp_path):
    judge = f"org/{SCRIPT}"
    summary = {
        "models": [judge, "other/model"],
        "judges": {judge: judge_scores(), "other/model": judge_scores()},
        "gold": {"judges": ["reference", SCRIPT], "win_rate": {judge: 0.5}},
        "n_items": 4,
        "tasks": ["helpfulness"],
        "max_words": 20,
        "label_handling": "P(label) sums 'A' and ' A'",
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    page = build_report(tmp_path).read_text()
    assert SCRIPT not in page and "<script" not in page
    assert "Gold judges: <b>reference, &lt;script&gt;alert(1)&lt;/script&gt;</b>" in page
    assert "<td>org/&lt;script&gt;alert(1)&lt;/script&gt;</td>" in page  # the judge's row of the DBG table
    assert "<title>Self-preference report: org/&lt;script&gt;" in page
    assert "<img src='data:image/png;base64," in page  # the embedded figure is still markup


def test_a_section_file_is_embedded_as_markup(tmp_path):
    """Sections the toolkit rendered (figures/*_section.html) go in as they are, not escaped twice."""
    summary = {
        "models": ["a/x", "b/y"], "judges": {"a/x": judge_scores(), "b/y": judge_scores()},
        "gold": {"judges": ["reference"], "win_rate": {"a/x": 0.5}}, "n_items": 4, "tasks": ["helpfulness"], "label_handling": "x",
    }  # fmt: skip
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "steering_section.html").write_text("Steering\n" + table_html(["judge"], [[SCRIPT]]))
    page = build_report(tmp_path).read_text()
    assert "<h2>Steering</h2>\n<table><thead><tr><th>judge</th></tr></thead><tbody><tr><td>&lt;script&gt;" in page


def test_table_cells_are_escaped_and_floats_rounded():
    assert table_html(["a&b"], [[0.12345, "<i>"]]) == (
        "<table><thead><tr><th>a&amp;b</th></tr></thead><tbody><tr><td>0.123</td><td>&lt;i&gt;</td></tr></tbody></table>"
    )


def test_tokens_html_escapes_tokens_and_marks_newlines():
    page = tokens_html(["<s>", "a\n<b>"], torch.tensor([0.5, 0.5]))
    assert "<span title='1: 0.5' style='background:rgba(214,39,40,1.000);'>a\u21b5<br>&lt;b&gt;</span>" in page


def test_a_judge_too_weak_to_judge_is_flagged_beside_its_dbg(tmp_path):
    from interp.report.dbg import dbg_section

    weak = judge_scores() | {"position_consistency": 0.0, "mean_label_mass": 0.19, "unreliable_because": ["position consistency 0% < 50%"]}
    summary = {
        "models": ["weak", "fine"], "judges": {"weak": weak, "fine": judge_scores() | {"unreliable_because": []}},
        "gold": {"judges": ["reference"], "win_rate": {"weak": 0.5}}, "n_items": 4, "tasks": ["helpfulness"], "label_handling": "x",
    }  # fmt: skip
    html = str(dbg_section(summary, tmp_path))
    weak_row, fine_row = html.split("<td>weak</td>")[1].split("</tr>")[0], html.split("<td>fine</td>")[1].split("</tr>")[0]
    assert "judge too weak, DBG not evidence: position consistency 0% &lt; 50%" in weak_row
    assert "too weak" not in fine_row
