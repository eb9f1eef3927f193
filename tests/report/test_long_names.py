"""The report with long or HTML-laden names (issue 77 item 22): the title wraps, tables scroll instead of being
cut, Figure 2's tick labels do not overlap, the heads figure's file name carries its hash once."""

from __future__ import annotations

import json
from pathlib import Path

from interp.report.dbg import dbg_section, figure2_grid, tick_label
from interp.report.html import table_html, write_report
from interp.results import codec
from interp.results.summary import RunSummary
from interp.storage import figure_label, keyed_label
from interp.templating import Markup

OLD_SUMMARY = Path(__file__).resolve().parents[1] / "fixtures" / "old_run" / "summary.json"
LONG = "<b>judge</b>-" + "very-long-organism-name-" * 8


def _summary_with_long_names() -> RunSummary:
    data = json.loads(OLD_SUMMARY.read_text())
    renames = {"author-a": LONG + "a", "author-b": LONG + "b"}
    text = json.dumps(data)
    for old, new in renames.items():
        text = text.replace(f'"{old}"', json.dumps(new))
    return codec.parse(RunSummary, json.loads(text), "summary")


def test_the_title_wraps_and_tables_scroll(tmp_path):
    path = tmp_path / "report.html"
    write_report(path, f"Self-preference report: {LONG} vs {LONG}", [("DBG", table_html(["judge"], [[LONG]]))])
    html = path.read_text()
    assert "<b>judge</b>" not in html and "&lt;b&gt;judge&lt;/b&gt;" in html  # escaped, never markup
    style = html[html.index("<style>") : html.index("</style>")]
    assert "h1,h2,h3,nav,p,li,summary{overflow-wrap:anywhere}" in style
    assert "overflow-x:auto" in style and "display:block" in style  # a wide table scrolls, not cut


def test_figure2_tick_labels_do_not_overlap_and_the_names_are_in_full_below(tmp_path):
    summary = _summary_with_long_names()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = figure2_grid(summary)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    (ax,) = fig.axes
    a, b = (label.get_window_extent(renderer) for label in ax.get_xticklabels())
    assert a.x1 < b.x0  # the two columns' labels side by side, apart
    assert all(len(line) <= 48 for label in ax.get_yticklabels() for line in label.get_text().split("\n"))
    assert fig.get_size_inches()[0] < 14
    section = dbg_section(summary, tmp_path)
    escaped = LONG.replace("<", "&lt;").replace(">", "&gt;")
    assert isinstance(section, Markup) and f"A: <b>{escaped}a</b>; B: <b>{escaped}b</b>" in section


def test_tick_label_wraps_then_cuts():
    assert tick_label("short", 22, 3) == "short"
    cut = tick_label("x" * 200, 22, 3)
    assert cut.count("\n") == 2 and cut.endswith("...") and all(len(line) <= 22 for line in cut.split("\n"))


def test_a_long_names_figure_carries_its_hash_once():
    name = "judge/" + "x" * 200
    keyed, figure = keyed_label(name), figure_label(name)
    digest = keyed[-8:]
    assert keyed.count(digest) == 2 and figure.count(digest) == 1  # a stored file keeps its older name
    assert figure_label("short") == keyed_label("short")
