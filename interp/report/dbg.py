"""The DBG section of the report: the Figure 2 grid (judge A, gold, judge B) and the DBG table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from interp.report.figures import png_data_uri, save_figure, subplots
from interp.report.html import table_html
from interp.templating import Markup, render


def figure2_grid(summary: dict):
    """DBG paper Figure 2: rows judge A, gold, judge B; columns A wins, B wins (hard win rates)."""
    first, second = summary["models"]
    judges = summary["judges"]
    rows, labels = [], []
    for name, is_gold in ((first, False), ("gold", True), (second, False)):
        if is_gold:
            rate = summary["gold"]["win_rate"][first]
            labels.append("Gold (" + ", ".join(summary["gold"]["judges"]) + ")")
        elif name in judges:
            rate = judges[name]["win_rate_first_hard"]
            labels.append(f"Judge: {name}")
        else:
            continue
        rows.append([rate, 1 - rate])
    values = np.array(rows)
    fig, ax = subplots(figsize=(6.2, 0.9 + 0.7 * len(rows)))
    ax.imshow(values, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    for (r, c), v in np.ndenumerate(values):
        ax.text(c, r, f"{100 * v:.1f}%", ha="center", va="center", color="white" if v > 0.6 else "black", fontsize=11)
    ax.set_xticks([0, 1], [f"A wins\n({first})", f"B wins\n({second})"], fontsize=9)
    ax.set_yticks(range(len(labels)), labels, fontsize=9)
    ax.set_title(f"Pairwise judgments, {summary['n_items']} instructions", fontsize=10)
    fig.tight_layout()
    return fig


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}"


def dbg_section(summary: dict, figures: Path) -> Markup:
    paths = save_figure(figure2_grid(summary), figures / "figure2_grid")
    rows = []
    for judge, s in summary["judges"].items():
        if "dbg_hard" not in s:
            continue
        lo, hi = s["dbg_ci"]
        weak = s.get("unreliable_because") or []
        # A judge too weak to judge: the number stays, with why it carries no information beside it.
        verdict = f" (judge too weak, DBG not evidence: {'; '.join(weak)})" if weak else ""
        rows.append(
            [
                judge,
                f"{100 * s['win_rate_own_hard']:.1f}%",
                f"{100 * s['gold_win_rate_hard']:.1f}%",
                f"{_pct(s['dbg_hard'])} [{_pct(lo)}, {_pct(hi)}]{verdict}",
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
    return render(
        _DBG_SECTION,
        image=png_data_uri(paths["png"]),
        gold=", ".join(summary["gold"]["judges"]),
        summary=summary,
        tasks=", ".join(summary["tasks"]),
        table=table,
    )


_DBG_SECTION = (
    "<p><img src='{{ image }}' alt='Figure 2 grid'></p>"
    "<p class='note'>Gold judges: <b>{{ gold }}</b>. Files: figures/figure2_grid.png, .pdf. {{ summary.n_items }} instructions; "
    "tasks: {{ tasks }}; responses capped at {{ summary.get('max_words', '?') }} words. {{ summary.label_handling }}. "
    "A judge is flagged as too weak when its position consistency is under 50% or its mean label mass under 0.5.</p>{{ table }}"
)
