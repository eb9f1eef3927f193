"""The run report: the DBG section and the lenses beside it, then whatever later steps left (validation, attention,
interventions, steering)."""

from __future__ import annotations

from pathlib import Path

from interp.analysis.lenses import run_gold_lenses
from interp.report.dbg import bias_lenses_section, dbg_section, human_section
from interp.report.html import write_report
from interp.report.judging_modes import mode_sections
from interp.run.store import RunDir
from interp.templating import Markup

# The headline first: DBG, the causal verdicts, Figure 7; then what qualifies it. Sections a later step wrote
# (figures/<name>, first line its title), in this order after DBG.
HEADLINE_SECTIONS = (
    "restyle_section.html",
    "intervention_section.html",
    "explain_section.html",
    "attention_section.html",
)
LATER_SECTIONS = ("validation_section.html", "steering_section.html", "familiarity_section.html")


def _written_section(figures: Path, name: str) -> tuple[str, Markup] | None:
    part = figures / name
    if not part.exists():
        return None
    title, _, content = part.read_text().partition("\n")
    return title, Markup(content)  # a section the toolkit rendered (escaped) itself


def build_report(run_dir: Path) -> Path:
    """RUN/report.html: DBG, the causal test and Figure 7 first (long tables folded in `<details>`), then the
    lenses beside DBG, validation and steering; a table of contents on top."""
    paths = RunDir(Path(run_dir))
    summary = paths.read_summary()
    figures = paths.figures
    config = paths.read_config() if paths.config.is_file() else None
    if config is not None and config.mode == "pointwise":  # 1-5 scores, no pairs: no DBG, no lenses over pairs
        write_report(
            paths.report, f"Pointwise scores: {' vs '.join(summary.models)}", mode_sections(paths, config, summary)
        )
        return paths.report
    sections = [
        ("Self-preference: DBG (judge win rate for its own responses minus gold)", dbg_section(summary, figures))
    ]
    sections += mode_sections(paths, config, summary)
    if summary.gold.human:
        sections.append(("Gold against human labels (Table 1)", human_section(summary.gold.human)))
    sections += [s for name in HEADLINE_SECTIONS if (s := _written_section(figures, name)) is not None]
    lenses = run_gold_lenses(paths.root, n_boot=config.n_boot if config else 1000, seed=config.seed if config else 0)
    if lenses:
        sections.append(
            (
                "Beside DBG: unjustified and legitimate self-preference, Evaluator Quality Baseline",
                bias_lenses_section(lenses),
            )
        )
    sections += [s for name in LATER_SECTIONS if (s := _written_section(figures, name)) is not None]
    path = paths.report
    write_report(path, f"Self-preference report: {' vs '.join(summary.models)}", sections)
    return path
