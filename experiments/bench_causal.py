"""Operating characteristics of the causal test, measured on model organisms (experiments/causal/plan.md).

    python experiments/bench_causal.py [--out runs/causal] [--null-seed1 organisms/judge-seed1]
        [--share035 organisms/selfpref-share35] [--share075 organisms/selfpref-share75]

Prints one figure a line (`name: value`):

- `causal_false_positive_rate` over null replicates (a null judge against another null judge, the own answer
  masked at every layer, disjoint blocks of 28 test items) with its Clopper-Pearson interval;
- `causal_power_shareXXX_nNN`: planted organism of planting share XXX against the shipped null organism as
  the control judge, n test items drawn with replacement from the 243 per-item contrasts;
- `causal_auroc`: the statistic (mean contrast) of planted draws against the null replicates.

Every judgment is a keyed variant of one run (`RUN/variants/<key>/`), so the bench resumes where it stopped
and a later session continues it; nothing is judged twice. A judge whose adapter folder is missing is
printed as `not run`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from interp.hooks.spec import AttentionIntervention
from interp.config import RunConfig
from interp.experiments.engine import Variant, baseline, judge_pool, judge_variant
from interp.experiments.validate import AUTHORS, NULL, PLANTED, organism_splits
from interp.metrics.causal_test import auroc, clopper_pearson, sign_flip_pvalue, sign_flip_pvalues
from interp.organisms.data import write_items_jsonl
from interp.run.pipeline import run_dbg
from interp.run.store import read_run

ALPHA = 0.05
BLOCK = 28
SIZES = (28, 93, 243)
POWER_DRAWS = 1000
MASK = Variant("self-mask-all-layers", attention=AttentionIntervention(target="self", alpha=0.0, name="self-mask-all-layers"))


def base_run(out: Path) -> Path:
    """The run every figure is read from: both authors' answers to the 243 test items, judged by the shipped
    null and planted organisms (resumes if it exists)."""
    items = organism_splits(PLANTED)["test"]
    items_file = out / "items.jsonl"
    if not items_file.exists():
        write_items_jsonl(items, items_file)
    config = RunConfig(
        name="causal-base",
        data=f"jsonl:{items_file}",
        n=len(items),
        models=AUTHORS,
        judges=[NULL, PLANTED],
        max_words=60,
        max_new_tokens=96,
        attention="final",
        n_boot=1000,
    )
    run_dir = out / "base-run"
    run_dbg(config, run_dir, progress=True)
    return run_dir


def effects(run, pool, judge: str, own: str) -> np.ndarray:
    """Per test item: P_judge(own's answer wins | own's answer masked at every layer) - P_judge(own wins)."""
    before = baseline(run, judge, run.items, own, pool)
    after = judge_variant(run, judge, pool.runner(judge, run), MASK, items=run.items, own=own)
    return after - before


def blocks(n_items: int, seed: int, size: int = BLOCK) -> list[np.ndarray]:
    order = np.random.default_rng(seed).permutation(n_items)
    return [order[start : start + size] for start in range(0, n_items - size + 1, size)]


def power(d: np.ndarray, n: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    draws = d[rng.integers(0, d.size, size=(POWER_DRAWS, n))]
    return float(np.mean(sign_flip_pvalues(draws, n_flips=2000, seed=seed) <= ALPHA))


def power_figure(curves: dict[str, list[float]], path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.5))
    ax = fig.add_subplot()
    for label, values in curves.items():
        ax.plot(SIZES, values, marker="o", label=label)
    ax.axhline(0.8, color="gray", ls=":", lw=0.8)
    ax.axhline(ALPHA, color="gray", ls="--", lw=0.8)
    ax.set_xscale("log")
    ax.set_xticks(SIZES, [str(n) for n in SIZES])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("test items")
    ax.set_ylabel(f"power at alpha = {ALPHA}")
    ax.set_title("every-layer self mask, planted vs null control")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/causal"))
    parser.add_argument("--null-seed1", default="organisms/judge-seed1")
    parser.add_argument("--share035", default="organisms/selfpref-share35")
    parser.add_argument("--share075", default="organisms/selfpref-share75")
    args = parser.parse_args()
    start = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    run = read_run(base_run(args.out))
    pool = judge_pool(run)
    smollm2, gemma = AUTHORS
    present = lambda folder: Path(folder).is_dir() and (Path(folder) / "adapter_config.json").is_file()  # noqa: E731
    result: dict = {"n_test_items": len(run.items)}

    # -- null replicates: null judge vs null judge, both directions, both answers taken as "own", 8 blocks of 28
    nulls = [NULL] + ([args.null_seed1] if present(args.null_seed1) else [])
    null_stats, rejections = [], []
    if len(nulls) == 2:
        delta = {(judge, own): effects(run, pool, judge, own) for judge in nulls for own in (smollm2, gemma)}
        for own in (smollm2, gemma):
            for tested, control in ((nulls[1], nulls[0]), (nulls[0], nulls[1])):
                d = delta[tested, own] - delta[control, own]
                for block in blocks(d.size, seed=0):
                    p = sign_flip_pvalue(d[block], seed=0)
                    null_stats.append(float(d[block].mean()))
                    rejections.append(p <= ALPHA)
        for own in (smollm2, gemma):  # how far apart two null judges of different seeds are, on the whole test split
            seeds = delta[nulls[1], own] - delta[nulls[0], own]
            label = "smollm2" if own == smollm2 else "gemma"
            print(f"causal_null_seed_difference_{label}_mask_pts: {100 * seeds.mean():+.2f} (p {sign_flip_pvalue(seeds, seed=0):.4f}, n {seeds.size})")
        k, n = int(np.sum(rejections)), len(rejections)
        lo, hi = clopper_pearson(k, n)
        print(f"causal_false_positive_rate: {k / n:.3f}")
        print(f"causal_false_positive_rate_ci95: [{lo:.3f}, {hi:.3f}]")
        print(f"causal_null_replicates: {n}")
        result["false_positive"] = {"rejections": k, "replicates": n, "rate": k / n, "ci95": [lo, hi], "null_judges": nulls}
    else:
        print(f"causal_false_positive_rate: not run ({args.null_seed1} is not trained: interp organism train experiments/organisms/smollm2-135m-judge-seed1.toml --out {args.null_seed1})")

    # -- power: planted of each share against the shipped null, SmolLM2's answer masked at every layer
    control = effects(run, pool, NULL, smollm2)
    curves, planted_d = {}, {}
    for label, judge in (("share035", args.share035), ("share060", PLANTED), ("share075", args.share075)):
        if judge != PLANTED and not present(judge):
            for n in SIZES:
                print(f"causal_power_{label}_n{n}: not run ({judge} is not trained)")
            continue
        d = effects(run, pool, judge, smollm2) - control
        planted_d[label] = d
        curves[label] = [power(d, n, seed=n) for n in SIZES]
        for n, value in zip(SIZES, curves[label]):
            print(f"causal_power_{label}_n{n}: {value:.3f}")
        print(f"causal_effect_{label}_pts: {100 * d.mean():+.2f}")
    result["power"] = {label: dict(zip(map(str, SIZES), values)) for label, values in curves.items()}
    result["per_item_contrast"] = {label: d.tolist() for label, d in planted_d.items()}
    if curves:
        power_figure(curves, args.out / "power_curve.png")

    # -- AUROC: planted (share 0.60) blocks of 28 from shuffles 0..3 against the null replicates
    if null_stats and "share060" in planted_d:
        d = planted_d["share060"]
        planted_stats = [float(d[block].mean()) for seed in range(4) for block in blocks(d.size, seed=seed)]
        value = auroc([abs(s) for s in planted_stats], [abs(s) for s in null_stats])  # two-sided: |mean contrast|
        signed = auroc([-s for s in planted_stats], [-s for s in null_stats])  # the registered one-sided score
        print(f"causal_auroc: {value:.3f}")
        print(f"causal_auroc_one_sided_score: {signed:.3f}")
        result["auroc"] = {"value": value, "one_sided_score": signed, "planted": planted_stats, "null": null_stats}
    minutes = (time.time() - start) / 60
    print(f"bench_causal_minutes: {minutes:.1f}")
    (args.out / "bench_causal.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
