"""Commands of the behavioural pipeline: list models, inspect one judgment, run DBG, run the demo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from interp.cli.options import (
    device_option,
    dtype_option,
    finish,
    json_option,
    overwrite_option,
    placement_keys,
    timings_option,
)
from interp.errors import InterpError


def print_json(value) -> None:
    """Print `value` as indented JSON (NaN refused: a command's JSON is strict)."""
    typer.echo(json.dumps(value, indent=2, allow_nan=False))


def models(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """List the built-in model aliases (source, pre/post-trained, layers, heads; for a shipped organism its
    family, role and training seed); one not installed says how to install it."""
    from interp.core.adapters import organism_family
    from interp.core.models import describe_aliases
    from interp.core.placement import resolve_placement

    default = resolve_placement().record()  # where a model loads by default on this machine
    rows = [
        row | {"device": default["device"], "dtype": default["dtype"]} | organism_family(row["alias"])
        for row in describe_aliases()
    ]
    if as_json:
        print_json(rows)
        return
    for row in rows:
        if not row["installed"]:
            typer.echo(f"{row['alias']:24} {row['kind']:5} not installed: {row['install']}")
            continue
        typer.echo(
            f"{row['alias']:24} {row['kind']:5} layers={row['layers']:<3} heads={row['heads']:<3} "
            f"{row['device']}/{row['dtype']}  {row['source']}"
        )


def inspect(
    model: str = typer.Option(
        "smollm2-135m-instruct", "--model", "-m", help="alias, HF id, local folder or .gguf file"
    ),
    backend: str = typer.Option("hf", "--backend", "-b", help="hf | transformer_lens | nnsight"),
    query: str = typer.Option(..., "--query", "-q"),
    response_a: str = typer.Option(..., "--response-a"),
    response_b: str = typer.Option(..., "--response-b"),
    task: str = typer.Option("helpfulness", "--task", help="helpfulness | truthfulness | translation"),
    readout: str = typer.Option("final", "--readout", help="final | after (every position after both responses)"),
    intervene: Optional[Path] = typer.Option(
        None, "--intervene", help="intervention spec (TOML) applied while judging"
    ),
    as_json: bool = typer.Option(False, "--json"),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
) -> None:
    """Judge one pair and print label probabilities, token spans and per-layer/per-head span attention."""
    from interp.core.backends import check_backend_fits, make_backend
    from interp.core.judge import inspect_judgment
    from interp.core.models import load_model
    from interp.core.spans import build_judge_prompt
    from interp.hooks.compile import bias_builder
    from interp.hooks.nodes import NodeIntervention, as_intervention

    if readout not in ("final", "after"):
        raise InterpError(f"--readout must be 'final' or 'after', not {readout!r}")
    where = placement_keys(device, dtype)
    spec = as_intervention(intervene) if intervene is not None else None
    if isinstance(spec, NodeIntervention):
        raise InterpError(
            f"{intervene}: inspect --intervene takes an attention spec; a {spec.site} spec runs in `interp "
            "intervene` or judge.applying()"
        )
    loaded = load_model(model, device=where.device, dtype=where.dtype)
    build_judge_prompt(loaded, task, query, response_a, response_b)  # validate before booting a backend
    check_backend_fits(loaded, backend)
    runner = make_backend(loaded, backend)
    bias = bias_builder(spec, loaded, judge_model=loaded.name) if spec is not None else None
    result = inspect_judgment(runner, query, response_a, response_b, task=task, readout=readout, bias=bias)
    if spec is not None:
        result["intervention"] = spec.to_dict()
    result["placement"] = loaded.placement.record()
    if as_json:
        print_json(result)
        return
    typer.echo(
        f"{result['model']} [{result['backend']}]  P(A)={result['p_a']:.4f}  P(B)={result['p_b']:.4f}  "
        f"label mass={result['label_mass']:.3f}"
    )
    typer.echo(f"spans: A={result['spans']['a']}  B={result['spans']['b']}  ({result['n_tokens']} tokens)")
    for row in result["layers"]:
        typer.echo(f"  layer {row['layer']:>2}: mass A={row['mass_a']:.4f} B={row['mass_b']:.4f}")


def dbg(
    config: Path = typer.Argument(..., help="run config (TOML); see experiments/configs/dbg_default.toml"),
    out: Path = typer.Option(..., "--out", "-o", help="run directory (re-use it to resume)"),
    report: bool = typer.Option(
        True, help="write report.html with the Figure 2 grid (and Figure 7 when attention is on)"
    ),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
    as_json: bool = json_option(),
    overwrite: bool = overwrite_option(),
    timings: bool = timings_option(),
) -> None:
    """Run the behavioural pipeline: responses, judging in both orders, gold, DBG with intervals."""
    from interp.config import load_run_config, run_config_from_dict
    from interp.core.timings import Timings
    from interp.report.attention import write_attention_figures
    from interp.report.build import build_report
    from interp.report.judging_modes import mode_payload
    from interp.report.terminal import results_payload
    from interp.run.pipeline import run_dbg
    from interp.run.store import RunDir

    RunDir(Path(out)).check_not_nested()
    run_config = load_run_config(config)
    flags = placement_keys(device, dtype, run_config).model_dump(exclude_none=True)
    run_config = run_config_from_dict(run_config.model_dump(exclude_none=True) | flags, str(config))
    steps = Timings.started()
    summary = run_dbg(run_config, out, overwrite=overwrite, timings=steps)
    files = {"run": Path(out)}
    if report:
        with RunDir(out).writer(), steps.step("figures and report"):
            if run_config.attention != "none" and run_config.mode == "pairwise":  # pointwise attention: no Figure 7
                write_attention_figures(out)
            files["report"] = build_report(out)
    finish(
        results_payload(summary, files=files).merged(mode_payload(summary)),
        as_json,
        timings=steps.ended() if timings else None,
    )


def demo(
    n: Optional[int] = typer.Option(
        None, "--n", min=1, help="number of built-in instructions, at least 1 (default: all)"
    ),
    out: Path = typer.Option(Path("runs/demo"), "--out", "-o"),
    backend: str = typer.Option("hf", "--backend", "-b"),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
    as_json: bool = json_option(),
    overwrite: bool = overwrite_option(),
    timings: bool = timings_option(),
) -> None:
    """The full demo on the packaged models: SmolLM2 vs Gemma-3, reference-based gold, report.html."""
    from interp.report.terminal import results_payload
    from interp.run.store import RunDir
    from interp.studies.demo import run_demo

    demo = run_demo(out, n=n, backend=backend, where=placement_keys(device, dtype), overwrite=overwrite)
    causal = demo.causal.judges if demo.causal is not None else {}
    n_test = demo.causal.n_items if demo.causal is not None else None
    payload = results_payload(RunDir(out).read_summary(), causal=causal, n_items=n_test, files={"report": demo.report})
    finish(payload, as_json, timings=demo.timings if timings else None)
