"""The `interp` command line. Bad input -> one line on stderr starting with "error:", exit code 2."""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Optional

import typer

from interp.errors import InterpError

app = typer.Typer(help="Why do LLM judges prefer their own answers? Measure it, look inside, intervene.", no_args_is_help=True, pretty_exceptions_enable=False)


def _print_json(value) -> None:
    typer.echo(json.dumps(value, indent=2, allow_nan=False))


@app.command()
def models(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """List the built-in model aliases (source, pre/post-trained, layers, heads)."""
    from interp.models import describe_aliases

    rows = describe_aliases()
    if as_json:
        _print_json(rows)
        return
    for row in rows:
        typer.echo(f"{row['alias']:24} {row['kind']:5} layers={row['layers']:<3} heads={row['heads']:<3} {row['source']}")


@app.command()
def inspect(
    model: str = typer.Option("smollm2-135m-instruct", "--model", "-m", help="alias, HF id, local folder or .gguf file"),
    backend: str = typer.Option("hf", "--backend", "-b", help="hf | transformer_lens | nnsight"),
    query: str = typer.Option(..., "--query", "-q"),
    response_a: str = typer.Option(..., "--response-a"),
    response_b: str = typer.Option(..., "--response-b"),
    task: str = typer.Option("helpfulness", "--task", help="helpfulness | truthfulness | translation"),
    queries: str = typer.Option("final", "--queries", help="final | after (every position after both responses)"),
    intervene: Optional[Path] = typer.Option(None, "--intervene", help="intervention spec (TOML) applied while judging"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Judge one pair and print label probabilities, token spans and per-layer/per-head span attention."""
    from interp.backends import make_backend
    from interp.inspection import build_judge_prompt, inspect_judgment
    from interp.models import load_model

    if queries not in ("final", "after"):
        raise InterpError(f"--queries must be 'final' or 'after', not {queries!r}")
    spec = None
    if intervene is not None:
        from hooks.spec import load_spec

        spec = load_spec(intervene)
    loaded = load_model(model)
    build_judge_prompt(loaded, task, query, response_a, response_b)  # validate before booting a backend
    runner = make_backend(loaded, backend)
    bias = None
    if spec is not None:
        from hooks.apply import bias_builder

        bias = bias_builder(spec, loaded, judge_model=loaded.name)
    result = inspect_judgment(runner, query, response_a, response_b, task=task, queries=queries, bias=bias)
    if spec is not None:
        result["intervention"] = spec.to_dict()
    if as_json:
        _print_json(result)
        return
    typer.echo(f"{result['model']} [{result['backend']}]  P(A)={result['p_a']:.4f}  P(B)={result['p_b']:.4f}  label mass={result['label_mass']:.3f}")
    typer.echo(f"spans: A={result['spans']['a']}  B={result['spans']['b']}  ({result['n_tokens']} tokens)")
    for row in result["layers"]:
        typer.echo(f"  layer {row['layer']:>2}: mass A={row['mass_a']:.4f} B={row['mass_b']:.4f}")


@app.command("dbg")
def dbg_command(
    config: Path = typer.Argument(..., help="run config (TOML); see experiments/dbg_default.toml"),
    out: Path = typer.Option(..., "--out", "-o", help="run directory (re-use it to resume)"),
    report: bool = typer.Option(True, help="write report.html with the Figure 2 grid (and Figure 7 when attention is on)"),
) -> None:
    """Run the behavioural pipeline: responses, judging in both orders, gold, DBG with intervals."""
    from interp.report import build_report
    from interp.runs import load_config, run_dbg

    run_config = load_config(config)
    summary = run_dbg(run_config, out)
    if report:
        if run_config.attention != "none":
            from interp.attention_figures import write_attention_figures

            write_attention_figures(out)
        typer.echo(f"report: {build_report(out)}")
    _echo_dbg(summary)


def _echo_dbg(summary: dict) -> None:
    for judge, scores in summary["judges"].items():
        if "dbg_hard" in scores:
            lo, hi = scores["dbg_ci"]
            typer.echo(f"{judge}: DBG = {100 * scores['dbg_hard']:+.1f} pts [{100 * lo:+.1f}, {100 * hi:+.1f}] (soft {100 * scores['dbg_soft']:+.1f})")


@app.command()
def demo(
    n: Optional[int] = typer.Option(None, "--n", help="number of built-in instructions (default: all)"),
    out: Path = typer.Option(Path("runs/demo"), "--out", "-o"),
    backend: str = typer.Option("hf", "--backend", "-b"),
) -> None:
    """The full demo on the packaged models: SmolLM2 vs Gemma-3, reference-based gold, report.html."""
    from interp.demo import run_demo

    path = run_demo(out, n=n, backend=backend)
    typer.echo(f"report: {path}")


@app.command()
def intervene(
    run_dir: Path = typer.Argument(..., help="a finished DBG run directory"),
    spec_path: Path = typer.Option(..., "--spec", help="intervention spec (TOML), e.g. experiments/ablation_example.toml"),
    judge: Optional[list[str]] = typer.Option(None, "--judge", help="judge(s) to test (default: every judge that is also an author)"),
    backend: Optional[str] = typer.Option(None, "--backend", "-b", help="default: the run's backend"),
    controls: bool = typer.Option(True, help="also run the other-span and random-span controls (self-span specs)"),
) -> None:
    """Re-run only judging under an intervention (responses and gold held fixed) and test for a causal effect."""
    from hooks.spec import load_spec
    from interp.causal import intervene_run, intervention_section
    from interp.report import build_report

    spec = load_spec(spec_path)
    result = intervene_run(run_dir, spec, judges=judge, backend=backend, with_controls=controls)
    intervention_section([result], Path(run_dir) / "figures")
    for judge_name, r in result["judges"].items():
        typer.echo(f"{judge_name}: DBG {100 * r['before']['dbg_hard']:+.1f} pts before; " + "; ".join(
            f"{name}: DBG {100 * v['dbg_hard']:+.1f}, P(own) {r['before']['mean_p_own']:.3f} -> {v['mean_p_own']:.3f}" for name, v in r["variants"].items()
        ))
        typer.echo(r["verdict"])
    reused = result["reused"]
    typer.echo(f"reused {reused['responses']} responses (generated {reused['responses_generated']}) and {reused['gold_verdicts']} gold verdicts")
    if Path(run_dir, "summary.json").exists():
        typer.echo(f"report: {build_report(run_dir)}")


@app.command()
def sweep(config: Path = typer.Argument(..., help="sweep config (TOML), e.g. experiments/ablation_sweep.toml")) -> None:
    """Sweep interventions (layers, bands, top-k vs random heads, alphas, targets) over a run; resumable."""
    from interp.sweeps import run_sweep

    path = run_sweep(config)
    typer.echo(f"results: {path}")
    for figure in sorted(path.parent.glob("effect_vs_*.png")):
        typer.echo(f"figure: {figure}")


@app.command()
def attention(
    run_dir: Path = typer.Argument(..., help="a DBG run directory (judged with attention on)"),
    relative_depth: bool = typer.Option(False, "--relative-depth", help="draw layers on a 0-1 depth axis"),
    paper_layout: bool = typer.Option(
        False, "--paper-layout", help="the DBG paper's orientation: rows are response authors, columns judges"
    ),
) -> None:
    """Figure 7: per-layer and per-head attention over own vs other responses, with length control."""
    from interp.attention_figures import attention_command

    attention_command(run_dir, relative_depth=relative_depth, transpose=paper_layout)


@app.command()
def steer(
    run_dir: Path = typer.Argument(..., help="a finished DBG run directory (judged with attention on)"),
    layer: Optional[int] = typer.Option(None, "--layer", help="residual layer of the self-recognition direction (default: middle)"),
    coefficient: float = typer.Option(-1.0, "--coefficient", help="reversal strength, in units of the direction's norm"),
    k_heads: Optional[int] = typer.Option(None, "--k-heads", help="other-emphasis on the top-k own-minus-other heads (default: all heads)"),
    judge: Optional[str] = typer.Option(None, "--judge"),
    backend: Optional[str] = typer.Option(None, "--backend", "-b"),
) -> None:
    """Steering under the causal test: self-mask, other-emphasis, direction removal and reversal vs none."""
    from interp.steering import steering_command

    steering_command(run_dir, layer, coefficient, k_heads, judge=judge or None, backend=backend, echo=typer.echo)


def _add_optional_subcommands() -> None:
    from interp.metrics_cli import app as metrics_app

    app.add_typer(metrics_app, name="metrics", help="Seed-paper metrics (Chen et al., SALIERI, PLS) over judgment records.")


def _quiet_libraries() -> None:
    """Errors must be one line on stderr: no weight-loading progress bars or library warnings there."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore")


def main() -> None:
    _quiet_libraries()
    _add_optional_subcommands()
    try:
        app(standalone_mode=True)
    except InterpError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
