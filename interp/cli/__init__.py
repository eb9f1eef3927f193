"""The `interp` command line: thin commands over the API.

Every command is registered through `command`, the one place that maps errors: bad input (an
`InterpError`) and a usage mistake (a missing option, an unknown flag) print one line on stderr starting
with "error:" and exit with code 2; no traceback, no usage box.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from typing import Callable

import typer

try:  # typer >= 0.25 carries its own copy of click; its usage errors are that copy's classes
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer on the real click
    from click import exceptions as click_exceptions

from interp.cli import attention, compare, experiments, explain, grade, localize, metrics, organism, restyle, run
from interp.core.cache_dir import check_cache_root
from interp.core.threads import set_torch_threads
from interp.errors import InterpError

app = typer.Typer(
    help="Why do LLM judges prefer their own answers? Measure it, look inside, intervene.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
metrics_app = typer.Typer(
    help=(
        "Seed metrics over judgment records: Chen et al. 2025 (SPR, JA, LSPR, HSPP), "
        "SALIERI, Preference Leakage Score, and every lens that applies to a DBG run."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
organism_app = typer.Typer(
    help="Model organisms: judges with a known answer (train, evaluate).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def one_line_errors(function: Callable) -> Callable:
    """An `InterpError` from the command becomes "error: ..." on stderr and exit code 2. Before the command runs
    (its arguments parsed, so `--help` and usage errors come first), the cache folder is checked: an
    INTERP_CACHE that is a file, lies under a file or cannot be written is refused before anything is written
    (`interp.core.cache_dir.check_cache_root`)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            check_cache_root()
            return function(*args, **kwargs)
        except InterpError as exc:
            end_progress_bars()
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None

    return wrapper


def end_progress_bars() -> None:
    """Close every progress bar still open (an error raised mid-loop leaves its bar's line ended by a \r,
    not a newline): closing ends that line, so the error line starts a line of its own in a log."""
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()


def command(target: typer.Typer, name: str, function: Callable) -> None:
    """Register `function` as command `name` of `target`, its errors printed in one line."""
    target.command(name)(one_line_errors(function))


command(app, "models", run.models)
command(app, "inspect", run.inspect)
command(app, "dbg", run.dbg)
command(app, "demo", run.demo)
command(app, "intervene", experiments.intervene)
command(app, "sweep", experiments.sweep)
command(app, "steer", experiments.steer)
command(app, "steer-sweep", experiments.steer_sweep)
command(app, "attention", attention.attention)
command(app, "compare", compare.compare)
command(app, "restyle", restyle.restyle)
command(app, "localize", localize.localize)
command(app, "explain", explain.explain)
command(app, "validate", organism.validate)
command(app, "grade", grade.grade)
command(metrics_app, "chen2025", metrics.chen2025_command)
command(metrics_app, "pls", metrics.pls_command)
command(metrics_app, "leaderboard", metrics.leaderboard_command)
command(metrics_app, "familiarity", metrics.familiarity_command)
command(metrics_app, "salieri", metrics.salieri_command)
command(metrics_app, "run", metrics.run_command)
command(metrics_app, "recognition", metrics.recognition_command)
command(organism_app, "train", organism.train)
command(organism_app, "evaluate", organism.evaluate)
app.add_typer(
    organism_app, name="organism", help="Model organisms: train a LoRA judge with a known answer, evaluate it."
)
app.add_typer(metrics_app, name="metrics", help="Seed-paper metrics (Chen et al., SALIERI, PLS) over judgment records.")


def _quiet_libraries() -> None:
    """Errors must be one line on stderr: no weight-loading progress bars or library warnings there."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    # transformers reads TRANSFORMERS_VERBOSITY once, when first imported: where it was imported before `main`
    # (a notebook, a test's forked CLI), the variable alone would change nothing
    level = hf_logging.log_levels.get(os.environ["TRANSFORMERS_VERBOSITY"].lower())
    if level is not None:
        hf_logging.set_verbosity(level)
    warnings.filterwarnings("ignore")


def main(args: list[str] | None = None) -> None:
    """The `interp` command line."""
    _quiet_libraries()
    try:
        set_torch_threads()  # the cores really free now (INTERP_THREADS overrides): see interp.core.threads
    except InterpError as exc:  # a bad INTERP_THREADS
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    try:
        code = app(args=args, standalone_mode=False)
    except click_exceptions.NoArgsIsHelpError as exc:
        exc.show()
        code = 0
    except click_exceptions.UsageError as exc:  # a missing option or an unknown flag: one line, not typer's usage box
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""
        typer.echo(f"error: {exc.format_message()}{hint}", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
