"""The run report: Figure 2 grid, DBG table, and whatever later steps (attention, interventions) left."""

from __future__ import annotations

from pathlib import Path

from interp.plots import figure2_grid, png_data_uri, save_figure, table_html, write_report
from interp.summary import load_summary


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}"


def dbg_section(summary: dict, figures: Path) -> str:
    paths = save_figure(figure2_grid(summary), figures / "figure2_grid")
    rows = []
    for judge, s in summary["judges"].items():
        if "dbg_hard" not in s:
            continue
        lo, hi = s["dbg_ci"]
        rows.append(
            [
                judge,
                f"{100 * s['win_rate_own_hard']:.1f}%",
                f"{100 * s['gold_win_rate_hard']:.1f}%",
                f"{_pct(s['dbg_hard'])} [{_pct(lo)}, {_pct(hi)}]",
                f"{_pct(s['dbg_soft'])}",
                f"{100 * s['position_consistency']:.1f}%",
                f"{s['top_not_label']} / {s['n_judgments']}",
                f"{s['mean_label_mass']:.3f}",
            ]
        )
    table = table_html(
        ["judge", "own win rate", "gold win rate", "DBG hard (pts, 95% CI)", "DBG soft (pts)", "position consistency", "top token not a label", "mean label mass"],
        rows,
    )
    gold = ", ".join(summary["gold"]["judges"])
    return (
        f"<p><img src='{png_data_uri(paths['png'])}' alt='Figure 2 grid'></p>"
        f"<p class='note'>Gold judges: <b>{gold}</b>. Files: figures/figure2_grid.png, .pdf. {summary['n_items']} instructions; "
        f"tasks: {', '.join(summary['tasks'])}; responses capped at {summary.get('max_words', '?')} words. {summary['label_handling']}.</p>{table}"
    )


def build_report(run_dir: Path) -> Path:
    run_dir = Path(run_dir)
    summary = load_summary(run_dir)
    figures = run_dir / "figures"
    sections = [("Self-preference: DBG (judge win rate for its own responses minus gold)", dbg_section(summary, figures))]
    for name in ("attention_section.html", "intervention_section.html", "steering_section.html"):
        part = figures / name
        if part.exists():
            title, _, content = part.read_text().partition("\n")
            sections.append((title, content))
    path = run_dir / "report.html"
    write_report(path, f"Self-preference report: {' vs '.join(summary['models'])}", sections)
    return path
