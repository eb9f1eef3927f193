"""`interp localize RUN --judge J`: rank every (layer, head) by its part in one judge's P(own) (docs/localize.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from interp.cli.options import device_option, dtype_option, json_option, placement_keys


def localize(
    run_dir: Path = typer.Argument(..., help="a finished DBG run directory whose judges include J"),
    judge: str = typer.Option(
        ..., "--judge", help="the judge to localise (its name in the run: alias or adapter folder)"
    ),
    method: Optional[list[str]] = typer.Option(
        None,
        "--method",
        "-m",
        help="attention | atp | atp-output | mask | atp-mlp (MLP layers; repeatable; default: attention, atp, "
        "atp-output)",
    ),
    items: Optional[int] = typer.Option(
        None, "--items", min=1, help="AtP on a seeded subset of N items (default: every item of the run)"
    ),
    mask_items: int = typer.Option(
        8, "--mask-items", min=1, help="items of the per-head mask scan (one re-judging of them per head)"
    ),
    top_k: int = typer.Option(10, "--top-k", min=1, help="heads boxed in each heatmap"),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
    progress: bool = typer.Option(True, help="progress bars"),
    as_json: bool = json_option(),
) -> None:
    """Which heads carry the judge's preference for its own answers: every (layer, head) ranked per method, one
    heatmap per method with the top heads boxed (RUN/figures/localize_<judge>-<hash>_<method>.png), the table as CSV."""
    import json

    from interp.locate.heads import (
        DEFAULT_METHODS,
        LocalizeItems,
        check_methods,
        heads_payload,
        localize_run,
        run_judge,
    )
    from interp.report.localize import write_localize_figures
    from interp.run.store import RunDir, read_run

    methods = check_methods(method or DEFAULT_METHODS)
    run = read_run(Path(run_dir))
    name = run_judge(run, judge)
    table = localize_run(
        run,
        name,
        methods,
        on=LocalizeItems(n_items=items, n_mask_items=mask_items),
        where=placement_keys(device, dtype),
        progress=progress and not as_json,
    )
    with RunDir(Path(run_dir)).writer():
        written = write_localize_figures(table, run.dir.figures, name, top_k=top_k)
    if as_json:
        typer.echo(json.dumps(heads_payload(table)))
        return
    for m in dict.fromkeys(table["method"]):
        top = table[table["method"] == m].head(top_k)
        typer.echo(f"{m}: " + ", ".join(f"L{r.layer}H{r.head} {r.effect:+.3g}" for r in top.itertuples()))
    for key, path in written.items():
        typer.echo(f"{key}: {path}")
