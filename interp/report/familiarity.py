"""The familiarity lens of a run (`FamiliarityResult`) as tables: on the terminal (`interp metrics familiarity`)
and as the report's section (figures/familiarity_section.html, which `build_report` places after the lenses)."""

from __future__ import annotations

from interp.formatting import fixed, number, pts_interval, share_interval
from interp.report.html import table_html
from interp.results.familiarity import Estimate, FamiliarityResult
from interp.run.store import RunDir
from interp.storage import atomic_write_text
from interp.templating import render

SECTION_TITLE = "Familiarity: is the self-preference a preference for predictable text? (Wataoka et al. 2024)"
SECTION_FILE = "familiarity_section.html"

JUDGE_HEADER = [
    "judge",
    "n",
    "Δ log p own-other [CI]",
    "ppl own / other",
    "slope (log-odds/nat) [CI]",
    "P(own) at Δ=0 [CI]",
    "DBG pts [CI]",
    "DBG at Δ=0 [CI]",
    "DBG matched half [CI]",
    "matched Δ (mean, |mean|)",
]
STRATA_HEADER = ["judge", "stratum", "Δ range", "n", "mean Δ", "DBG pts [CI]"]
NULL_HEADER = ["organism", "null family", "gap pts [CI]", "gap at Δ=0 [CI]", "share familiarity explains [CI]"]


def _nats(estimate: Estimate, digits: int = 3) -> str:
    low, high = estimate.ci
    interval = f" [{number(low, digits, signed=True)}, {number(high, digits, signed=True)}]" if low is not None else ""
    return number(estimate.value, digits, signed=True) + interval


def _points(estimate: Estimate) -> str:
    return pts_interval(estimate.value, estimate.ci)


def _mismatch(mean: float, mean_abs: float) -> str:
    return f"{number(mean, 2, signed=True)}, {number(mean_abs, 2)}"


def judge_rows(result: FamiliarityResult) -> list[list[str]]:
    """One row per judge with own answers: the familiarity difference, the logistic fit, DBG plain and held fixed."""
    rows = []
    for judge, lens in result.judges.items():
        p0 = lens.p_own_at_zero
        rows.append(
            [
                judge,
                str(lens.n_items),
                _nats(lens.difference),
                f"{fixed(lens.own_perplexity, 1)} / {fixed(lens.other_perplexity, 1)}",
                _nats(lens.slope, 2),
                share_interval(p0.value, p0.ci, 1),
                _points(lens.dbg_hard),
                _points(lens.adjusted_dbg_hard),
                _points(lens.matched_dbg_hard),
                _mismatch(lens.matched_mean_difference, lens.matched_mean_abs_difference),
            ]
        )
    return rows


def strata_rows(result: FamiliarityResult) -> list[list[str]]:
    """DBG within each quantile stratum of the own-minus-other log-probability difference."""
    return [
        [
            judge,
            f"{index + 1}/{len(lens.strata)}",
            f"{number(s.low, 2, signed=True)} .. {number(s.high, 2, signed=True)}",
            str(s.n),
            number(s.mean_difference, 2, signed=True),
            _points(s.dbg_hard),
        ]
        for judge, lens in result.judges.items()
        for index, s in enumerate(lens.strata)
    ]


def null_rows(result: FamiliarityResult) -> list[list[str]]:
    """Each organism's gap over its null family, plain and at equal familiarity, and the share familiarity explains."""
    return [
        [
            organism,
            ", ".join(c.nulls),
            _points(c.gap_hard),
            _points(c.adjusted_gap_hard),
            share_interval(c.explained_share.value, c.explained_share.ci),
        ]
        for organism, c in result.organisms.items()
    ]


def print_familiarity(result: FamiliarityResult, console=None) -> None:
    """The three tables on the terminal (rich; `results_console`)."""
    from interp.report.terminal import results_console, titled_table

    console = console or results_console()
    for title, header, rows in (
        (f"Familiarity ({result.conditioning}; Δ in nats per token)", JUDGE_HEADER, judge_rows(result)),
        ("DBG within familiarity strata (quantiles of Δ)", STRATA_HEADER, strata_rows(result)),
        ("Organisms against their null family", NULL_HEADER, null_rows(result)),
    ):
        if not rows:
            continue
        table = titled_table(title)
        for index, name in enumerate(header):
            table.add_column(name, justify="left" if index == 0 else "right")
        for row in rows:
            table.add_row(*row)
        console.print(table)
        console.print()
    if not result.organisms:
        console.print("No organism with a null organism of the same base among the run's judges: no null comparison.")


_SECTION = (
    "<p>Each answer's mean token log-probability under each judge with own answers, the answer conditioned on its "
    "instruction in the answer-generation prompt; Δ = own answer's minus the other's (nats per token; positive: the "
    "judge finds its own answer more predictable). The slope is a logistic fit of P(own) on Δ; 'at Δ=0' is DBG (in "
    "points, {{ level }} intervals over items, {{ n_boot }} resamples) where own and other answer are equally "
    "familiar (the line of DBG's per-item part on Δ); 'matched half' is DBG on the half of the items with the "
    "smallest |Δ|, with its residual mismatch.</p>{{ judges }}<h3>DBG within familiarity strata</h3>{{ strata }}"
    "{% if nulls %}<h3>Organisms against their null family</h3><p>The planted gap (DBG minus the null family's mean) "
    "and the same gap at equal familiarity; the share familiarity explains is one minus their ratio.</p>"
    "{{ nulls }}{% endif %}"
)


def write_familiarity_section(paths: RunDir, result: FamiliarityResult) -> None:
    """figures/familiarity_section.html (title line + body), which the report includes."""
    body = render(
        _SECTION,
        level=f"{result.level:.0%}",
        n_boot=result.n_boot,
        judges=table_html(JUDGE_HEADER, judge_rows(result)),
        strata=table_html(STRATA_HEADER, strata_rows(result)),
        nulls=table_html(NULL_HEADER, null_rows(result)) if result.organisms else None,
    )
    paths.figures.mkdir(parents=True, exist_ok=True)
    atomic_write_text(paths.figures / SECTION_FILE, SECTION_TITLE + "\n" + body)
