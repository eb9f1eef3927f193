"""`interp restyle RUN --style STYLE [--rewriter MODEL] --out DIR`: both authors' answers rewritten in one style,
judged again in a derived run, DBG before and after per judge under the judge-level test (DBG paper, Section 4.2)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from interp.cli.options import device_option, dtype_option, json_option, overwrite_option, placement_keys


def restyle(
    run_dir: Path = typer.Argument(..., help="a finished DBG run directory"),
    style: str = typer.Option(
        "plain",
        "--style",
        help="plain (the offline, deterministic normaliser) or a prompted style for --rewriter: humorous, "
        "attractive, formal",
    ),
    rewriter: Optional[str] = typer.Option(
        None,
        "--rewriter",
        help="the LLM rewriter: a local model (alias, HF id in the cache, folder, .gguf), or with "
        "--rewriter-url the served model's name; neither an author, a judge nor a gold judge of the run",
    ),
    rewriter_url: Optional[str] = typer.Option(
        None,
        "--rewriter-url",
        help="base URL of an OpenAI-compatible server that serves --rewriter (e.g. http://127.0.0.1:8080/v1)",
    ),
    out: Path = typer.Option(
        ..., "--out", "-o", help="folder of the derived run (summary.json, report.html, restyle.json)"
    ),
    embedder: str = typer.Option(
        "smollm2-135m-instruct",
        "--embedder",
        help="local model whose mean-pooled hidden states embed originals and rewrites (the semantic check)",
    ),
    threshold: float = typer.Option(
        0.90, "--threshold", help="rewrites whose cosine similarity to their original is below this are flagged"
    ),
    control_judge: Optional[list[str]] = typer.Option(
        None,
        "--control-judge",
        help="control judges among the run's judges (repeat or comma-separate; 'none' for none); default: as "
        "`interp intervene` chooses them, among the run's judges",
    ),
    test_alpha: float = typer.Option(0.05, "--test-alpha", help="the judge-level test's level"),
    projection: str = typer.Option(
        "auto", "--projection", help="the similarity map: tsne, pca, or auto (t-SNE from 30 texts on)"
    ),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
    overwrite: bool = overwrite_option(),
    as_json: bool = json_option(),
) -> None:
    """Rewrite both authors' answers in one style, judge them again (a derived run in --out), and test DBG before
    and after per judge; check that the rewrites keep the meaning (restyle.json, report.html)."""
    from interp.report.restyle import print_restyle
    from interp.report.terminal import payload_json
    from interp.run.store import RunDir
    from interp.studies.restyle import restyle_options, restyle_run

    options = restyle_options(
        style=style,
        rewriter=rewriter,
        rewriter_url=rewriter_url,
        embedder=embedder,
        threshold=threshold,
        control_judges=control_judge,
        test_alpha=test_alpha,
        projection=projection,
    )
    where = (
        placement_keys(device, dtype) if device is not None or dtype is not None else None
    )  # none given: the source run's
    result = restyle_run(run_dir, out, options, where=where, progress=not as_json, overwrite=overwrite)
    report = str(RunDir(result.derived_run).report)
    if as_json:  # restyle.json's content (its schema version aside) and the report
        written = {key: value for key, value in result.to_json().items() if key != "schema_version"}
        typer.echo(payload_json(written | {"report": report}))
    else:
        print_restyle(result, report=report)
