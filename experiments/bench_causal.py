"""The causal test with the judge as the unit, calibrated on organism families (experiments/causal/plan.md, plan 2).

    python experiments/bench_causal.py [--out runs/causal2] [--organisms organisms] [--stage collect|analyse|all]
        [--family null|planted] [--extras N]

Two families of judges, each one organism config trained with training seeds 0, 1, ... (`interp organism
train CONFIG --seeds ...`): the null family (`smollm2-135m-judge`, gold labels, 6 seeds) and the planted family
(`smollm2-135m-selfpref`, share 0.60, 4 seeds). Seed 0 of each is the shipped organism; the other members are
read from `--organisms/<name>-seed<N>/` (or the shipped alias when it is installed).

Collect (resumable: every judgment is a keyed variant of its family's run, `RUN/variants/<key>/`): one run per
family over the 45 selection and 93 test items with span attention; then, on the test items, each judge under
every registered intervention. `--family` collects one family only, so the two families can run side by side
in two processes (one thread each). Analyse: prints one figure a line (`name: value`), and writes
`OUT/bench_causal.json`.
"""

from __future__ import annotations

import argparse
import json
import time
from itertools import combinations
from pathlib import Path

import numpy as np

from hooks.spec import AttentionIntervention
from interp.analysis.attention_stats import head_map
from interp.config import RunConfig
from interp.core.adapters import adapter_folder
from interp.experiments.engine import Variant, baseline, judge_pool, judge_variant
from interp.organisms.config import SplitConfig
from interp.organisms.data import splits_of, write_items_jsonl
from interp.run.pipeline import run_dbg
from interp.run.store import load_run

ALPHA = 0.05
SMOLLM2, GEMMA = AUTHORS = ("smollm2-135m-instruct", "gemma3-270m")
FAMILIES = {"null": ("smollm2-135m-judge", 6), "planted": ("smollm2-135m-selfpref", 4)}
TOP_K = 8
N_BOOT = 1000

# Every variant is judged with SmolLM2's answer read as "own" (its P(win)); Gemma's side is 1 - that, from the
# same judgments. "self" is SmolLM2's span, "other" Gemma's.
REGISTERED = {
    "mask_smollm2": AttentionIntervention(target="self", alpha=0.0, name="mask-smollm2-all-layers"),
    "mask_gemma": AttentionIntervention(target="other", alpha=0.0, name="mask-gemma-all-layers"),
}
EXTRAS = {  # reported, not scored; in the registered order
    "mask_both": AttentionIntervention(target="both", alpha=0.0, name="mask-both-all-layers"),
    "mask_smollm2_layers_15_29": AttentionIntervention(target="self", alpha=0.0, layers=tuple(range(15, 30)), name="mask-smollm2-layers-15-29"),
    "mask_smollm2_layers_0_14": AttentionIntervention(target="self", alpha=0.0, layers=tuple(range(0, 15)), name="mask-smollm2-layers-0-14"),
    "dampen_smollm2_half": AttentionIntervention(target="self", alpha=0.5, name="dampen-smollm2-0.5"),
}


def members(family: str, organisms: Path) -> list[str]:
    """The family's judges: seed 0 is the shipped organism; seed N its `-seedN` member (shipped alias when it is
    installed and trained as a member of this family, else the folder under `organisms`)."""
    name, count = FAMILIES[family]
    out = [name]
    for seed in range(1, count):
        member = f"{name}-seed{seed}"
        folder = organisms / member
        shipped = adapter_folder(member)
        if shipped is not None and json.loads((shipped / "manifest.json").read_text()).get("data_seed") == 0:
            out.append(member)
        elif (folder / "adapter_config.json").is_file():
            out.append(str(folder))
    return out


def judge_run(out: Path, judge: str) -> Path:
    """One run per judge (so each member is judged as soon as it is trained, in any process): both authors'
    answers to the selection and test items, judged by `judge` with span attention (resumes if it exists).
    Answers and gold come from the shared caches, so every run reads the same pairs."""
    splits = splits_of(SplitConfig(items=("builtin", "referenced"), seed=0))
    items = splits["selection"] + splits["test"]
    items_file = out / "items.jsonl"
    if not items_file.exists():
        out.mkdir(parents=True, exist_ok=True)
        write_items_jsonl(items, items_file)
    label = Path(judge).name
    config = RunConfig(
        name=f"causal2-{label}",
        data=f"jsonl:{items_file}",
        n=len(items),
        models=AUTHORS,
        judges=[judge],
        max_words=60,
        max_new_tokens=96,
        attention="final",
        n_boot=N_BOOT,
    )
    run_dir = out / "runs" / label
    run_dbg(config, run_dir, progress=True)
    return run_dir


def top_heads_mask(run_dir: Path, judge: str, selection: list[str], own: str) -> AttentionIntervention:
    """The judge's top-8 heads by own-minus-other mean attention on the selection items, `own`'s span masked."""
    values = head_map(run_dir, judge, "mean", items=selection)
    if own == GEMMA:
        values = -values
    flat = values.flatten().nan_to_num(float("-inf"))
    order = flat.argsort(descending=True, stable=True)[:TOP_K]
    n_heads = values.shape[1]
    table: dict[int, list[int]] = {}
    for index in order.tolist():
        table.setdefault(index // n_heads, []).append(index % n_heads)
    heads = tuple((layer, tuple(sorted(hs))) for layer, hs in sorted(table.items()))
    target = "self" if own == SMOLLM2 else "other"
    return AttentionIntervention(target=target, alpha=0.0, heads=heads, name=f"mask-{'smollm2' if own == SMOLLM2 else 'gemma'}-top{TOP_K}")


def collect_judge(out: Path, judge: str, extras: int) -> dict:
    """P(SmolLM2's answer wins) per test item under no intervention and every variant, for one judge; written to
    OUT/judges/<label>.json (read back when it holds every variant asked for)."""
    path = out / "judges" / f"{Path(judge).name}.json"
    wanted = list(REGISTERED) + ["top8_smollm2", "top8_gemma"] + list(EXTRAS)[:extras]
    if path.is_file():
        done = json.loads(path.read_text())
        if set(wanted) <= set(done["p_smollm2"]):
            return done
    run = load_run(judge_run(out, judge))
    splits = splits_of(SplitConfig(items=("builtin", "referenced"), seed=0))
    selection = [item.id for item in splits["selection"]]
    test_ids = {item.id for item in splits["test"]}
    test = [item for item in run.items if item.id in test_ids]
    gold = run.gold_own(SMOLLM2)[[run.items.index(item) for item in test]]
    heads = {own: top_heads_mask(run.dir.root, judge, selection, own) for own in AUTHORS}
    variants = dict(REGISTERED) | {"top8_smollm2": heads[SMOLLM2], "top8_gemma": heads[GEMMA]} | dict(list(EXTRAS.items())[:extras])
    pool = judge_pool(run)
    runner = pool.runner(judge, run)
    record: dict = {
        "judge": judge,
        "items": [item.id for item in test],
        "gold_p_smollm2": gold.tolist(),
        "heads": {own: [[layer, list(hs)] for layer, hs in spec.heads_table.items()] for own, spec in heads.items()},
        "p_smollm2": {"none": baseline(run, judge, test, SMOLLM2).tolist()},
    }
    for name, spec in variants.items():
        record["p_smollm2"][name] = judge_variant(run, judge, runner, Variant(name, attention=spec), items=test, own=SMOLLM2).tolist()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def collect(out: Path, families: tuple[str, ...], organisms: Path, extras: int, shard: tuple[int, int]) -> None:
    """Every member of the families that is trained now; `shard` (i, n): only every n-th judge from the i-th,
    so n processes share the work."""
    judges = [judge for family in families for judge in members(family, organisms)]
    index, count = shard
    for judge in judges[index::count]:
        collect_judge(out, judge, extras)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/causal2"))
    parser.add_argument("--organisms", type=Path, default=Path("organisms"))
    parser.add_argument("--stage", choices=("collect", "analyse", "all"), default="all")
    parser.add_argument("--family", choices=("null", "planted", "both"), default="both")
    parser.add_argument("--shard", default="0/1", help="i/n: this process takes every n-th judge from the i-th")
    parser.add_argument("--extras", type=int, default=len(EXTRAS), help="how many of the reported extra interventions to judge, in the registered order")
    args = parser.parse_args()
    start = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.stage in ("collect", "all"):
        index, count = (int(x) for x in args.shard.split("/"))
        collect(args.out, ("null", "planted") if args.family == "both" else (args.family,), args.organisms, args.extras, (index, count))
    if args.stage in ("analyse", "all"):
        from experiments.causal_analysis import analyse

        analyse(args.out)
    print(f"bench_causal_minutes: {(time.time() - start) / 60:.1f}")


if __name__ == "__main__":
    main()
