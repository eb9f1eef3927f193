"""The run report: the DBG section and the lenses beside it, then whatever later steps left (validation, attention,
interventions, steering)."""

from __future__ import annotations

from pathlib import Path

from interp.analysis.lenses import run_gold_lenses
from interp.report.dbg import bias_lenses_section, dbg_section
from interp.report.html import write_report
from interp.run.store import RunDir
from interp.templating import Markup


def build_report(run_dir: Path) -> Path:
    paths = RunDir(Path(run_dir))
    summary = paths.read_summary()
    figures = paths.figures
    sections = [("Self-preference: DBG (judge win rate for its own responses minus gold)", dbg_section(summary, figures))]
    config = paths.read_config() if paths.config.is_file() else None
    lenses = run_gold_lenses(paths.root, n_boot=config.n_boot if config else 1000, seed=config.seed if config else 0)
    if lenses:
        sections.append(("Beside DBG: unjustified and legitimate self-preference, Evaluator Quality Baseline", bias_lenses_section(lenses)))
    for name in ("validation_section.html", "attention_section.html", "intervention_section.html", "steering_section.html"):
        part = figures / name
        if part.exists():
            title, _, content = part.read_text().partition("\n")
            sections.append((title, Markup(content)))  # a section the toolkit rendered (escaped) itself
    path = paths.report
    write_report(path, f"Self-preference report: {' vs '.join(summary['models'])}", sections)
    return path
