"""The causal test with the judge as the unit, calibrated on organism families (experiments/records/plan.md, plan 2).

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
import dataclasses
import json
import time
from itertools import combinations
from pathlib import Path

import numpy as np

from interp.analysis.attention_stats import head_values
from interp.config import RunConfig
from interp.core.adapters import adapter_folder
from interp.engine.judges import baseline, judge_pool
from interp.engine.variants import Variant, judge_variant
from interp.hooks.spec import AttentionIntervention
from interp.organisms.config import SplitConfig
from interp.organisms.data import splits_of, write_items_jsonl
from interp.run.pipeline import run_dbg
from interp.run.store import read_run

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
    "mask_smollm2_layers_15_29": AttentionIntervention(
        target="self", alpha=0.0, layers=tuple(range(15, 30)), name="mask-smollm2-layers-15-29"
    ),
    "mask_smollm2_layers_0_14": AttentionIntervention(
        target="self", alpha=0.0, layers=tuple(range(0, 15)), name="mask-smollm2-layers-0-14"
    ),
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
    values = head_values(run_dir, judge, "mean", items=selection)
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
    return AttentionIntervention(
        target=target, alpha=0.0, heads=heads, name=f"mask-{'smollm2' if own == SMOLLM2 else 'gemma'}-top{TOP_K}"
    )


def collect_judge(out: Path, judge: str, extras: int, top8: bool = True, masks: bool = True) -> dict:
    """P(SmolLM2's answer wins) per test item under no intervention and every variant, for one judge; written to
    OUT/judges/<label>.json (read back when it holds every variant asked for). `top8` False: the every-layer
    masks only (the first pass of the plan's amendment); `masks` False: the run alone (DBG, no intervention)."""
    path = out / "judges" / f"{Path(judge).name}.json"
    wanted = (
        (list(REGISTERED) + (["top8_smollm2", "top8_gemma"] if top8 else []) + list(EXTRAS)[:extras]) if masks else []
    )
    if path.is_file():
        done = json.loads(path.read_text())
        if set(wanted) <= set(done["p_smollm2"]):
            return done
    run = read_run(judge_run(out, judge))
    splits = splits_of(SplitConfig(items=("builtin", "referenced"), seed=0))
    selection = [item.id for item in splits["selection"]]
    test_ids = {item.id for item in splits["test"]}
    test = [item for item in run.items if item.id in test_ids]
    gold = run.gold_own(SMOLLM2)[[run.items.index(item) for item in test]]
    heads = {own: top_heads_mask(run.dir.root, judge, selection, own) for own in AUTHORS}
    variants = (
        dict(REGISTERED)
        | ({"top8_smollm2": heads[SMOLLM2], "top8_gemma": heads[GEMMA]} if top8 else {})
        | dict(list(EXTRAS.items())[:extras])
    )
    variants = variants if masks else {}
    pool = judge_pool(run)
    runner = pool.runner(judge, run)
    record: dict = {
        "judge": judge,
        "items": [item.id for item in test],
        "gold_p_smollm2": gold.tolist(),
        "heads": {own: [[layer, list(hs)] for layer, hs in spec.heads_table.items()] for own, spec in heads.items()},
        "p_smollm2": {"none": baseline(run, judge, test, SMOLLM2).tolist()},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    for name, spec in variants.items():
        record["p_smollm2"][name] = judge_variant(
            run, judge, runner, Variant(name, (spec,)), items=test, own=SMOLLM2
        ).tolist()
        path.write_text(json.dumps(record, indent=1) + "\n")
    if done := (json.loads(path.read_text())["p_smollm2"] if path.is_file() else {}):
        record["p_smollm2"] = done | record["p_smollm2"]  # a run-only pass never drops masks judged before
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def collect(out: Path, families: tuple[str, ...], organisms: Path, extras: int, shard: tuple[int, int]) -> None:
    """Every member of the families that is trained now; `shard` (i, n): only every n-th judge from the i-th,
    so n processes share the work."""
    judges = [judge for family in families for judge in members(family, organisms)]
    index, count = shard
    for top8 in (False, True):  # the every-layer masks for every judge first, then the top-8 heads
        for judge in judges[index::count]:
            collect_judge(out, judge, extras, top8)


# ---- analysis ------------------------------------------------------------------------------------------

# For an answer o read as "own": which variant masks o's answer, which masks the other's, which o's top heads.
OWN_VARIANTS = {
    SMOLLM2: {"own": "mask_smollm2", "other": "mask_gemma", "top8": "top8_smollm2"},
    GEMMA: {"own": "mask_gemma", "other": "mask_smollm2", "top8": "top8_gemma"},
}
SCORED = ("own", "other", "top8")


def p_own(record: dict, variant: str, own: str) -> np.ndarray:
    """The judge's P(own wins) per test item under a variant, with `own`'s answer read as own."""
    p = np.asarray(record["p_smollm2"][variant])
    return p if own == SMOLLM2 else 1 - p


def gold_own(record: dict, own: str) -> np.ndarray:
    g = np.asarray(record["gold_p_smollm2"])
    return g if own == SMOLLM2 else 1 - g


def delta(record: dict, variant: str, own: str) -> np.ndarray:
    """Per item: P(own | variant) - P(own)."""
    return p_own(record, variant, own) - p_own(record, "none", own)


def ci_text(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


def print_rate(name: str, rejections: list[bool]) -> dict:
    """A rejection rate, its Clopper-Pearson 95 % interval and its counts, printed one figure a line."""
    from interp.metrics.stats import clopper_pearson

    k, n = int(np.sum(rejections)), len(rejections)
    lo, hi = clopper_pearson(k, n)
    print(f"{name}: {k / n:.3f}")
    print(f"{name}_ci95: {ci_text(lo, hi)}")
    print(f"{name}_replicates: {n}")
    print(f"{name}_rejections: {k}")
    return {"rejections": k, "replicates": n, "rate": k / n, "ci95": [lo, hi]}


def analyse(out: Path) -> dict:
    from interp.metrics.families import multi_bootstrap, smallest_permutation_p, two_family_test
    from interp.metrics.judge_level import crawford_howell, leave_one_out

    records: dict[str, list[dict]] = {}
    for path in sorted((out / "judges").glob("*.json")):
        record = json.loads(path.read_text())
        family = "planted" if "selfpref" in Path(record["judge"]).name else "null"
        records.setdefault(family, []).append(record)
    nulls, planted = records.get("null", []), records.get("planted", [])
    result: dict = {"null_judges": [r["judge"] for r in nulls], "planted_judges": [r["judge"] for r in planted]}
    print(f"causal_null_judges: {len(nulls)}")
    print(f"causal_planted_judges: {len(planted)}")
    if len(nulls) < 4:
        print("causal_false_positive_rate: not run (fewer than 4 null judges collected)")
        return result

    # 1. leave-one-null-out Crawford-Howell over the registered interventions and both answers as "own"
    rejections = []
    for own in AUTHORS:
        for name in SCORED:
            variant = OWN_VARIANTS[own][name]
            if not all(variant in r["p_smollm2"] for r in nulls):
                continue
            effects = np.array([delta(r, variant, own).mean() for r in nulls])
            for test in leave_one_out(effects):
                rejections.append(test.p_value is not None and test.p_value <= ALPHA)
    result["false_positive"] = print_rate("causal_false_positive_rate", rejections) | {
        "controls_per_test": len(nulls) - 1
    }

    # 2. two families drawn from the null family: every split into halves, Welch (and the permutation p)
    half = len(nulls) // 2
    splits = (
        [c for c in combinations(range(len(nulls)), half) if 0 in c]
        if len(nulls) == 2 * half
        else list(combinations(range(len(nulls)), half))
    )
    statistics = {
        f"{name}|{own}": [delta(r, OWN_VARIANTS[own][name], own) for r in nulls]
        for own in AUTHORS
        for name in SCORED
        if all(OWN_VARIANTS[own][name] in r["p_smollm2"] for r in nulls)
    }
    statistics["dbg"] = [p_own(r, "none", SMOLLM2) - gold_own(r, SMOLLM2) for r in nulls]
    welch, perm = [], []
    for split in splits:
        rest = [i for i in range(len(nulls)) if i not in split]
        for values in statistics.values():
            test = two_family_test(
                np.array([values[i].mean() for i in split]), np.array([values[i].mean() for i in rest]), seed=0
            )
            welch.append(test.p_welch is not None and test.p_welch <= ALPHA)
            perm.append(test.p_permutation <= ALPHA)
    result["fpr_two_family"] = print_rate("causal_fpr_two_family", welch) | {"permutation_rate": float(np.mean(perm))}
    print(
        f"causal_fpr_two_family_permutation: {np.mean(perm):.3f} (smallest attainable p with {half} against "
        f"{len(nulls) - half} judges: {smallest_permutation_p(half, len(nulls) - half):.3f})"
    )

    # 3. power on DBG: each planted seed against the whole null family
    null_dbg = np.array([(p_own(r, "none", SMOLLM2) - gold_own(r, SMOLLM2)).mean() for r in nulls])
    print(f"causal_null_dbg_soft_mean_pts: {100 * null_dbg.mean():+.2f}")
    print(f"causal_null_dbg_soft_sd_pts: {100 * null_dbg.std(ddof=1):.2f}")
    if planted:
        planted_dbg = np.array([(p_own(r, "none", SMOLLM2) - gold_own(r, SMOLLM2)).mean() for r in planted])
        tests = [crawford_howell(float(x), null_dbg) for x in planted_dbg]
        hits = [t.p_value is not None and t.p_value <= ALPHA for t in tests]
        print(f"causal_planted_dbg_soft_mean_pts: {100 * planted_dbg.mean():+.2f}")
        print(f"causal_power_planted_dbg: {np.mean(hits):.3f}")
        print(f"causal_power_planted_dbg_count: {int(np.sum(hits))} of {len(hits)}")
        print("causal_power_planted_dbg_p: " + ", ".join(f"{t.p_value:.2g}" for t in tests))
        result["power_planted_dbg"] = {
            "rate": float(np.mean(hits)),
            "p_values": [t.p_value for t in tests],
            "planted_dbg": planted_dbg.tolist(),
            "null_dbg": null_dbg.tolist(),
        }

        # 4. two families on DBG
        per_item_p = np.array([p_own(r, "none", SMOLLM2) - gold_own(r, SMOLLM2) for r in planted])
        per_item_n = np.array([p_own(r, "none", SMOLLM2) - gold_own(r, SMOLLM2) for r in nulls])
        if len(planted) >= 2:
            fam = two_family_test(per_item_p, per_item_n, seed=0)
            print(
                f"causal_two_family_dbg_p_permutation: {fam.p_permutation:.4f} "
                f"({'exact' if fam.exact else 'sampled'}, {fam.n_permutations} labelings)"
            )
            print(f"causal_two_family_dbg_p_welch: {fam.p_welch:.2g}")
            print(
                f"causal_two_family_dbg_pts: {100 * fam.difference:+.2f} [{100 * fam.interval.low:+.2f}, "
                f"{100 * fam.interval.high:+.2f}]"
            )
            result["two_family_dbg"] = dataclasses.asdict(fam)
        else:
            print(f"causal_two_family_dbg: not run ({len(planted)} planted seed collected; a family needs at least 2)")

        # 5. per intervention (SmolLM2 as own, the planted preference's answer): planted-minus-null effect in
        #    null SDs, and the share of the family gap removed; reported, not scored
        result["interventions"] = {}
        variants = [
            v
            for v in ["mask_smollm2", "mask_gemma", "top8_smollm2", *EXTRAS]
            if all(v in r["p_smollm2"] for r in nulls + planted)
        ]
        for variant in variants:
            dp = np.array([delta(r, variant, SMOLLM2) for r in planted])
            dn = np.array([delta(r, variant, SMOLLM2) for r in nulls])
            sd_units = multi_bootstrap([dp, dn], _sd_units, seed=0)
            stages_p = np.stack(
                [[p_own(r, s, SMOLLM2) - gold_own(r, SMOLLM2) for s in ("none", variant)] for r in planted]
            )
            stages_n = np.stack(
                [[p_own(r, s, SMOLLM2) - gold_own(r, SMOLLM2) for s in ("none", variant)] for r in nulls]
            )
            share = multi_bootstrap([stages_p, stages_n], _share_removed, seed=0)
            gap_after = multi_bootstrap([stages_p, stages_n], lambda f: _gap(f, 1), seed=0)
            print(
                f"causal_effect_sd_units_{variant}: {sd_units.estimate:+.2f} [{sd_units.low:+.2f}, "
                f"{sd_units.high:+.2f}]"
            )
            print(
                f"causal_share_removed_{variant}: {share.estimate:+.2f} [{share.low:+.2f}, "
                f"{share.high:+.2f}] (gap after {100 * gap_after.estimate:+.1f} pts)"
            )
            result["interventions"][variant] = {
                "effect_null_sds": sd_units.to_dict(),
                "share_removed": share.to_dict(),
                "gap_after": gap_after.to_dict(),
            }
        gap = multi_bootstrap([stages_p, stages_n], lambda f: _gap(f, 0), seed=0) if variants else None
        if gap is not None:
            print(
                f"causal_family_gap_before_pts: {100 * gap.estimate:+.2f} [{100 * gap.low:+.2f}, {100 * gap.high:+.2f}]"
            )
            result["gap_before"] = gap.to_dict()
    (out / "bench_causal.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    return result


def _sd_units(families: list[np.ndarray]) -> np.ndarray:
    """(mean planted Delta - mean null Delta) / SD of the null judges' mean Delta, per draw."""
    planted, null = families  # [draw, judge, item]
    null_means = null.mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (planted.mean(axis=(-1, -2)) - null_means.mean(axis=-1)) / null_means.std(axis=-1, ddof=1)


def _gap(families: list[np.ndarray], stage: int) -> np.ndarray:
    """Mean planted DBG minus mean null DBG at a stage (0 before, 1 after), per draw: [draw, judge, stage, item]."""
    planted, null = families
    return planted[:, :, stage].mean(axis=(-1, -2)) - null[:, :, stage].mean(axis=(-1, -2))


def _share_removed(families: list[np.ndarray]) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1 - _gap(families, 1) / _gap(families, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/causal2"))
    parser.add_argument("--organisms", type=Path, default=Path("organisms"))
    parser.add_argument("--stage", choices=("collect", "analyse", "all"), default="all")
    parser.add_argument("--family", choices=("null", "planted", "both"), default="both")
    parser.add_argument("--shard", default="0/1", help="i/n: this process takes every n-th judge from the i-th")
    parser.add_argument(
        "--extras",
        type=int,
        default=len(EXTRAS),
        help="how many of the reported extra interventions to judge, in the registered order",
    )
    args = parser.parse_args()
    start = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.stage in ("collect", "all"):
        index, count = (int(x) for x in args.shard.split("/"))
        collect(
            args.out,
            ("null", "planted") if args.family == "both" else (args.family,),
            args.organisms,
            args.extras,
            (index, count),
        )
    if args.stage in ("analyse", "all"):
        analyse(args.out)
    print(f"bench_causal_minutes: {(time.time() - start) / 60:.1f}")


if __name__ == "__main__":
    main()
