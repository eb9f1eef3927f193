"""`interp grade FILE --kind code|math|choice`: verifiable grading of a file of answers (`interp.grading`).

Prints one JSON line per item (`id`, `correct`, `reason`) with --json, else a rich table and the count correct.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from interp.errors import InterpError
from interp.grading import GRADE_KINDS, Limits, grade_items, isolation, read_items
from interp.grading.grade import check_kind
from interp.grading.sandbox import require_isolation


def _plain(text: str):
    """A cell that shows `text` as it is: no rich markup read in it, a lone surrogate escaped (not a crash)."""
    from rich.text import Text

    return Text(text.encode("utf-8", errors="backslashreplace").decode("utf-8"))


def grade(
    file: Path = typer.Argument(
        ..., help="JSONL: one object per line with id, answer, and tests (code) or reference (math, choice)."
    ),
    kind: str = typer.Option(..., "--kind", help=f"what the answers are: {' | '.join(GRADE_KINDS)}"),
    as_json: bool = typer.Option(False, "--json", help="one JSON line per item: id, correct, reason"),
    timeout: float = typer.Option(10.0, "--timeout", min=0.1, help="code: wall-clock seconds per answer"),
    cpu: int = typer.Option(5, "--cpu", min=1, help="code: CPU seconds per answer"),
    memory_mib: int = typer.Option(
        1024,
        "--memory-mib",
        min=64,
        help="code: memory per answer (its sandbox is one process: its address space), MiB",
    ),
    disk_mib: int = typer.Option(32, "--disk-mib", min=1, help="code: disk space per answer, all its files, MiB"),
    workers: int = typer.Option(1, "--workers", min=1, help="code: answers run at once"),
) -> None:
    """Grade answers: math (boxed or final answer, normalised), choice (the letter A-E), code (its tests, sandboxed)."""
    check_kind(kind)
    # refused before the file is read: a limit out of its range (Limits), more sandboxes at once than 4 a core
    limits = Limits(cpu_s=cpu, wall_s=timeout, memory_bytes=memory_mib << 20, disk_bytes=disk_mib << 20)
    most = 4 * (os.cpu_count() or 1)
    if workers > most:
        raise InterpError(
            f"--workers {workers} is more sandboxes at once than this machine can run; use at most {most}"
        )
    items = read_items(file, kind)
    if kind == "code":
        require_isolation()  # refused where the answers would run unconfined, unless opted in
    grades = grade_items(items, kind, limits=limits, workers=workers)
    if as_json:
        for result in grades:
            typer.echo(json.dumps(result.to_json()))
        return
    from rich import box
    from rich.table import Table

    from interp.report.terminal import results_console

    table = Table(title=f"Grades ({kind})", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("id", overflow="fold")
    table.add_column("correct", no_wrap=True)
    table.add_column("reason", overflow="fold")
    correct = 0
    for result in grades:
        correct += result.correct
        table.add_row(
            _plain(result.id), "[green]yes[/green]" if result.correct else "[red]no[/red]", _plain(result.reason)
        )
    console = results_console()
    console.print(table)
    note = f"; sandbox: {isolation()}" if kind == "code" else ""
    console.print(f"{correct} of {len(items)} correct{note}", highlight=False)
