"""Train an organism from its config and write its adapter folder atomically (temp folder, then rename).

  <out>/adapter_model.safetensors, adapter_config.json   the LoRA adapter (peft format)
  <out>/manifest.json                                     config, fingerprint, data hash, seed, base, timings
  <out>/train_log.jsonl                                   loss, accuracy on the batch, grad norm, lr per step

Held-out metrics are written beside it, to organism_metrics.json, by `interp.organisms.evaluate.evaluate_judges`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import torch

from interp.core.adapters import HEAD_DELTA_FILE, adapter_folder, base_signature
from interp.core.placement import resolve_placement
from interp.core.threads import set_torch_threads
from interp.errors import InterpError
from interp.organisms.config import OrganismConfig, check_config_fits
from interp.organisms.mlp import PLANTED_DIRECTION_FILE
from interp.organisms.train import train_organism
from interp.results.codec import read_organism_manifest, write_organism_manifest
from interp.storage import check_output_dir, path_label


def train_to_folder(
    config: OrganismConfig,
    out: Path,
    *,
    progress: bool = True,
    overwrite: bool = False,
    models: dict | None = None,
    hidden_cache: Path | None = None,
    device: str = "cpu",
) -> dict:
    """Train `config` and write the adapter folder `out`; returns the manifest. Nothing is half-written. An
    existing adapter folder is replaced only with `overwrite`; a folder of other files never. `device` (cpu,
    cuda, cuda:N): where the training runs (float32); the manifest records it (`"device"`). It is not part of
    the config: the same config trained on a GPU is the same member, with other rounding."""
    out = Path(out)
    device = resolve_placement(device, "float32").device  # a device this machine lacks: one error, nothing written
    check_config_fits(
        config, models
    )  # top_layers and heads.n_heads against the base's shape: one error, nothing written
    check_output_dir(out, markers=("manifest.json", "adapter_config.json"), overwrite=overwrite, replace=True)
    if config.delta is not None:  # [heads] or [mlp]: a delta on a start organism
        from interp.organisms.heads import train_heads_organism

        trained = train_heads_organism(
            config, models=models, progress=progress, hidden_cache=hidden_cache, device=device
        )
    else:
        trained = train_organism(config, models=models, progress=progress, hidden_cache=hidden_cache, device=device)
    manifest = {
        "name": config.name,
        "base_model": config.base_model,
        "base_signature": base_signature(trained.base.hf_model.config),
        "config": config.model_dump(mode="json"),
        "config_fingerprint": config.fingerprint(),
        "seed": config.seed,
        "data_seed": config.data_seed_used,
        "family": family_of(config),
        **trained.record,
        "torch": torch.__version__,
        "threads": config.train.threads,
        "device": str(trained.base.device),  # where the training ran (given models: where they were)
    }
    with atomic_folder(out) as tmp:
        if trained.head_delta is not None:  # the start organism's LoRA, then the delta confined to the planted site
            from safetensors.torch import save_file

            start = adapter_folder(config.delta.start)
            for name in ("adapter_model.safetensors", "adapter_config.json"):
                shutil.copyfile(start / name, tmp / name)
            save_file(trained.head_delta, str(tmp / HEAD_DELTA_FILE))
            manifest["head_delta_bytes"] = (tmp / HEAD_DELTA_FILE).stat().st_size
            for name, tensors in trained.sidecars.items():  # a direction organism's u
                save_file(tensors, str(tmp / name))
        else:
            trained.peft_model.save_pretrained(str(tmp))
            (tmp / "README.md").unlink(missing_ok=True)  # peft's model-card stub
        portable_adapter_config(tmp, config.base_model)
        manifest["adapter_bytes"] = (tmp / "adapter_model.safetensors").stat().st_size
        write_organism_manifest(tmp, manifest)
        (tmp / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in trained.log))
    return manifest


SIDECAR_FILES = (PLANTED_DIRECTION_FILE,)  # kept beside a delta (`interp.organisms.mlp`), shipped with it


def family_of(config: OrganismConfig) -> str:
    """The family a config's adapter belongs to: its name without a `-seed<N>` suffix."""
    import re

    return re.sub(r"-seed\d+$", "", config.name)


def trained_member(folder: Path, config: OrganismConfig) -> bool:
    """True when `folder` already holds the adapter that `config` trains (same config fingerprint, so the same
    seed): a family's training resumes past the members it finished."""
    manifest = Path(folder) / "manifest.json"
    if not (manifest.is_file() and (Path(folder) / "adapter_model.safetensors").is_file()):
        return False
    try:
        return read_organism_manifest(folder).config_fingerprint == config.fingerprint()
    except InterpError:
        return False


def own_files() -> tuple[str, ...]:
    """The names the toolkit writes into an adapter folder: only these are replaced or removed in one."""
    from interp.core.adapters import ADAPTER_FILES
    from interp.storage import OUTPUT_MARKER

    return (*ADAPTER_FILES, HEAD_DELTA_FILE, *SIDECAR_FILES, "train_log.jsonl", OUTPUT_MARKER)


@contextlib.contextmanager
def atomic_folder(target: Path):
    """Yield a temporary folder beside `target`; on success it becomes `target`, on any error it is removed.

    An existing `target` (replaced with `--overwrite`) keeps every file the toolkit did not write there (a user's
    notes, a `src/` of their own): each new file replaces its namesake (`os.replace`, one at a time), and the
    toolkit's files the new adapter lacks (`own_files`: an old head delta) are removed; nothing else is touched."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the result is an ordinary folder
    try:
        yield tmp
        if not target.exists():
            tmp.rename(target)
            return
        written = {p.name for p in tmp.iterdir()}
        for name in own_files():
            if name not in written and (target / name).is_file():
                (target / name).unlink()
        for path in sorted(tmp.iterdir()):
            os.replace(path, target / path.name)
        tmp.rmdir()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def add_held_out(config: OrganismConfig, folder: Path, n_check: int = 4) -> dict:
    """Judge the test split and the unseen file with the adapter in `folder`; write the figures into its manifest,
    with `n_check` test pairs (texts and P(A) per order) that a later load must reproduce."""
    from interp.organisms.evaluate import held_out
    from interp.run.store import RunDir

    folder = Path(folder)
    set_torch_threads(config.train.threads)  # fixed, so reductions happen in the same order on a re-run
    manifest = read_organism_manifest(folder).to_json()
    eval_dir = folder.parent / f".eval-{folder.name}"
    manifest["held_out"] = held_out(config, str(folder), eval_dir)
    for figures in manifest["held_out"].values():
        figures["judge"] = config.name  # the run named the judge by its (temporary) folder
    run = RunDir(eval_dir / "test")
    items = sorted(run.read_items(), key=lambda item: item.id)[:n_check]
    responses = run.read_responses()
    p_a = {(r.item_id, r.order): r.p_a for r in run.read_judgments()}
    own, other = config.data.authors
    manifest["check_items"] = [
        {
            "item_id": item.id,
            "task": item.task,
            "query": item.query,
            "own": responses[own][item.id],
            "other": responses[other][item.id],
            "p_a_own_first": p_a[(item.id, "ab")],
            "p_a_other_first": p_a[(item.id, "ba")],
        }
        for item in items
    ]
    write_organism_manifest(folder, manifest)
    return manifest


def portable_adapter_config(folder: Path, base_model: str) -> None:
    """peft records the base's local path; the shipped file names the base alias instead."""
    path = Path(folder) / "adapter_config.json"
    data = json.loads(path.read_text())
    data["base_model_name_or_path"] = base_model
    _write_json(path, data)


def ship(folder: Path, target_root: Path | None = None) -> Path:
    """Copy an evaluated adapter folder into the package (`interp/builtin/adapters/<name>/`), atomically."""
    from interp.core.adapters import ADAPTER_FILES, ADAPTERS_DIR

    folder = Path(folder)
    manifest = read_organism_manifest(folder).to_json()
    member = manifest.get("family", manifest["name"]) != manifest["name"]  # a family's seed N: measured with its family
    if "held_out" not in manifest and not (member and "check_items" in manifest):
        raise InterpError(
            f"{folder}: no held-out figures in the manifest (a family's further seeds need their check "
            "pairs); evaluate it before shipping"
        )
    target = Path(target_root or ADAPTERS_DIR) / path_label(manifest["name"])
    start = adapter_folder(manifest["heads_start"]) if "heads_start" in manifest else None
    compact = (
        start is not None
        and (folder / HEAD_DELTA_FILE).is_file()
        and (start / "adapter_model.safetensors").read_bytes() == (folder / "adapter_model.safetensors").read_bytes()
    )
    sidecars = tuple(name for name in SIDECAR_FILES if (folder / name).is_file())
    with atomic_folder(target) as tmp:
        if compact:  # a delta organism ships as its manifest and delta file; its LoRA is the shipped start's
            for name in ("manifest.json", HEAD_DELTA_FILE, *sidecars):
                shutil.copyfile(folder / name, tmp / name)
        else:
            for name in ADAPTER_FILES + ((HEAD_DELTA_FILE,) if (folder / HEAD_DELTA_FILE).is_file() else ()) + sidecars:
                shutil.copyfile(folder / name, tmp / name)
            portable_adapter_config(tmp, manifest["base_model"])
    return target


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)
