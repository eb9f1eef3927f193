"""Train an organism from its config and write its adapter folder atomically (temp folder, then rename).

  <out>/adapter_model.safetensors, adapter_config.json   the LoRA adapter (peft format)
  <out>/manifest.json                                     config, fingerprint, data hash, seed, base, timings
  <out>/train_log.jsonl                                   loss, accuracy on the batch, grad norm, lr per step

Held-out metrics are added to the manifest by `interp.organisms.evaluate.evaluate_into_manifest`.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import torch

from interp.core.adapters import base_signature
from interp.errors import InterpError
from interp.organisms.config import OrganismConfig
from interp.organisms.train import train_organism


def train_to_folder(config: OrganismConfig, out: Path, *, progress: bool = True, overwrite: bool = False, models: dict | None = None) -> dict:
    """Train `config` and write the adapter folder `out`; returns the manifest. Nothing is half-written."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise InterpError(f"{out} exists; pass --overwrite or another --out")
    trained = train_organism(config, models=models, progress=progress)
    manifest = {
        "name": config.name,
        "base_model": config.base_model,
        "base_signature": base_signature(trained.base.hf_model.config),
        "config": config.model_dump(mode="json"),
        "config_fingerprint": config.fingerprint(),
        "seed": config.seed,
        **trained.record,
        "torch": torch.__version__,
        "threads": config.train.threads,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        trained.peft_model.save_pretrained(str(tmp))
        (tmp / "README.md").unlink(missing_ok=True)  # peft's model-card stub
        manifest["adapter_bytes"] = (tmp / "adapter_model.safetensors").stat().st_size
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        (tmp / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in trained.log))
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def add_held_out(config: OrganismConfig, folder: Path) -> dict:
    """Judge the test split and the unseen file with the adapter in `folder`; write the figures into its manifest."""
    from interp.organisms.evaluate import held_out

    folder = Path(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["held_out"] = held_out(config, str(folder), folder.parent / f".eval-{folder.name}")
    tmp = folder / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(folder / "manifest.json")
    return manifest
