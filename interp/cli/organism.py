"""Commands of the model organisms: train an adapter from its config, evaluate adapters on held-out items, and
`interp validate` (known truth vs the toolkit's verdict)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from interp.cli.options import device_option, dtype_option, finish, json_option, overwrite_option, placement_keys


def train(
    config_path: Path = typer.Argument(
        ..., help="organism config (TOML), e.g. experiments/organisms/smollm2-135m-judge.toml"
    ),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        help="adapter folder to write (default: organisms/<name>); with --seeds, the folder that holds one "
        "adapter folder per member",
    ),
    seed: Optional[int] = typer.Option(
        None,
        "--seed",
        min=0,
        help="train the family member with this training seed (LoRA init and example order; the data stay the "
        "config's)",
    ),
    seeds: Optional[str] = typer.Option(
        None,
        "--seeds",
        help="train several members, e.g. 0-5 or 0,2,7; members already trained (same config and seed) are kept",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="replace an existing adapter folder (a folder of other files is never replaced)"
    ),
    evaluate: bool = typer.Option(
        False, "--evaluate", help="also judge the test split and the unseen file; figures go into the manifest"
    ),
    device: str = typer.Option(
        "cpu",
        "--device",
        help='where training runs: cpu (default), cuda or cuda:N (float32; recorded in the manifest as "device")',
    ),
    progress: bool = typer.Option(True, help="progress bars"),
) -> None:
    """Train a LoRA judge organism (seeded; on the CPU unless --device) and write its adapter folder with a manifest.
    With --seed or --seeds, members of the config's seed family (`<name>-seed<N>`; the config's own seed keeps its
    name)."""
    from interp.core.models import cache_root
    from interp.errors import InterpError
    from interp.organisms.config import check_config_fits, load_organism_config, parse_seeds, with_seed
    from interp.organisms.pipeline import add_held_out, train_to_folder, trained_member
    from interp.storage import path_label

    if seed is not None and seeds is not None:
        raise InterpError("give --seed or --seeds, not both")
    config = load_organism_config(config_path)
    check_config_fits(config)  # [heads] n_heads / top_layers against the base's shape: before any answer or folder
    if seeds is not None:
        root = out if out is not None else Path("organisms")
        members = [with_seed(config, s) for s in parse_seeds(seeds)]
        targets = [(member, root / path_label(member.name)) for member in members]
    else:
        member = config if seed is None else with_seed(config, seed)
        targets = [(member, out if out is not None else Path("organisms") / path_label(member.name))]
    for member, folder in targets:
        if seeds is not None and not overwrite and trained_member(folder, member):
            typer.echo(f"adapter: {folder} (already trained: config {member.fingerprint()}, seed {member.seed})")
            continue
        manifest = train_to_folder(
            member, folder, progress=progress, overwrite=overwrite, hidden_cache=cache_root() / "frozen", device=device
        )
        typer.echo(
            f"adapter: {folder} ({manifest['n_examples']} examples, {manifest['n_flipped_pairs']} of "
            f"{manifest['n_pairs']} pairs planted, {manifest['timings_s']['total_s'] / 60:.1f} min, data "
            f"{manifest['data_hash']})"
        )
        if evaluate:
            manifest = add_held_out(member, folder)
            typer.echo(json.dumps(manifest["held_out"], indent=1))


def evaluate(
    judges: list[str] = typer.Argument(..., help="organism aliases or adapter folders"),
    config_path: Optional[Path] = typer.Option(
        None,
        "--config",
        help="organism config (TOML) whose split seed picks the items (default: the shipped null organism's, "
        "from its manifest)",
    ),
    out: Path = typer.Option(Path("organisms/eval"), "--out", help="run folder"),
    split: str = typer.Option(
        "test",
        "--split",
        help="selection | test | choice (selection + the development set: where recipes are compared)",
    ),
    gap_against: Optional[str] = typer.Option(
        None,
        "--gap-against",
        help="one of the judges (e.g. the null organism): every other judge with its own model gets its "
        "legitimate-pair and soft-DBG gaps against it, paired",
    ),
    n: Optional[int] = typer.Option(
        None, "--n", min=1, help="judge only N items of the split (a quick check; the figures need the whole split)"
    ),
    overwrite: bool = overwrite_option(),
) -> None:
    """Judge one split of the config's item sets with each organism; print position consistency, agreement, DBG,
    overall and per task."""
    from interp.organisms.config import load_organism_config, shipped_organism_config
    from interp.organisms.evaluate import (
        EvaluationSettings,
        check_eval_out,
        check_gap_against,
        evaluate_judges,
        split_file,
    )

    config = shipped_organism_config() if config_path is None else load_organism_config(config_path)
    check_gap_against(judges, gap_against)  # before the split file is written
    check_eval_out(out, split, judges, overwrite=overwrite)
    items_spec, n_items = split_file(config, split, out)
    n_items = n_items if n is None else min(n, n_items)
    settings = EvaluationSettings(by_task=True, gap_against=gap_against)
    results = evaluate_judges(judges, items_spec, n_items, out / split, settings=settings, overwrite=overwrite)
    typer.echo(json.dumps(results, indent=1))


def validate(
    out: Path = typer.Option(
        Path("runs/validation"), "--out", "-o", help="folder: the run, validation.json and the report"
    ),
    small: bool = typer.Option(
        False, "--small", help="a small slice (2 selection + 3 test items, 2 layer bands): a smoke test, not evidence"
    ),
    device: Optional[str] = device_option(),
    dtype: Optional[str] = dtype_option(),
    progress: bool = typer.Option(True, help="progress bars"),
    as_json: bool = json_option(),
    overwrite: bool = overwrite_option(),
) -> None:
    """Known truth vs the toolkit's verdict: DBG, attention, causal test, positive control, sweep and steering
    on the null and planted organisms, on their test split."""
    from interp.report.terminal import results_payload
    from interp.run.store import RunDir
    from interp.studies.validate import ValidationPlan
    from interp.studies.validate import validate as run_validation

    plan = ValidationPlan.small() if small else ValidationPlan()
    result = run_validation(out, plan, where=placement_keys(device, dtype), progress=progress, overwrite=overwrite)
    if not as_json:
        for row in result.truth_table:
            mark = {True: "yes", False: "NO", None: "n/a"}[row.agrees]
            typer.echo(f"[{mark:>3}] {row.claim}: {row.toolkit}")
    causal = {name: organism.causal_test.to_json() for name, organism in result.organisms.items()}
    run = RunDir(result.run_dir)
    files = {"validation": Path(out) / "validation.json", "report": run.report}
    payload = results_payload(run.read_summary(), causal=causal, n_items=len(result.splits.test), files=files)
    if as_json:
        payload.truth_table = result.truth_table
    finish(payload, as_json)
