"""The report's sections and terminal lines for the judging modes beside plain pairwise judging: SALIERI's
pointwise scores and score (`mode = "pointwise"`), the graded answers and Chen et al.'s table (`grader`), and a
judge's chain of thought (`cot`)."""

from __future__ import annotations

from pathlib import Path

from interp.analysis.lenses import run_lenses
from interp.analysis.salieri_run import run_salieri
from interp.config import RunConfig
from interp.report.html import table_html
from interp.report.payload import PointwiseRow, ResultsPayload
from interp.results import codec
from interp.results.summary import RunSummary
from interp.run.store import RunDir
from interp.templating import Markup, render


def _join(*parts: Markup) -> Markup:
    return Markup("".join(str(part) for part in parts))


def pointwise_rows(summary: RunSummary | dict) -> list[PointwiseRow]:
    """Per judge and author: the mean expected 1-5 score, the mean parsed score and how many parsed, with the
    judge's reliability flag (`label_mass_reliability`; the codec gives a summary written before the flag its
    flag from its mass)."""
    return [
        PointwiseRow(
            judge=judge,
            author=author,
            **scores.model_dump(),
            reliable=not entry.unreliable_because,
            unreliable_because=list(entry.unreliable_because),
        )
        for judge, entry in (codec.parse(RunSummary, summary, "summary").pointwise or {}).items()
        for author, scores in entry.authors.items()
    ]


def pointwise_section(summary: RunSummary, salieri: dict | None) -> Markup:
    """The pointwise scores per judge and author, and each judge's SALIERI score (`run_salieri`)."""
    scores = table_html(
        ["judge", "author", "n", "mean expected score", "parsed", "mean parsed score", "reliable"],
        [
            [
                r.judge,
                r.author,
                r.n,
                r.mean_expected_score,
                r.n_parsed,
                r.mean_parsed_score if r.mean_parsed_score is not None else "n/a",
                "yes" if r.reliable else f"no ({'; '.join(r.unreliable_because)})",
            ]
            for r in pointwise_rows(summary)
        ],
    )
    intro = render(
        "<p class='note'>Each answer scored alone, 1-5, with the thesis' rubric prompt; the expected score "
        "is read from the score tokens after the judge's feedback and [RESULT]. Reference agent for "
        "SALIERI: {{ ref }}.</p>",
        ref=(salieri or {}).get("reference") or "none",
    )
    reports = [(judge, r) for judge, r in ((salieri or {}).get("judges") or {}).items() if r is not None]
    score = table_html(
        ["judge", "n", "origin", "SALIERI", "SALIERI interval", "pool", "histogram mismatch", "mean |gap|"],
        [
            [
                j,
                r["n_items"],
                r["origin"],
                r["salieri"],
                f"[{r['salieri_ci'][0]:.3f}, {r['salieri_ci'][1]:.3f}]",
                r["pool_model"],
                r["histogram_mismatch"],
                r["mean_abs_gap"],
            ]
            for j, r in reports
        ],
    )
    return _join(intro, scores, score)


def mode_sections(paths: RunDir, config: RunConfig | None, summary: RunSummary) -> list[tuple[str, Markup]]:
    """The sections a run's judging mode adds to its report (none for a plain pairwise run)."""
    if config is None:
        return []
    sections = []
    if config.mode == "pointwise":
        salieri = run_salieri(paths.root, n_boot=config.n_boot, seed=config.seed)
        sections.append(("SALIERI: pointwise 1-5 scores and the SALIERI score", pointwise_section(summary, salieri)))
    if summary.correctness:
        counts = summary.correctness
        graded = table_html(
            ["author", "graded", "correct"], [[a, c.graded, c.correct] for a, c in counts.authors.items()]
        )
        content = [
            render(
                "<p class='note'>Answers graded by the {{ g }} grader; {{ n }} items without a target left out.</p>",
                g=config.grader,
                n=counts.no_target,
            ),
            graded,
        ]
        chen = (
            run_lenses(paths.root, n_boot=config.n_boot, seed=config.seed)["chen2025"]
            if config.mode == "pairwise"
            else None
        )
        if chen:
            content.append(
                table_html(
                    ["judge", "SPR", "JA", "LSPR", "HSPP"],
                    [[j, *(100 * e[m] for m in ("SPR", "JA", "LSPR", "HSPP"))] for j, e in chen.items()],
                )
            )
        sections.append(("Graded answers and Chen et al.'s metrics (percent)", _join(*content)))
    if config.cot != "none":
        records = paths.read_judgments()
        words = [len((r.rationale or "").split()) for r in records]
        note = (
            "<p class='note'>Judged with chain of thought (cot = {{ cot }}): each verdict read after the "
            'judge\'s rationale and "My final verdict is"; {{ n }} judgments, {{ w }} words of rationale on '
            "average (judgments.jsonl, field rationale).</p>"
        )
        sections.append(
            (
                "Judge-side chain of thought",
                render(note, cot=config.cot, n=len(records), w=f"{sum(words) / max(len(words), 1):.1f}"),
            )
        )
    return sections


def mode_payload(summary: RunSummary) -> ResultsPayload:
    """What a finished run's terminal output adds for its judging mode (`ResultsPayload.merged` puts it over the
    run's results)."""
    payload = ResultsPayload()
    if summary.pointwise:
        payload.pointwise = pointwise_rows(summary)
    if summary.correctness:
        payload.correctness = summary.correctness
    return payload


def is_pointwise(run_dir: Path) -> bool:
    """Whether the run at `run_dir` was judged in SALIERI's pointwise mode (1-5 scores, not pairs)."""
    paths = RunDir(Path(run_dir))
    return paths.config.is_file() and paths.read_config().mode == "pointwise"
