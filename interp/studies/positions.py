"""Where a study's candidates edit: `--positions all` (today's default: an attention mask from every query after
the target span, a node at every position) or `final` (the verdict position alone, which the engine re-judges over
the clean pass's cached keys and values, `interp.engine.final_batch`). The default stays `all` until a registered
measurement (docs/explain.md) shows final-position edits remove at least as much of the gap on trained members."""

from __future__ import annotations

import dataclasses

from interp.engine.final_batch import check_path_option
from interp.errors import InterpError
from interp.hooks.final_row import POSITION_CHOICES, at_positions, final_row_problem


def check_positions(positions: str, path: str, routes: bool) -> None:
    """`--positions` and `--path` of a study, refused in one line each before anything is written: an unknown value,
    or `--path cached` where a variant would edit other positions (`--positions all`, or the route parts, which
    patch a head's pattern or values, read inside the attention over every position)."""
    if positions not in POSITION_CHOICES:
        raise InterpError(f"unknown --positions {positions!r}; use one of {', '.join(POSITION_CHOICES)}")
    check_path_option(path)
    if path == "cached" and positions != "final":
        raise InterpError(
            "--path cached: the cached final-position path cannot represent edits at every position; "
            "use --positions final (or --path auto)"
        )
    if path == "cached" and routes:
        raise InterpError(
            "--path cached: the route parts patch a head's pattern and values, which the cached final-position "
            "path cannot represent; add --no-routes (or use --path auto)"
        )


def planned_at(planned, positions: str):
    """A planned test (`interp.studies.candidates.Planned`) with its spec and every control's at `positions`."""
    if positions == "all":
        return planned
    return dataclasses.replace(
        planned,
        spec=at_positions(planned.spec, positions),
        control_specs={c: at_positions(s, positions) for c, s in planned.control_specs.items()},
    )


def spec_at_positions(spec, positions: str | None, path: str):
    """`interp intervene`'s spec at `--positions` (None: as the spec says), checked against `--path`: an unknown
    value, positions without a spec, or `--path cached` on a spec the cached path cannot represent is one line."""
    check_path_option(path)
    if positions is not None:
        if positions not in POSITION_CHOICES:
            raise InterpError(f"unknown --positions {positions!r}; use one of {', '.join(POSITION_CHOICES)}")
        if spec is None:
            raise InterpError(
                "--positions sets where a --spec edits; give --spec (the --top-heads and --all-layers "
                "designs edit at their own positions)"
            )
        spec = at_positions(spec, positions)
    if path == "cached":
        problem = "no --spec given" if spec is None else final_row_problem([spec])
        if problem is not None:
            raise InterpError(f"--path cached: the cached final-position path cannot represent this: {problem}")
    return spec
