"""`interp attention RUN_DIR`: the Figure 7 analysis of a run, as figures, tables and the report section."""

from __future__ import annotations

from pathlib import Path

import typer


def attention(
    run_dir: Path = typer.Argument(..., help="a DBG run directory (judged with attention on)"),
    relative_depth: bool = typer.Option(False, "--relative-depth", help="draw layers on a 0-1 depth axis"),
    paper_layout: bool = typer.Option(
        False, "--paper-layout", help="the DBG paper's orientation: rows are response authors, columns judges"
    ),
) -> None:
    """Figure 7: per-layer and per-head attention over own vs other responses, with length control."""
    from interp.analysis.attention_stats import attention_judges
    from interp.report.attention import write_attention_figures
    from interp.report.build import build_report
    from interp.run.store import RunDir

    paths = RunDir(Path(run_dir))
    attention_judges(run_dir)  # a missing run, or one without judgments, fails before the lock file is made
    if paths.summary.is_file():  # the report is refreshed from it: a summary this interp cannot read (a newer
        paths.read_summary()  # schema_version, a damaged file) is one line before figures/ is written
    with paths.writer():
        written = write_attention_figures(run_dir, relative_depth=relative_depth, transpose=paper_layout)
        for name, path in written.items():
            typer.echo(f"{name}: {path}")
        if paths.summary.is_file():  # refresh the run's report so it carries the new section
            typer.echo(f"report: {build_report(run_dir)}")
