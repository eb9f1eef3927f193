"""Commands of the causal experiments over a finished run: intervene, sweep, steer, steer-sweep."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from interp.cli.options import (
    device_option,
    dtype_option,
    executor_option,
    finish,
    json_option,
    max_memory_option,
    path_option,
    placement_keys,
    positions_option,
    timings_option,
)
from interp.formatting import pct, pts_interval

if TYPE_CHECKING:
    from interp.results.studies import SteeringTable


def refresh_report(run_dir: Path) -> Path | None:
    """Rebuild the run's report (None when the run has no summary to build it from)."""
    from interp.report.build import build_report
    from interp.run.store import RunDir

    paths = RunDir(Path(run_dir))
    if not paths.summary.exists():
        return None
    with paths.writer():
        return build_report(run_dir)


def _run_summary(run_dir: Path) -> dict | None:
    from interp.run.store import RunDir

    paths = RunDir(Path(run_dir))
    return paths.read_summary() if paths.summary.exists() else None


def intervene(
    run_dir: Path = typer.Argument(..., help="a finished DBG run directory"),
    spec_path: Optional[Path] = typer.Option(
        None, "--spec", help="intervention spec (TOML), e.g. experiments/configs/ablation_example.toml"
    ),
    all_layers: bool = typer.Option(
        False, "--all-layers", help="mask the judge's own answer at every layer and head (nothing is chosen)"
    ),
    top_heads: Optional[int] = typer.Option(
        None,
        "--top-heads",
        help="mask the judge's K heads with the largest own-minus-other attention, chosen on the selection share",
    ),
    selection_share: Optional[float] = typer.Option(
        None,
        "--selection-share",
        help="share of the run's items that choose heads (seeded by --split-seed); the rest test them",
    ),
    split_seed: int = typer.Option(0, "--split-seed", help="seed of the selection / test split"),
    control_judge: Optional[list[str]] = typer.Option(
        None,
        "--control-judge",
        help="control judges that read the same pairs and wrote neither answer: repeat the option or give a "
        "comma-separated list; at least 3 for a self-preference verdict (default: for an organism, the "
        "other null organisms of its base, in the run and shipped); 'none' for none",
    ),
    random_head_sets: Optional[int] = typer.Option(
        None,
        "--random-head-sets",
        help="random head sets of the same size for --top-heads (default: the fewest that can reach the test's "
        "level after Holm over the tested judges: 19 for one, 39 for two)",
    ),
    test_alpha: float = typer.Option(
        0.05, "--test-alpha", help="the test's level (a spec's alpha is its mask strength)"
    ),
    alpha: Optional[float] = typer.Option(None, "--alpha", hidden=True),
    specificity: str = typer.Option(
        "margin",
        "--specificity",
        help="the specificity check a causal verdict requires (that the edit acts on the own answer, not on how "
        "decisive every verdict is): margin (the margin-adjusted intercept test, the only one; 'none' is refused)",
    ),
    judge: Optional[list[str]] = typer.Option(
        None,
        "--judge",
        help="judge(s) to test (default: every judge that is also an author); several are Holm-corrected",
    ),
    backend: Optional[str] = typer.Option(None, "--backend", "-b", help="default: the run's backend"),
    controls: bool = typer.Option(
        False, help="also the other-span and random-span masks (descriptive, not part of the decision)"
    ),
    site: str = typer.Option(
        "attention",
        "--site",
        help="what --top-heads / --all-layers act on: attention (the own-answer mask) or head_output (the "
        "heads' outputs, with --op)",
    ),
    op: Optional[str] = typer.Option(
        None, "--op", help="with --site head_output: zero | mean (default) | resample | patch | a registered kind"
    ),
    positions: Optional[str] = positions_option(None),
    path: str = path_option(),
    max_memory: Optional[float] = max_memory_option(),
    executor: Optional[str] = executor_option(),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
    as_json: bool = json_option(),
    timings: bool = timings_option(),
) -> None:
    """Test for a causal effect of attention on self-preference: re-judge under a mask of the judge's own
    answer; the judge's change against the spread of at least 3 control judges' changes (Crawford-Howell,
    one-sided in the removal direction), and random head sets for chosen heads (responses and gold held fixed);
    causal only where the specificity check passes too (--specificity)."""
    from interp.causal.design import design_from_options
    from interp.causal.intervene import intervene_run
    from interp.config import gb_bytes
    from interp.core.timings import Timings
    from interp.engine.executor import Execution
    from interp.errors import InterpError
    from interp.hooks.nodes import as_intervention
    from interp.report.interventions import intervention_section
    from interp.report.terminal import results_payload
    from interp.run.store import RunDir
    from interp.studies.positions import spec_at_positions

    if alpha is not None:
        raise InterpError(
            f"--alpha {alpha:g}: alpha is a spec's mask strength (0 masks); the test's level is --test-alpha {alpha:g}"
        )
    design = design_from_options(
        spec_given=spec_path is not None,
        all_layers=all_layers,
        top_heads=top_heads,
        control_judge=control_judge,
        selection_share=selection_share,
        split_seed=split_seed,
        random_head_sets=random_head_sets,
        test_alpha=test_alpha,
        span_controls=controls,
        site=site,
        op=op,
        specificity=specificity,
    )
    where = placement_keys(device, dtype)
    spec = as_intervention(spec_path) if spec_path is not None else None
    spec = spec_at_positions(spec, positions, path)
    steps = Timings.started()
    with steps.step("causal test"):
        result = intervene_run(
            run_dir,
            spec,
            design=design,
            judges=judge,
            execution=Execution(
                backend=backend, where=where, max_memory=gb_bytes(max_memory), executor=executor, path=path
            ),
        )
    with RunDir(run_dir).writer():
        intervention_section([result], RunDir(run_dir).figures)
    reused = result.reused
    if not as_json:
        typer.echo(
            f"reused {reused.responses} responses (generated {reused.responses_generated}) and "
            f"{reused.gold_verdicts} gold verdicts"
        )
    files = {"report": report} if (report := refresh_report(run_dir)) is not None else {}
    finish(
        results_payload(_run_summary(run_dir), causal=result.judges, n_items=result.n_items, files=files),
        as_json,
        timings=steps.ended() if timings else None,
    )


def sweep(
    config: Path = typer.Argument(..., help="sweep config (TOML), e.g. experiments/configs/ablation_sweep.toml"),
    max_memory: Optional[float] = max_memory_option(),
    executor: Optional[str] = executor_option(),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
    as_json: bool = json_option(),
) -> None:
    """Sweep interventions (layers, bands, top-k vs random heads, alphas, targets) over a run; resumable."""
    from interp.config import gb_bytes
    from interp.metrics.tables import read_table_rows
    from interp.report.terminal import results_payload
    from interp.studies.sweeps import load_sweep_config, run_sweep

    sweep_config = load_sweep_config(config)
    results = run_sweep(
        sweep_config,
        where=placement_keys(device, dtype, sweep_config),
        executor=executor,
        max_memory=gb_bytes(max_memory),
    )
    files = {"results": results} | {figure.stem: figure for figure in sorted(results.parent.glob("effect_vs_*.png"))}
    payload = results_payload(
        _run_summary(Path(sweep_config.run)),
        sweep=[row for _, row in read_table_rows(results, ("judge", "effect"))],
        files=files,
    )
    finish(payload, as_json)


def _echo_results(path: Path) -> None:
    typer.echo(f"results: {path}")
    for figure in sorted(path.parent.glob("effect_vs_*.png")):
        typer.echo(f"figure: {figure}")


def steer_sweep(
    config: Path = typer.Argument(
        ..., help="steering sweep config (TOML), e.g. experiments/configs/steering_sweep.toml"
    ),
    max_memory: Optional[float] = max_memory_option(),
    executor: Optional[str] = executor_option(),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
) -> None:
    """Sweep direction steering (coefficients x layers, plus removal) over a run; resumable."""
    from interp.config import gb_bytes
    from interp.studies.sweeps import load_steering_sweep, run_steering_sweep

    where = placement_keys(device, dtype, load_steering_sweep(config))
    _echo_results(run_steering_sweep(config, where=where, executor=executor, max_memory=gb_bytes(max_memory)))


def table_lines(table: SteeringTable) -> list[str]:
    """Plain-text lines of the table, for a command line."""
    lines = []
    for judge, p in table.probe.items():
        acc, n = p.accuracy, p.n
        lines.append(
            f"{judge}: direction at layer {p.layer} ({p.position}), probe accuracy train {pct(acc.train)} "
            f"(n={n.train_examples}), held-out {pct(acc.heldout)} (n={n.heldout_examples}); "
            f"paired train {pct(acc.train_paired)}, held-out {pct(acc.heldout_paired)}; "
            f"{n.train_items} train / {n.heldout_items} held-out items"
        )
    for r in table.rows:
        lines.append(
            f"  {r.judge} {r.intervention:>18}: DBG {pts_interval(r.dbg_hard, r.dbg_ci)} pts, "
            f"P(own) {r.mean_p_own:.3f}, "
            f"change {pts_interval(r.effect.mean, r.effect.ci)} pts, gold agreement "
            f"{pct(r.gold_agreement)}"
        )
    return lines


def steer(
    run_dir: Path = typer.Argument(..., help="a finished DBG run directory (judged with attention on)"),
    layer: Optional[int] = typer.Option(
        None, "--layer", help="residual layer of the self-recognition direction (default: middle)"
    ),
    coefficient: float = typer.Option(
        -1.0, "--coefficient", help="reversal strength, in units of the direction's norm"
    ),
    k_heads: Optional[int] = typer.Option(
        None, "--k-heads", help="other-emphasis on the top-k own-minus-other heads (default: all heads)"
    ),
    judge: Optional[str] = typer.Option(None, "--judge"),
    backend: Optional[str] = typer.Option(None, "--backend", "-b"),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
) -> None:
    """Steering under the causal test: self-mask, other-emphasis, direction removal and reversal vs none."""
    from interp.studies.steering import SteeringSettings, steering_table, table_paths

    where = placement_keys(device, dtype)
    settings = SteeringSettings(layer=layer, coefficient=coefficient, k_heads=k_heads)
    table = steering_table(Path(run_dir), judge, settings=settings, backend=backend, where=where)
    for line in table_lines(table):
        typer.echo(line)
    typer.echo(f"table: {table_paths(table)['csv']}")
    if (report := refresh_report(run_dir)) is not None:
        typer.echo(f"report: {report}")
