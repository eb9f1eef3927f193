"""Commands of the causal experiments over a finished run: intervene, sweep, steer, steer-sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from interp.cli.options import device_option, dtype_option, placement_keys
from interp.report.steering import interval_text, pct0


def _refresh_report(run_dir: Path) -> None:
    from interp.report.build import build_report
    from interp.run.store import RunDir

    paths = RunDir(Path(run_dir))
    if paths.summary.exists():
        with paths.writer():
            typer.echo(f"report: {build_report(run_dir)}")


def intervene(
    run_dir: Path = typer.Argument(..., help="a finished DBG run directory"),
    spec_path: Path = typer.Option(..., "--spec", help="intervention spec (TOML), e.g. experiments/ablation_example.toml"),
    judge: Optional[list[str]] = typer.Option(None, "--judge", help="judge(s) to test (default: every judge that is also an author)"),
    backend: Optional[str] = typer.Option(None, "--backend", "-b", help="default: the run's backend"),
    controls: bool = typer.Option(True, help="also run the other-span and random-span controls (self-span specs)"),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
) -> None:
    """Re-run only judging under an intervention (responses and gold held fixed) and test for a causal effect."""
    from hooks.spec import load_spec
    from interp.experiments.causal import intervene_run
    from interp.report.interventions import intervention_section
    from interp.run.store import RunDir

    where = placement_keys(device, dtype)
    spec = load_spec(spec_path)
    result = intervene_run(run_dir, spec, judges=judge, backend=backend, with_controls=controls, where=where)
    with RunDir(run_dir).writer():
        intervention_section([result], RunDir(run_dir).figures)
    for judge_name, r in result["judges"].items():
        typer.echo(f"{judge_name}: DBG {100 * r['before']['dbg_hard']:+.1f} pts before; " + "; ".join(
            f"{name}: DBG {100 * v['dbg_hard']:+.1f}, P(own) {r['before']['mean_p_own']:.3f} -> {v['mean_p_own']:.3f}" for name, v in r["variants"].items()
        ))
        typer.echo(r["verdict"])
    reused = result["reused"]
    typer.echo(f"reused {reused['responses']} responses (generated {reused['responses_generated']}) and {reused['gold_verdicts']} gold verdicts")
    _refresh_report(run_dir)


def _echo_results(path: Path) -> None:
    typer.echo(f"results: {path}")
    for figure in sorted(path.parent.glob("effect_vs_*.png")):
        typer.echo(f"figure: {figure}")


def sweep(
    config: Path = typer.Argument(..., help="sweep config (TOML), e.g. experiments/ablation_sweep.toml"),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
) -> None:
    """Sweep interventions (layers, bands, top-k vs random heads, alphas, targets) over a run; resumable."""
    from interp.experiments.sweeps import load_sweep_config, run_sweep

    _echo_results(run_sweep(config, where=placement_keys(device, dtype, load_sweep_config(config))))


def steer_sweep(
    config: Path = typer.Argument(..., help="steering sweep config (TOML), e.g. experiments/steering_sweep.toml"),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
) -> None:
    """Sweep direction steering (coefficients x layers, plus removal) over a run; resumable."""
    from interp.experiments.sweeps import load_steering_sweep, run_steering_sweep

    _echo_results(run_steering_sweep(config, where=placement_keys(device, dtype, load_steering_sweep(config))))


def table_lines(table: dict) -> list[str]:
    """Plain-text lines of the table, for a command line."""
    lines = []
    for judge, p in table["probe"].items():
        acc = p["accuracy"]
        lines.append(
            f"{judge}: direction at layer {p['layer']} ({p['position']}), probe accuracy train {100 * acc['train']:.0f}% "
            f"(n={p['n']['train_examples']}), held-out {pct0(acc['heldout'])} (n={p['n']['heldout_examples']}); "
            f"paired train {pct0(acc.get('train_paired'))}, held-out {pct0(acc.get('heldout_paired'))}; "
            f"{p['n']['train_items']} train / {p['n']['heldout_items']} held-out items"
        )
    for r in table["rows"]:
        lines.append(
            f"  {r['judge']} {r['intervention']:>18}: DBG {interval_text(r['dbg_hard'], r['dbg_ci'])} pts, P(own) {r['mean_p_own']:.3f}, "
            f"change {interval_text(r['effect']['mean'], r['effect']['ci'])} pts, gold agreement {100 * r['gold_agreement']:.0f}%"
        )
    return lines


def steer(
    run_dir: Path = typer.Argument(..., help="a finished DBG run directory (judged with attention on)"),
    layer: Optional[int] = typer.Option(None, "--layer", help="residual layer of the self-recognition direction (default: middle)"),
    coefficient: float = typer.Option(-1.0, "--coefficient", help="reversal strength, in units of the direction's norm"),
    k_heads: Optional[int] = typer.Option(None, "--k-heads", help="other-emphasis on the top-k own-minus-other heads (default: all heads)"),
    judge: Optional[str] = typer.Option(None, "--judge"),
    backend: Optional[str] = typer.Option(None, "--backend", "-b"),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
) -> None:
    """Steering under the causal test: self-mask, other-emphasis, direction removal and reversal vs none."""
    from interp.experiments.steering import steering_table

    where = placement_keys(device, dtype)
    table = steering_table(Path(run_dir), judge, layer=layer, coefficient=coefficient, k_heads=k_heads, backend=backend, where=where)
    for line in table_lines(table):
        typer.echo(line)
    typer.echo(f"table: {table['files']['csv']}")
    _refresh_report(run_dir)
