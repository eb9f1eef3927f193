"""Options several commands share: where their local models run (`--device`, `--dtype`), `--overwrite`, and
`--json` for the results a command ends with (`finish`: the rich table of `interp.report.terminal`, or the same
as JSON)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer

from interp.config import PlacementKeys, validate_config
from interp.core.timings import Timings
from interp.storage import OVERWRITE_FLAG

if TYPE_CHECKING:
    from interp.report.payload import ResultsPayload

DEVICE_HELP = "cpu | cuda | cuda:N | mps | auto (a GPU when there is one); default: the config's, else auto"
DTYPE_HELP = "float32 | bfloat16 | float16; default: the config's, else float32 on the CPU and bfloat16 on a GPU"


def device_option() -> Optional[str]:
    """The `--device` option: where the models run."""
    return typer.Option(None, "--device", help=DEVICE_HELP)


def dtype_option() -> Optional[str]:
    """The `--dtype` option: the models' precision."""
    return typer.Option(None, "--dtype", help=DTYPE_HELP)


def overwrite_option() -> bool:
    """The `--overwrite` option: write into a folder that holds other files."""
    return typer.Option(
        False,
        OVERWRITE_FLAG,
        help="write into an --out folder that holds files interp did not write (files of the same names are replaced)",
    )


def placement_keys(device: str | None, dtype: str | None, base: PlacementKeys | None = None) -> PlacementKeys:
    """The flags over a config's keys (a flag left out keeps the config's value); a bad value is one line."""
    keys = (base or PlacementKeys()).model_dump(include={"device", "dtype", "device_map"})
    keys |= {k: v for k, v in {"device": device, "dtype": dtype}.items() if v is not None}
    return validate_config(PlacementKeys, keys, "--device/--dtype")


def max_memory_option() -> Optional[float]:
    """The `--max-memory` option: GB of judge models held at once."""
    return typer.Option(
        None,
        "--max-memory",
        min=0.0,
        help="GB of judge models held at once: a judge whose work is done is let go beyond it (default: the "
        "config's max_memory, else half the memory available)",
    )


def executor_option() -> Optional[str]:
    """The `--executor` option: where the (judge, variant) tasks run."""
    return typer.Option(
        None,
        "--executor",
        help="where the (judge, variant) tasks run: local (this process, the default) or ray (a Ray cluster; "
        "needs Ray: the package's ray extra, or pip install ray)",
    )


def json_option():
    """The `--json` option: print the results as JSON."""
    return typer.Option(False, "--json", help="print the results as JSON (stdout holds only the JSON)")


def positions_option(default: str | None):
    """The `--positions` option: where the interventions edit, "all" (today's: queries outside the target span,
    every position of a node) or "final" (the verdict position alone, which the cached path re-judges fast)."""
    return typer.Option(
        default,
        "--positions",
        help="where the edits act: all (attention from every query outside the target span, a node at every "
        "position) | final (the verdict position alone: re-judged over the clean pass's cached keys and values); "
        "recorded in the JSON" + (" (default: all)" if default == "all" else " (default: the spec's own)"),
    )


def path_option():
    """The `--path` option: how verdict-position variants are re-judged."""
    return typer.Option(
        "auto",
        "--path",
        help="auto (final-position edits over the clean pass's cached keys and values, others in full) | cached "
        "(refuse an edit the cached path cannot represent) | full (every variant in a full pass)",
    )


def timings_option():
    """The `--timings` option: say where the time went."""
    return typer.Option(
        False,
        "--timings",
        help="say where the time went (each step's seconds), torch's thread counts and the peak memory",
    )


def finish(payload: ResultsPayload, as_json: bool, *, timings: Timings | None = None) -> None:
    """End a command with its results: the terminal table, or with --json the same content as JSON.

    `timings` (`--timings`): each step's seconds and the thread count, after the table (under "timings" in JSON).
    """
    from interp.report.payload import ResultsPayload
    from interp.report.terminal import payload_json, print_results

    if timings is not None:
        payload = payload.merged(ResultsPayload.model_validate({"timings": timings.record()}))
    if as_json:
        typer.echo(payload_json(payload))
    else:
        print_results(payload)
