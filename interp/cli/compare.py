"""`interp compare RUN RUN... [--by KEY] [--out DIR] [--json]`: DBG per judge across runs (Figures 3-4)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from interp.cli.options import json_option, overwrite_option


def compare(
    runs: list[Path] = typer.Argument(..., help="finished run directories (one or more)"),
    by: str = typer.Option(
        "n_parameters",
        "--by",
        help="the figure's x axis: n_parameters (judge size) or a config key that differs between the runs",
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="folder for compare.csv, dbg_by_<key>.png/.pdf and figure7_across_runs.png/.pdf"
    ),
    as_json: bool = json_option(),
    overwrite: bool = overwrite_option(),
) -> None:
    """DBG per judge of several runs side by side, with the config keys that differ; --json: a list of rows."""
    from interp.analysis.compare import compare_runs, own_minus_other_profiles
    from interp.report.compare import print_comparison, write_comparison
    from interp.report.terminal import payload_json
    from interp.storage import check_output_dir

    comparison = compare_runs(runs)
    comparison.axis_values(by)  # a key that does not differ is one line, before anything is written
    files = {}
    if out is not None:
        check_output_dir(out, overwrite=overwrite)
        profiles, _ = own_minus_other_profiles(runs)
        files = write_comparison(comparison, out, by=by, profiles=profiles)
    if as_json:
        typer.echo(payload_json(comparison.records()))
        return
    print_comparison(comparison)
    for name, path in files.items():
        typer.echo(f"{name}: {path}")
