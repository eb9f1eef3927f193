"""The DBG section of the report: the Figure 2 grid (every judge of the run and gold) and the DBG table."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from interp.core.models import own_model
from interp.formatting import fixed, pct, pts
from interp.report.figures import png_data_uri, save_figure, subplots
from interp.report.html import table_html
from interp.report.terminal import reasoning_lines
from interp.results import codec
from interp.results.summary import GoldHuman, JudgeScores, RunSummary
from interp.templating import Markup, render


def figure2_rows(summary: RunSummary) -> list[tuple[str, float]]:
    """The Figure 2 rows as (label, hard rate of the first model winning): every judge of the run, grouped
    as the paper draws them (judges whose own model is the first author, gold, those of the second author,
    then judges with no answers in the run). The own model is `own_model`'s (an organism's is its base)."""
    first, second = summary.models
    judges = summary.judges
    owns = {judge: own_model(judge) for judge in judges}

    def label(judge: str) -> str:
        return f"Judge: {judge}" if owns[judge] == judge else f"Judge: {judge} (own: {owns[judge]})"

    rows = [(label(j), judges[j].win_rate_first_hard) for j in judges if owns[j] == first]
    rows.append(("Gold (" + ", ".join(summary.gold.judges) + ")", summary.gold.win_rate[first]))
    rows += [(label(j), judges[j].win_rate_first_hard) for j in judges if owns[j] == second]
    rows += [(label(j), judges[j].win_rate_first_hard) for j in judges if owns[j] not in (first, second)]
    return rows


def tick_label(text: str, width: int, lines: int) -> str:
    """A name as a tick label: wrapped at `width` characters, at most `lines` lines, the rest cut with "..." (long
    names would overlap their neighbours; the full names are in the section's notes and table)."""
    import textwrap

    wrapped = textwrap.wrap(str(text), width, break_long_words=True, break_on_hyphens=False) or [""]
    if len(wrapped) > lines:
        wrapped = wrapped[:lines]
        wrapped[-1] = wrapped[-1][: width - 3] + "..."
    return "\n".join(wrapped)


def figure2_grid(summary: RunSummary):
    """DBG paper Figure 2, one row per judge of the run plus gold; columns A wins, B wins (hard win rates)."""
    first, second = summary.models
    rows = figure2_rows(summary)
    labels = [tick_label(label, width=48, lines=2) for label, _ in rows]
    values = np.array([[rate, 1 - rate] for _, rate in rows])
    fig, ax = subplots(
        figsize=(6.2 + 0.06 * max(len(line) for x in labels for line in x.split("\n")), 1.2 + 0.7 * len(rows))
    )
    ax.imshow(values, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    for (r, c), v in np.ndenumerate(values):
        ax.text(c, r, f"{pct(v, 1)}", ha="center", va="center", color="white" if v > 0.6 else "black", fontsize=11)
    ax.set_xticks([0, 1], [f"A wins\n{tick_label(first, 22, 3)}", f"B wins\n{tick_label(second, 22, 3)}"], fontsize=9)
    ax.set_yticks(range(len(labels)), labels, fontsize=9)
    ax.set_title(f"Pairwise judgments, {summary.n_items} instructions", fontsize=10)
    fig.tight_layout()
    return fig


def _ties_text(s: JudgeScores) -> str:
    """Figure 8: the judge's and gold's tie share, and DBG over the items each decided ("n/a" in a summary
    written before ties were counted)."""
    if s.tie_share is None:
        return "n/a"
    return f"{pct(s.tie_share, 1)} / {pct(s.gold_tie_share, 1)}; {pts(s.dbg_no_ties)}"


def dbg_section(summary: RunSummary | dict, figures: Path) -> Markup:
    """The report's DBG section: Figure 2's grid (saved in `figures`) and each judge's DBG with its interval."""
    summary = codec.parse(RunSummary, summary, "summary")
    paths = save_figure(figure2_grid(summary), figures / "figure2_grid")
    rows = []
    for judge, s in summary.judges.items():
        if s.dbg_hard is None:
            continue
        lo, hi = s.dbg_ci
        weak = s.unreliable_because
        # A judge too weak to judge: the number stays, with why it carries no information beside it.
        verdict = f" (judge too weak, DBG not evidence: {'; '.join(weak)})" if weak else ""
        rows.append(
            [
                judge,
                pct(s.win_rate_own_hard, 1),
                pct(s.gold_win_rate_hard, 1),
                f"{pts(s.dbg_hard)} [{pts(lo)}, {pts(hi)}]{verdict}",
                pts(s.dbg_soft),
                _ties_text(s),
                pct(s.position_consistency, 1),
                f"{s.top_not_label} / {s.n_judgments}",
                fixed(s.mean_label_mass, 3),
            ]
        )
    table = table_html(
        [
            "judge",
            "own win rate",
            "gold win rate",
            "DBG hard (pts, 95% CI)",
            "DBG soft (pts)",
            "ties: judge / gold; DBG without ties (pts)",
            "position consistency",
            "top token not a label",
            "mean label mass",
        ],
        rows,
    )
    return render(
        _DBG_SECTION,
        image=png_data_uri(paths["png"]),
        gold=", ".join(summary.gold.judges),
        summary=summary,
        tasks=", ".join(summary.tasks),
        table=table,
        reasoning=reasoning_lines(summary),
    )


_DBG_SECTION = (
    "<p><img src='{{ image }}' alt='Figure 2 grid'></p>"
    "<p class='note'>A: <b>{{ summary.models[0] }}</b>; B: <b>{{ summary.models[1] }}</b>. "
    "Gold judges: <b>{{ gold }}</b>. Files: figures/figure2_grid.png, .pdf. {{ "
    "summary.n_items }} instructions; "
    "tasks: {{ tasks }}; responses capped at {{ summary.max_words or '?' }} words. {{ summary.label_handling }}. "
    "A judge is flagged as too weak when its position consistency is under 50% or its mean label mass under 0.5.</p>"
    "{% for line in reasoning %}<p class='note'>{{ line }}</p>{% endfor %}{{ table }}"
)


def _rate_text(rate: dict) -> str:
    """A rate in percent with its interval and subset size (n/a for an empty subset)."""
    if rate["value"] is None:
        return f"n/a (n {rate['n']})"
    low, high = rate["ci"]
    return f"{pct(rate['value'], 1)} [{pct(low, 1)}, {pct(high, 1)}] (n {rate['n']})"


def _diff_text(rate: dict) -> str:
    if rate["value"] is None:
        return "n/a"
    low, high = rate["ci"]
    return f"{pts(rate['value'])} [{pts(low)}, {pts(high)}]"


def bias_lenses_section(lenses: dict) -> Markup:
    """The lenses beside DBG (`interp.analysis.lenses.run_gold_lenses`): unjustified/legitimate self-preference
    and the Evaluator Quality Baseline, one row per judge whose own model is an author."""
    rows = []
    for judge, e in lenses.items():
        q = e["evaluator_quality_baseline"]
        rows.append(
            [
                judge,
                e["own_model"],
                _rate_text(e["unjustified"]),
                _rate_text(e["legitimate"]),
                _rate_text(q["own_wrong"]),
                _rate_text(q["other_wrong"]),
                _diff_text(q["difference"]),
            ]
        )
    header = [
        "judge",
        "own model",
        "unjustified",
        "legitimate",
        "votes own wrong answer",
        "votes other's wrong answer",
        "difference (pts)",
    ]
    return render(_LENSES_SECTION, table=table_html(header, rows))


_LENSES_SECTION = (
    "<p class='note'>The same verdicts as the DBG table, split by gold's verdict (hard verdicts; gold ties in neither "
    "subset; 95% bootstrap intervals over instructions). Unjustified / legitimate self-preference (Roytburg et al. "
    "2025): the share of pairs where the judge picks its own answer, among pairs where gold prefers the other answer / "
    "its own. Evaluator Quality Baseline (Are LLM Evaluators Really Narcissists?, arXiv 2601.22548): the "
    "rate of voting "
    "for its own wrong answer (gold's loser) against the rate of voting for the other model's wrong answer; a "
    "difference near 0 is a judge that errs alike on both, whatever its own-win rate.</p>{{ table }}"
)


def human_section(human: GoldHuman) -> Markup:
    """Table 1 of the DBG paper: gold against human labels, per gold judge and for the ensemble
    (`RunSummary.gold.human`)."""
    rows = []
    for name, r in [*human.judges.items(), ("ensemble", human.ensemble)]:
        low, high = r.agreement_ci
        rows.append(
            [
                name,
                str(r.n),
                f"{pct(r.agreement, 1)} [{pct(low, 1)}, {pct(high, 1)}]",
                pct(r.gold_win_rate_first, 1),
                pct(r.human_win_rate_first, 1),
                pct(r.human_tie_share, 1),
            ]
        )
    header = [
        "gold",
        "labelled items",
        "agreement (95% CI)",
        "gold: first answer wins",
        "people: first answer wins",
        "people: tie",
    ]
    return render(_HUMAN_SECTION, table=table_html(header, rows))


_HUMAN_SECTION = (
    "<p class='note'>A verdict per pair on each side (a tie where P(first wins) is 0.5: judges or annotators split "
    "evenly); they agree where the verdicts are equal. The paper: 74% agreement, 66% against 63% win "
    "rate.</p>{{ table }}"
)
