"""`interp explain RUN --judge J`: where the judge's self-preference lives, every rung under the causal test."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from interp.cli.options import (
    device_option,
    dtype_option,
    executor_option,
    json_option,
    max_memory_option,
    path_option,
    placement_keys,
    positions_option,
    timings_option,
)


def explain(
    run_dir: Path = typer.Argument(
        ...,
        help='a finished DBG run directory whose judges include J (judged with attention = "final" for the '
        "attention method)",
    ),
    judge: str = typer.Option(
        ..., "--judge", help="the judge to explain (its name in the run: alias or adapter folder)"
    ),
    top_k: int = typer.Option(3, "--top-k", help="heads per head candidate (chosen on the selection split)"),
    mlp_k: int = typer.Option(2, "--mlp-k", help="MLP layers per MLP candidate"),
    selection_share: float = typer.Option(
        0.4, "--selection-share", help="share of the run's items that localise; the rest test"
    ),
    split_seed: int = typer.Option(0, "--split-seed", help="seed of the selection / test split"),
    control_judge: Optional[list[str]] = typer.Option(
        None,
        "--control-judge",
        help="control judges (at least 3 for a verdict; default: an organism's null family, as for interp intervene)",
    ),
    method: Optional[list[str]] = typer.Option(
        None, "--method", "-m", help="attention | atp | atp-output | atp-mlp | direction (repeatable; default: all)"
    ),
    routes: bool = typer.Option(
        True, help="the route (pattern or content) of each head candidate: four more causal tests per head set"
    ),
    counterfactual: str = typer.Option(
        "other",
        "--counterfactual",
        help="what the route parts put in the own answer's place: other (the pair's other answer) | reference",
    ),
    alt_counterfactual: str = typer.Option(
        "reference",
        "--alt-counterfactual",
        help="a second counterfactual whose route is reported beside the default's: reference (a third text, the "
        "item's reference answer, cut or cycled to the own answer's length) | other | none",
    ),
    random_sets: int = typer.Option(1, "--random-sets", help="random candidates of the same sizes, per kind"),
    test_alpha: float = typer.Option(
        0.05,
        "--test-alpha",
        help="the test's level (the multiplicity plan: Holm across the methods' primaries, routes gate-kept, random "
        "sets outside; the share's interval at 1 - level)",
    ),
    gap_gate: bool = typer.Option(
        True,
        "--gap-gate/--no-gap-gate",
        help="--no-gap-gate (a diagnostic): every candidate tested whatever the gap and the share, causal on its "
        "adjusted p against --test-alpha alone; the JSON says gap_gate: false",
    ),
    positions: str = positions_option("all"),
    path: str = path_option(),
    max_memory: Optional[float] = max_memory_option(),
    executor: Optional[str] = executor_option(),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
    progress: bool = typer.Option(True, help="progress bars"),
    as_json: bool = json_option(),
    timings: bool = timings_option(),
) -> None:
    """Localise with every single-judge method on the selection split, test each method's top candidates and random
    sets of the same size on the test split (judge against its controls, the multiplicity plan), name each head
    set's route; write RUN/explain/<judge>-<key>/explain.json and refresh report.html."""
    import json

    from interp.causal.design import parse_control_judges
    from interp.cli.experiments import refresh_report
    from interp.config import gb_bytes
    from interp.core.timings import Timings
    from interp.results.codec import dump
    from interp.studies.explain import EXPLAIN_METHODS, Request, explain_run

    steps = Timings.started()
    wall = time.perf_counter()

    request = Request(
        top_k=top_k,
        mlp_k=mlp_k,
        selection_share=selection_share,
        split_seed=split_seed,
        control_judges=parse_control_judges(control_judge),
        methods=tuple(method or EXPLAIN_METHODS),
        routes=routes,
        counterfactual=counterfactual,
        alt_counterfactual=None if alt_counterfactual == "none" else alt_counterfactual,
        random_sets=random_sets,
        test_alpha=test_alpha,
        gap_gate=gap_gate,
        positions=positions,
        path=path,
    )
    result = explain_run(
        Path(run_dir),
        judge,
        request,
        where=placement_keys(device, dtype),
        progress=progress and not as_json,
        executor=executor,
        max_memory=gb_bytes(max_memory),
        timings=steps,
    )
    from interp.report.explain import explain_section
    from interp.run.store import RunDir

    paths = RunDir(Path(run_dir))
    with paths.writer():
        explain_section(result, paths.figures)
    with steps.step("report"):
        report = refresh_report(Path(run_dir))
    shown = _ladder_timings(steps, time.perf_counter() - wall) if timings else None
    if as_json:
        typer.echo(json.dumps(dump(result) | ({"timings": shown} if shown else {})))
        return
    from interp.report.explain import print_explanation
    from interp.report.payload import ResultsPayload
    from interp.report.terminal import print_results

    print_explanation(result)
    if report is not None:
        typer.echo(f"report: {report}")
    if shown:
        print_results(ResultsPayload.model_validate({"timings": shown}))
        typer.echo(f"ladder wall time: {shown['wall_s']:.1f} s")


def _ladder_timings(steps, wall_s: float) -> dict:
    """`--timings`: each rung's seconds (load, localise judge, localise controls, plan candidates, candidates,
    routes, write, report), the ladder's wall time from the command's start, the threads and the peak memory."""
    return steps.ended().record() | {"wall_s": round(wall_s, 1)}
