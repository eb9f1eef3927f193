"""Benchmark: retrain an organism from its config on this CPU and compare its held-out figures with the shipped
manifest (the issue's bar: under 30 minutes on 2 cores, figures within 3 points).

Prints `name: value` lines: `organism_train_minutes` (wall time of `train_to_folder`: loading, data, the
frozen lower-layer pass and the LoRA passes), then per held-out set (`test`: the config's test split at
the demo's answer settings; `unseen`: the 48 items of interp/builtin/alpacaeval_unseen_48.json at a run's
defaults) position consistency, agreement with gold and DBG (hard, soft) with intervals, and the shipped
manifest's value beside each. `--shipped-only` prints the shipped manifests' figures without training.

    python experiments/bench_organisms.py [--config experiments/organisms/smollm2-135m-judge.toml] [--shipped-only]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from interp.core.adapters import shipped_adapters
from interp.organisms.config import load_organism_config
from interp.organisms.pipeline import add_held_out, train_to_folder

FIGURES = ("position_consistency", "dbg_hard", "dbg_soft")


def figure_lines(prefix: str, held_out: dict, shipped: dict | None) -> list[str]:
    lines = []
    for split, metrics in held_out.items():
        values = {name: metrics[name] for name in FIGURES} | {
            "agreement_with_gold": metrics["agreement_with_gold"]["value"]
        }
        values |= {"agreement_legitimate": metrics["agreement_legitimate"]["value"]}
        for name, value in values.items():
            line = f"{prefix}{split}_{name}: {value:.3f}" if value is not None else f"{prefix}{split}_{name}: n/a"
            if shipped is not None:
                ref = shipped.get(split, {}).get(name)
                ref = ref["value"] if isinstance(ref, dict) else ref
                line += f" (shipped {ref:.3f})" if ref is not None else ""
            lines.append(line)
        lines.append(f"{prefix}{split}_dbg_hard_ci: [{metrics['dbg_hard_ci'][0]:.3f}, {metrics['dbg_hard_ci'][1]:.3f}]")
        lines.append(f"{prefix}{split}_dbg_soft_ci: [{metrics['dbg_soft_ci'][0]:.3f}, {metrics['dbg_soft_ci'][1]:.3f}]")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("experiments/organisms/smollm2-135m-judge.toml"))
    parser.add_argument("--shipped-only", action="store_true")
    args = parser.parse_args()
    if args.shipped_only:
        for name, folder in shipped_adapters().items():
            manifest = json.loads((folder / "manifest.json").read_text())
            print(f"{name}_manifest_train_minutes: {manifest['timings_s']['total_s'] / 60:.1f}")
            print("\n".join(figure_lines(f"{name}_", manifest.get("held_out", {}), None)))
        return
    config = load_organism_config(args.config)
    shipped_folder = shipped_adapters().get(config.name)
    shipped = json.loads((shipped_folder / "manifest.json").read_text()) if shipped_folder else {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / config.name
        start = time.perf_counter()
        manifest = train_to_folder(config, folder, progress=False)
        print(f"organism_train_minutes: {(time.perf_counter() - start) / 60:.1f}")
        print(f"organism_examples: {manifest['n_examples']}")
        print(f"organism_data_hash_matches_shipped: {manifest['data_hash'] == shipped.get('data_hash')}")
        manifest = add_held_out(config, folder)
        print("\n".join(figure_lines("", manifest["held_out"], shipped.get("held_out"))))


if __name__ == "__main__":
    main()
