"""`interp explain`'s result in the report and the terminal: the share of the gap each candidate removes, with
its interval, and the test that decided it."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from interp.formatting import p_value, pct
from interp.report.figures import png_data_uri, save_figure, subplots
from interp.report.html import table_html
from interp.results.explain import MATCHED_NULL, Candidate, Explanation
from interp.storage import atomic_write_text
from interp.templating import render

SECTION_FILE = "explain_section.html"
# what each route counterfactual (interp.studies.routes.ROUTE_COUNTERFACTUALS) puts in the own answer's place, in words
COUNTERFACTUALS = {
    "other": "the pair's other answer",
    "reference": "the item's reference answer",
}
SECTION_TITLE = "Where self-preference lives: the ladder under the causal test"
HEADER = [
    "candidate",
    "site",
    "selected by",
    "route",
    "share of the gap removed (95% CI)",
    "p (raw)",
    "p (adjusted)",
    "causal",
]

_SECTION = (
    "<p><b>{{ answer }}</b></p><p><img src='{{ image }}' alt='share of the gap removed per candidate'></p>{{ table }}"
    "<p class='note'>{{ test }}</p>"
)


def share_text(candidate: Candidate) -> str:
    """The share of the gap the candidate removes with its interval, or why it has none."""
    if candidate.share_removed is None:
        return f"n/a: {candidate.reason or 'no test'}"
    low, high = candidate.ci
    return f"{pct(candidate.share_removed)} [{pct(low)}, {pct(high)}]"


def rows(result: Explanation) -> list[list[str]]:
    """One table row per candidate, in `HEADER`'s order."""
    return [
        [
            c.where,
            c.site,
            c.selected_by,
            c.route or "",
            share_text(c),
            p_value(c.p_value),
            p_value(c.p_holm),
            {True: "yes", False: "no", None: "no test"}[c.causal],
        ]
        for c in result.candidates
    ]


def test_text(result: Explanation) -> str:
    """What decided each row, from the settings that ran."""
    settings = result.settings
    controls = result.controls
    matched = settings.null == MATCHED_NULL
    null = (
        "each control judge localised by the same method on the same selection items (the judge's answer read as "
        "its own) and measured at its own chosen set of the same size, site and op (the matched null); random "
        "rows: each judge at its own draw"
        if matched
        else "the controls measured at the judge's set"
    )
    gated = settings.gap_gate
    planned = bool((result.multiplicity or {}).get("hypotheses"))
    adjusted = "adjusted p" if planned else "Holm p"
    call = (
        f"causal = {adjusted} at most {settings.test_alpha:g}, a gap to carry and a share whose interval lies above "
        "0 (where the judge does not prefer its own answers more than its controls, one-sided, there is no share and "
        "causal is empty)"
        if gated
        else f"without the gap gate (a diagnostic): causal = {adjusted} at most {settings.test_alpha:g} alone"
    )
    if planned:
        rule = (
            "pattern (content) only where the total is causal (its adjusted one-sided p at the level, its interval "
            "above 0), the judge's pattern-minus-content contrast lies above (below) its controls' contrasts "
            "(Crawford-Howell with the judge's own item variance, adjusted p at the level) and the route carries at "
            "least half of the total's share; else neither"
        )
    elif matched:
        rule = (
            "pattern (content) only where the total is causal with its interval above 0 and pattern minus content, "
            "resampled together, has its interval above (below) 0; else neither"
        )
    else:
        rule = "the route that removes at least half of the total with an interval clear of the other's, else neither"
    n_primaries = sum(h.get("role") == "primary" for h in (result.multiplicity or {}).get("hypotheses", []))
    correction = (
        "p is Crawford-Howell's one-sided p in the removal direction, adjusted by the multiplicity plan: Holm across "
        f"the methods' {n_primaries} primary candidates (a set two methods chose is one test), each head set's route "
        "total and pattern-minus-content test gate-kept behind its candidate in a fixed sequence, random rows "
        f"outside the correction (their raw p); {call}"
        if planned
        else f"p is corrected with Holm over the {sum(c.p_value is not None for c in result.candidates)} "
        f"candidates with a test; {call}"
    )
    return (
        f"Each row is one causal test on the {len(result.test_items)} test items (localised on the other "
        f"{len(result.selection_items)}, "
        f"selection share {settings.selection_share:g}, split seed {settings.split_seed}): the "
        "judge's change of its self-preference gap "
        f"under the candidate's intervention against the changes of {len(controls)} control judges that "
        f"read the same answers and wrote neither, {null} "
        "(Crawford-Howell, H0: the judge's change is one more draw from the controls'; df = "
        f"{max(len(controls) - 1, 0)}). "
        "The share of the gap removed: 1 - gap after / gap before, gap = the judge's DBG minus the "
        "controls' mean, Fieller's interval "
        f"(controls and items). {correction}. Random rows: head or layer sets of the same size, drawn "
        "from a seed: they should not be causal. Route: the head set's output, pattern or values patched "
        "from the prompt with the own answer "
        f"replaced by {COUNTERFACTUALS.get(settings.counterfactual, 'a counterfactual')} (its "
        f"token length kept); {rule}."
    )


def share_figure(candidates: Sequence[Candidate]):
    """Each candidate's share of the gap removed with its interval (red: causal; gray: random; x: no share)."""
    fig, ax = subplots(figsize=(6.5, 0.6 + 0.42 * max(len(candidates), 1)))
    for y, c in enumerate(candidates):
        if c.share_removed is None:
            ax.plot([0], [y], "x", color="tab:gray")
            continue
        low, high = c.ci
        color = "tab:gray" if c.selected_by == "random" else ("tab:red" if c.causal else "tab:blue")
        ax.errorbar(
            c.share_removed,
            y,
            xerr=[[c.share_removed - low], [high - c.share_removed]],
            fmt="o",
            color=color,
            capsize=3,
        )
    ax.axvline(0, color="black", lw=0.8)
    ax.axvline(1, color="black", lw=0.5, ls=":")
    ax.set_yticks(range(len(candidates)), [f"{c.site} by {c.selected_by}: {c.where}" for c in candidates], fontsize=7)
    ax.set_xlabel("share of the self-preference gap removed (95% CI; red: causal; x: no share)")
    ax.invert_yaxis()
    fig.tight_layout()
    return fig


def explain_section(result: Explanation, figures: Path) -> Path:
    """Write figures/explain_section.html (title line + body) and the share figure as PNG and PDF."""
    paths = save_figure(share_figure(result.candidates), figures / "explain_shares")
    body = render(
        _SECTION,
        answer=result.answer,
        image=png_data_uri(paths["png"]),
        table=table_html(HEADER, rows(result)),
        test=test_text(result),
    )
    path = figures / SECTION_FILE
    atomic_write_text(path, f"{SECTION_TITLE}: {result.judge}\n{body}")
    return path


def print_explanation(result: Explanation) -> None:
    """The explanation's table and answer on the terminal."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{SECTION_TITLE}: {result.judge}", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    for name in HEADER:
        table.add_column(name)
    for row in rows(result):
        table.add_row(*row)
    console = Console()
    console.print(table)
    console.print(result.answer)
