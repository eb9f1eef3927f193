"""The report's HTML: config-derived names are escaped (autoescaping templates), toolkit markup is not."""

from __future__ import annotations

import json
import re

import torch

from interp.report.build import build_report
from interp.report.html import table_html
from interp.report.token_attention import tokens_html

SCRIPT = "<script>alert(1)</script>"


def judge_scores() -> dict:
    return {
        "win_rate_first_hard": 0.5,
        "dbg_hard": 0.1,
        "dbg_ci": [-0.1, 0.3],
        "win_rate_own_hard": 0.6,
        "gold_win_rate_hard": 0.5,
        "dbg_soft": 0.05,
        "position_consistency": 0.75,
        "top_not_label": 0,
        "n_judgments": 8,
        "mean_label_mass": 0.9,
    }


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
        "models": ["a/x", "b/y"],
        "judges": {"a/x": judge_scores(), "b/y": judge_scores()},
        "gold": {"judges": ["reference"], "win_rate": {"a/x": 0.5}},
        "n_items": 4,
        "tasks": ["helpfulness"],
        "label_handling": "x",
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "steering_section.html").write_text("Steering\n" + table_html(["judge"], [[SCRIPT]]))
    page = build_report(tmp_path).read_text()
    assert (
        "<h2 id='section-2'>Steering</h2>\n<table><thead><tr><th>judge</th></tr></thead><tbody><tr><td>&lt;script&gt;"
        in page
    )


def test_table_cells_are_escaped_and_floats_rounded():
    assert table_html(["a&b"], [[0.12345, "<i>"]]) == (
        "<table><thead><tr><th>a&amp;b</th></tr></thead><tbody><tr><td>0.123</td><td>&lt;i&gt;</td></tr></tbody></table>"
    )


def test_tokens_html_escapes_tokens_and_marks_newlines():
    page = tokens_html(["<s>", "a\n<b>"], torch.tensor([0.5, 0.5]))
    assert "<span title='1: 0.5' style='background:rgba(214,39,40,1.000);'>a\u21b5<br>&lt;b&gt;</span>" in page


def test_a_judge_too_weak_to_judge_is_flagged_beside_its_dbg(tmp_path):
    from interp.report.dbg import dbg_section

    weak = judge_scores() | {
        "position_consistency": 0.0,
        "mean_label_mass": 0.19,
        "unreliable_because": ["position consistency 0% < 50%"],
    }
    summary = {
        "models": ["weak", "fine"],
        "judges": {"weak": weak, "fine": judge_scores() | {"unreliable_because": []}},
        "gold": {"judges": ["reference"], "win_rate": {"weak": 0.5}},
        "n_items": 4,
        "tasks": ["helpfulness"],
        "label_handling": "x",
    }
    html = str(dbg_section(summary, tmp_path))
    weak_row, fine_row = (
        html.split("<td>weak</td>")[1].split("</tr>")[0],
        html.split("<td>fine</td>")[1].split("</tr>")[0],
    )
    assert "judge too weak, DBG not evidence: position consistency 0% &lt; 50%" in weak_row
    assert "too weak" not in fine_row


# ---- the layout: headline first ----------------------------------------------------------------------------

ROW_PX, HEADING_PX, LINE_PX, LINE_CHARS, PAGE_PX = 28, 44, 22, 140, 1100


def rendered_heights(page: str) -> list[tuple[int, float]]:
    """A rendered-height proxy of report.html: (character offset, estimated pixels) of every block a browser
    stacks, with what a folded `<details>` holds counted as its one summary line. An image counts its PNG
    height (scaled to the page width, as `max-width:100%` draws it), a table row ROW_PX, a heading
    HEADING_PX, a paragraph, list item or summary LINE_PX per LINE_CHARS characters of its text."""
    import base64
    import re
    import struct

    blocks = []
    depth = 0
    for match in re.finditer(r"<(/?)(details|img|tr|h1|h2|h3|p|li|summary)\b([^>]*)>", page):
        closing, tag, attrs = match.groups()
        if tag == "details":
            depth += -1 if closing else 1
            continue
        if closing or (depth and tag != "summary"):
            continue
        if tag == "img":
            data = re.search(r"base64,([A-Za-z0-9+/=]+)", attrs)
            width, height = struct.unpack(">II", base64.b64decode(data.group(1)[:64])[16:24])
            blocks.append((match.start(), height * min(1.0, PAGE_PX / width)))
        elif tag == "tr":
            blocks.append((match.start(), ROW_PX))
        elif tag in ("h1", "h2", "h3"):
            blocks.append((match.start(), HEADING_PX))
        else:
            end = page.find(f"</{tag}>", match.end())
            text = re.sub(r"<[^>]+>", "", page[match.end() : end])
            blocks.append((match.start(), LINE_PX * max(1, -(-len(text) // LINE_CHARS))))
    return blocks


def test_the_causal_section_starts_within_the_first_third_of_the_report(tmp_path):
    """A demo-like run (two 30-layer judges with attention, their per-layer tables, the causal test): the headline
    (DBG, causal verdicts, Figure 7) comes first under a table of contents, and the long per-layer tables are
    folded, so the causal section starts within the first third of the page's rendered height."""
    from interp.report.attention import write_attention_figures
    from interp.report.interventions import SECTION_TITLE, intervention_section
    from tests.analysis.test_attention import MODELS, planted, write_run

    root = write_run(tmp_path / "run", {judge: planted(n_items=12, n_layers=30, n_heads=9) for judge in MODELS})
    summary = {
        "models": list(MODELS),
        "judges": {judge: judge_scores() for judge in MODELS},
        "gold": {"judges": ["reference"], "win_rate": {MODELS[0]: 0.5}},
        "n_items": 12,
        "tasks": ["helpfulness"],
        "label_handling": "x",
    }
    (root / "summary.json").write_text(json.dumps(summary))
    write_attention_figures(root)
    behaviour = {"dbg_hard": 0.1, "mean_p_own": 0.6, "gold_agreement": 0.7}
    judged = {
        judge: {
            "before": behaviour,
            "variants": {"self": behaviour | {"attention": {"target": "self", "alpha": 0.0}}},
            "effects": {"self": {"mean": -0.1, "ci": [-0.2, 0.0]}},
            "effect": {"mean": -0.1, "ci": [-0.2, 0.0]},
            "verdict": f"{judge}: no causal effect shown",
            "p_value": 0.2,
            "alpha": 0.05,
            "n_test": 12,
            "causal": False,
            "test": {"control_judge": "control"},
        }
        for judge in MODELS
    }
    reused = {
        "responses": 24,
        "responses_generated": 0,
        "gold_verdicts": 12,
        "gold_judges_rerun": 0,
        "gold_judges": ["reference"],
    }
    intervention_section([{"judges": judged, "reused": reused, "n_items": 12}], root / "figures")
    page = build_report(root).read_text()

    headings = re.findall(r"<h2 id='section-(\d+)'>([^<]*)</h2>", page)
    titles = [title for _, title in headings]
    assert (
        titles[0].startswith("Self-preference: DBG")
        and titles[1] == SECTION_TITLE
        and titles[2].startswith("Attention over response spans")
    )
    toc = page[page.index("<nav>") : page.index("</nav>")]
    assert [re.sub(r"<[^>]+>", "", li) for li in re.findall(r"<li>.*?</li>", toc)] == titles
    assert page.index("<nav>") < page.index("<h2 id='section-1'>")
    assert page.count("<details>") >= 2 * len(MODELS)  # head maps and per-layer tables of each judge, folded
    blocks = rendered_heights(page)
    causal = page.index(f"<h2 id='section-2'>{SECTION_TITLE}")
    above = sum(height for offset, height in blocks if offset < causal)
    total = sum(height for _, height in blocks)
    print(
        f"causal section starts at {above:.0f} of {total:.0f} px ({above / total:.0%}); character offset "
        f"{causal / len(page):.0%}"
    )
    assert above <= total / 3, f"the causal section starts at {above:.0f} of {total:.0f} px"
