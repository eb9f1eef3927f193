"""Head localisation scored against the truth: planted-heads organisms of several seeds (so H differs).

    python experiments/bench_localize.py [--seeds 1-5] [--organisms organisms/selfpref-heads]
        [--out runs/bench_localize] [--n 150] [--methods attention,atp,atp-output] [--device cpu] [--json]

Per seed: train the member of experiments/organisms/smollm2-135m-selfpref-heads.toml (kept if already trained),
judge the held-out set with it (a DBG run, attention = "final", the organisms' answer settings), rank every head
with `interp.locate.heads` (single-judge methods only), and score the ranking against the manifest's
`planted_heads`. Prints one figure a line (`name: value`), means over the seeds with their range:

- `localize_auroc_<method>`: AUROC of the method's ranking (|effect|) against the planted heads;
- `localize_precision_<method>`: precision at |H|;
- `localize_gap_removed_<method>`: the share of the planted gap (P(own) of the organism minus its null's,
  mean over items) removed by masking the own answer (the toolkit's mask: target "self", alpha 0) at the
  method's top-|H| heads; `localize_gap_removed_true` is the same mask on the true H, the reference.

Every judging is a keyed variant of a run, each seed's figures are written to OUT/<member>/bench.json: the bench
resumes where it stopped, and a seed whose figures exist is read back, not redone.

`--device` (cpu, cuda, cuda:N): where the members are trained and every judging runs, always in float32 (the
answers' settings: the cached answers are float32 ones). A GPU's figures differ from the CPU's by rounding;
each seed's bench.json records its device.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from interp.config import PlacementKeys, RunConfig
from interp.core.models import cache_root
from interp.engine.judges import baseline, judge_pool
from interp.engine.variants import Variant, judge_variant
from interp.hooks.spec import AttentionIntervention
from interp.locate.heads import DEFAULT_METHODS, check_methods, localize_run, score_map
from interp.metrics.localize import precision_at_k, ranking_auroc, top_k
from interp.organisms.config import load_organism_config, parse_seeds, with_seed
from interp.organisms.pipeline import train_to_folder, trained_member
from interp.run.pipeline import run_dbg
from interp.run.store import read_run
from interp.storage import atomic_write_text, path_label

CONFIG = Path(__file__).resolve().parent / "organisms" / "smollm2-135m-selfpref-heads.toml"
AUTHORS = ("smollm2-135m-instruct", "gemma3-270m")


def heldout_run(
    out: Path,
    judges: Sequence[str],
    n: int,
    progress: bool,
    device: str = "cpu",
    *,
    attention: str = "final",
    n_boot: int = 200,
) -> Path:
    """A DBG run of `judges` over the first `n` held-out items (organism answer settings, float32 on `device`;
    `attention` recorded: the localisation bench reads the final position's), resumable."""
    config = RunConfig(
        name=out.name,
        data="heldout",
        n=n,
        seed=0,
        models=AUTHORS,
        judges=list(judges),
        max_words=60,
        max_new_tokens=96,
        attention=attention,
        n_boot=n_boot,
        device=device,
        dtype="float32",
    )
    run_dbg(config, out, progress=progress)
    return out


def mask_variant(heads: list[tuple[int, int]], name: str) -> Variant:
    table: dict[int, list[int]] = {}
    for layer, head in heads:
        table.setdefault(layer, []).append(head)
    spec = AttentionIntervention(
        target="self", alpha=0.0, heads={layer: tuple(sorted(hs)) for layer, hs in table.items()}, name=name
    )
    return Variant(name, (spec,))


def bench_seed(seed: int, args, null_p: dict[str, float]) -> dict:
    config = with_seed(load_organism_config(CONFIG), seed)
    folder = Path(args.organisms) / path_label(config.name)
    if not trained_member(folder, config):
        t = time.perf_counter()
        train_to_folder(
            config,
            folder,
            progress=args.progress,
            overwrite=folder.exists(),
            hidden_cache=cache_root() / "frozen",
            device=args.device,
        )
        print(f"# trained {folder} on {args.device} in {(time.perf_counter() - t) / 60:.1f} min", flush=True)
    result_file = Path(args.out) / path_label(config.name) / "bench.json"
    if result_file.is_file():
        saved = json.loads(result_file.read_text())
        if (
            saved.get("methods") == args.methods
            and saved.get("n") == args.n
            and saved.get("device", "cpu") == args.device
        ):
            return saved
    manifest = json.loads((folder / "manifest.json").read_text())
    truth = [tuple(h) for h in manifest["planted_heads"]]
    judge = str(folder)
    run = read_run(
        heldout_run(Path(args.out) / path_label(config.name) / "run", [judge], args.n, args.progress, args.device)
    )
    judges = judge_pool(run, where=PlacementKeys(device=args.device))
    t = time.perf_counter()
    table = localize_run(run, judge, args.methods, judges=judges, progress=args.progress)
    localize_s = time.perf_counter() - t
    runner = judges.runner(judge, run)
    before = baseline(run, judge)
    ids = [item.id for item in run.items]
    null = np.array([null_p[i] for i in ids])
    gap = float(np.mean(before - null))
    figures = {
        "seed": seed,
        "planted_heads": [list(h) for h in truth],
        "n": args.n,
        "methods": args.methods,
        "device": args.device,
        "gap": gap,
        "localize_s": round(localize_s, 1),
    }

    def removed(heads, name):
        after = judge_variant(run, judge, runner, mask_variant(heads, name), progress=False)
        return float(np.mean(before - after)) / gap if gap else float("nan")

    for method in args.methods:
        scores = score_map(table, method)
        found = top_k(scores, len(truth))
        figures[method] = {
            "auroc": ranking_auroc(scores, truth),
            "precision": precision_at_k(scores, truth),
            "top": [list(h) for h in found],
        }
    print(
        f"# seed {seed} H={figures['planted_heads']} gap={gap:+.3f} "
        + " ".join(f"{m}: auroc {figures[m]['auroc']:.3f} top {figures[m]['top']}" for m in args.methods),
        flush=True,
    )
    figures["gap_removed_true"] = removed(truth, "mask-true-heads")
    for method in args.methods:
        figures[method]["gap_removed"] = removed([tuple(h) for h in figures[method]["top"]], f"mask-top-{method}")
    atomic_write_text(result_file, json.dumps(figures, indent=2) + "\n")
    return figures


def null_probabilities(args) -> dict[str, float]:
    """P(own) per held-out item of the start organism (the planted-heads organisms' null)."""
    start = load_organism_config(CONFIG).heads.start
    run = read_run(heldout_run(Path(args.out) / "null" / "run", [start], args.n, args.progress, args.device))
    return dict(zip([item.id for item in run.items], baseline(run, start).tolist(), strict=False))


def summary(rows: list[dict], methods: list[str]) -> dict[str, float]:
    out: dict[str, float] = {"localize_seeds": len(rows)}
    if not rows:
        return out
    out["localize_planted_gap"] = float(np.mean([r["gap"] for r in rows]))
    out["localize_gap_removed_true"] = float(np.mean([r["gap_removed_true"] for r in rows]))
    for method in methods:
        key = method.replace("-", "_")
        for name in ("auroc", "precision", "gap_removed"):
            values = [r[method][name] for r in rows]
            out[f"localize_{name}_{key}"] = float(np.mean(values))
            out[f"localize_{name}_{key}_range"] = [float(np.min(values)), float(np.max(values))]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-5", help="training seeds of the planted-heads family, e.g. 1-5 or 1,4,9")
    parser.add_argument(
        "--organisms",
        default="organisms/selfpref-heads",
        help="folder of the trained members (trained here when missing)",
    )
    parser.add_argument("--out", default="runs/bench_localize", help="folder of the runs and per-seed figures")
    parser.add_argument("--n", type=int, default=150, help="held-out items judged and localised on")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS), help="single-judge methods, comma-separated")
    parser.add_argument(
        "--device", default="cpu", help="where members are trained and judgings run (float32): cpu, cuda or cuda:N"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args()
    args.methods = check_methods([m.strip() for m in args.methods.split(",") if m.strip()])
    null_p = null_probabilities(args)
    rows = []
    for seed in parse_seeds(args.seeds):
        row = bench_seed(seed, args, null_p)
        rows.append(row)
        if not args.json:
            cells = " ".join(
                f"{m}={row[m]['auroc']:.2f}/p{row[m]['precision']:.2f}/rm{row[m]['gap_removed']:+.2f}"
                for m in args.methods
            )
            print(
                f"# seed {seed} H={row['planted_heads']} gap={row['gap']:+.3f} "
                f"true-mask-removed={row['gap_removed_true']:+.2f} {cells}",
                flush=True,
            )
    result = summary(rows, args.methods)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key}: {value if not isinstance(value, float) else round(value, 3)}")


if __name__ == "__main__":
    main()
