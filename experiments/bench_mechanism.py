"""Bench: does `interp explain` find where self-preference lives, when we built it there?

    python experiments/bench_mechanism.py [--seeds 1-4] [--attn-seeds 9-12] [--null-seeds 0-5]
                                          [--families attn,heads,lora,null] [--n 150] [--device cpu]
                                          [--out runs/mechanism] [--answers RUN] [--dtype float32]
                                          [--jobs 1] [--batch-size 8]

The plan, registered before any result: experiments/records/plan.md, "Plan 3", read under "Plan 4" (issue 71's
rules: the matched null, the one-sided gate, a share that removes, a route that needs a total; split seed 71071).
Steps (every one keyed and kept, so a rerun resumes where it stopped):
1. train the attention-routed and planted-heads members not yet trained (`interp organism train`);
2. one run over the organisms' held-out set with every member as a judge (`attention = "final"`);
3. `interp explain RUN --judge M` per member, with the automatic controls (an organism's null family);
4. the manifest's heads on the same test split: the own-answer mask (attention-routed), the head-output mean
   ablation (planted-heads).
`--answers RUN`: the authors' answers (and items) of a run made with the same data, n, seed, authors and decoding,
placed in the bench's run before it is judged, so the judging can run where the authors' weights are not (a GPU
machine holding SmolLM2 only: a run whose answers are all there loads no author).
Prints one `name: value [lo, hi] (k of n)` a line (Clopper-Pearson 95 %): route_power_attention,
route_power_output, wrong_route_rate, route_fpr and route_fpr_no_gap_gate; then the true heads' shares and AUROC
per method per family. Each family's figure reads the candidate its method chose on the selection split.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from interp.metrics.stats import auroc as causal_auroc
from interp.metrics.stats import clopper_pearson

REPO = Path(__file__).resolve().parents[1]
AUTHORS = ("smollm2-135m-instruct", "gemma3-270m")
RECIPES = {
    "attn": "smollm2-135m-selfpref-attn.toml",
    "heads": "smollm2-135m-selfpref-heads.toml",
    "lora": "smollm2-135m-selfpref.toml",
}
NULLS = ["smollm2-135m-judge"] + [f"smollm2-135m-judge-seed{s}" for s in range(1, 6)]
SPLIT_SEED = "71071"  # plan 4: a split seed no earlier run, check or amendment used (plan 3 used 0)
SETTINGS = [
    "--top-k",
    "3",
    "--mlp-k",
    "2",
    "--selection-share",
    "0.4",
    "--split-seed",
    SPLIT_SEED,
    "--random-sets",
    "1",
]


def interp(*args: str) -> str:
    command = [sys.executable, "-m", "interp.cli", *args]
    print("$ interp " + " ".join(args), file=sys.stderr, flush=True)
    done = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"interp {args[0]} failed ({done.returncode})")
    return done.stdout


def seeds(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def members(args) -> dict[str, list[str]]:
    families = args.families.split(",")
    out: dict[str, list[str]] = {}
    for family in ("attn", "heads"):
        if family in families:
            out[family] = []
            for seed in seeds(args.attn_seeds if family == "attn" else args.seeds):
                folder = args.out / "organisms" / f"{family}-seed{seed}"
                if not (folder / "manifest.json").is_file():
                    interp(
                        "organism",
                        "train",
                        str(REPO / "experiments" / "organisms" / RECIPES[family]),
                        "--seed",
                        str(seed),
                        "--out",
                        str(folder),
                        "--device",
                        args.device,
                    )
                out[family].append(str(folder))
    if "lora" in families:
        out["lora"] = ["smollm2-135m-selfpref"]
    if "null" in families:
        out["null"] = [NULLS[s] for s in seeds(args.null_seeds)]
    return out


def auroc(scores: dict[tuple[int, int], float], truth: set[tuple[int, int]]) -> float:
    """The planted heads' scores against every other head's (interp.metrics.causal_test.auroc, ties half)."""
    return causal_auroc(
        np.array([v for k, v in scores.items() if k in truth]),
        np.array([v for k, v in scores.items() if k not in truth]),
    )


def _placed_answers(args: argparse.Namespace, config: Path, run: Path) -> list[str]:
    """The authors' answers of `--answers` (a run with the same items and decoding) copied into a new `run`: the
    dbg flags that then apply (none when there is nothing to place)."""
    placed = []
    if args.answers and not run.exists():  # the authors' answers of a run with the same items and decoding
        from interp.config import load_run_config

        mine, theirs = load_run_config(config), load_run_config(args.answers / "config.toml")
        same = ("data", "n", "seed", "models", "max_words", "max_new_tokens")
        if any(getattr(mine, k) != getattr(theirs, k) for k in same):
            raise SystemExit(f"{args.answers}: its {', '.join(same)} are not the bench's: its answers do not apply")
        run.mkdir(parents=True)
        for name in ("items.jsonl", "responses.jsonl"):
            shutil.copy2(args.answers / name, run / name)
        placed = ["--overwrite"]
    return placed


def chosen(result: dict, method: str) -> dict | None:
    """The candidate `method` chose on the selection split (its top set), never the best share on the test split:
    picking the best test share among candidates is a winner's curse (plan 4)."""
    rows = [c for c in result["candidates"] if c["selected_by"] == method]
    return rows[0] if rows else None


def total_causal(candidate: dict) -> bool:
    """The route's total part is causal with its interval above 0 (plan 4: a route needs a total)."""
    total = (candidate.get("route_parts") or {}).get("total") or {}
    ci = total.get("ci") or [None, None]
    return bool(total.get("causal")) and ci[0] is not None and ci[0] > 0


def proportion(name: str, hits: list[bool]) -> None:
    """One figure as `name: value [lo, hi] (k of n)`, the interval Clopper-Pearson's 95 %."""
    if not hits:
        print(f"{name}: not run (0 members)")
        return
    lo, hi = clopper_pearson(sum(hits), len(hits))
    print(f"{name}: {np.mean(hits):.2f} [{lo:.2f}, {hi:.2f}] ({sum(hits)} of {len(hits)})")


def _print_powers(found: dict[str, list[dict]]) -> None:
    """Route power and the true heads' shares, on the candidate each family's method chose on the selection split."""
    # (family, method whose chosen candidate is read, figure name, whether the right call is the pattern route)
    for family, method, label, pattern in (
        ("attn", "attention", "attention", True),
        ("heads", "atp-output", "output", False),
    ):
        if family not in found:
            continue
        hits = []
        for e in found[family]:
            c = chosen(e["result"], method)
            right = c is not None and bool(c["causal"]) and (c["route"] == "pattern") == pattern
            hits.append(right and (pattern or total_causal(c)))  # `neither` without a causal total is no success
        proportion(f"route_power_{label}", hits)
        shares = [e.get("true_share") for e in found[family]]
        known = [s for s in shares if s is not None]
        print(f"share_removed_true_heads_{label}: {np.mean(known) if known else None} (per seed: {shares})")


def _print_figures(found: dict[str, list[dict]], run: Path) -> None:
    """The bench's figures per family (plan 4): route power, the wrong-route rate, the false-positive rate with
    and without the gap gate, and each localisation method's AUROC against the planted heads."""
    _print_powers(found)
    wrong = [
        any(c["causal"] and c["route"] == "pattern" for c in e["result"]["candidates"])
        for family in ("heads", "lora")
        for e in found.get(family, [])
    ]
    proportion("wrong_route_rate", wrong)
    if "null" in found:
        proportion("route_fpr", [any(c["causal"] for c in e["result"]["candidates"]) for e in found["null"]])
        ungated = [e["ungated"] for e in found["null"] if e.get("ungated") is not None]
        proportion("route_fpr_no_gap_gate", [any(c["causal"] for c in r["candidates"]) for r in ungated])
    for family in ("attn", "heads"):
        for method in ("attention", "atp", "atp-output"):
            values = [_auroc_of(run, e, method) for e in found.get(family, [])]
            if values:
                print(f"auroc_{method}_{family}: {np.mean(values):.3f} (per seed: {[round(v, 3) for v in values]})")


def _auroc_of(run: Path, entry: dict, method: str) -> float:
    """AUROC of `method`'s selection-split head scores for one member against its planted heads."""
    import pandas as pd

    folder = Path(run) / "explain"
    (csv,) = [
        p
        for p in folder.glob("*/localisation.csv")
        if json.loads((p.parent / "explain.json").read_text())["judge"] == entry["member"]
        and json.loads((p.parent / "explain.json").read_text()).get("gap_gate", True)
    ]
    rows = pd.read_csv(csv)
    rows = rows[rows["method"] == method]
    return auroc(
        {(int(r.layer), int(r.head)): float(r.score) for r in rows.itertuples()}, {tuple(h) for h in entry["truth"]}
    )


def study_member(args, on: Path, family: str, member: str) -> dict:
    """explain on `on` (the run or a copy of it), then the manifest's heads on the same test split."""
    from interp.core.adapters import adapter_folder, read_manifest
    from interp.hooks.nodes import node_from_dict
    from interp.hooks.spec import AttentionIntervention, pairs_table

    result = json.loads(interp("explain", str(on), "--judge", member, *SETTINGS, "--device", args.device, "--json"))
    ungated = None
    if family == "null":  # the matched null seen without the gate's help (plan 4's `route_fpr_no_gap_gate`)
        ungated = json.loads(
            interp("explain", str(on), "--judge", member, *SETTINGS, "--no-gap-gate", "--device", args.device, "--json")
        )
    manifest = read_manifest(adapter_folder(member)) if adapter_folder(member) else {}
    truth = manifest.get("planted_heads")
    entry = {"member": member, "result": result, "truth": truth, "ungated": ungated}
    if truth and family in ("attn", "heads"):
        spec = args.out / f"true-heads-{family}-{Path(member).name}.toml"
        heads = pairs_table(truth)
        made = (
            AttentionIntervention(target="self", alpha=0.0, heads=heads, name="true-heads-mask")
            if family == "attn"
            else node_from_dict({"site": "head_output", "op": "mean", "heads": heads, "name": "true-heads-output-mean"})
        )
        spec.write_text(made.to_toml())
        split = ["--selection-share", "0.4", "--split-seed", SPLIT_SEED, "--device", args.device, "--json"]
        payload = json.loads(interp("intervene", str(on), "--spec", str(spec), "--judge", member, *split))
        (row,) = [r for r in payload["causal"] if r["judge"] == member]
        entry["true_share"] = row["share_removed"]
    return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-4", help="planted-heads seeds")
    parser.add_argument(
        "--attn-seeds",
        default="9-12",
        help="attention-routed seeds (1-4 were read while it was built, 5-8 judged under the layers-27-29 recipe: "
        "plan 3, amendments 3 and 6)",
    )
    parser.add_argument("--null-seeds", default="0-5")
    parser.add_argument("--families", default="attn,heads,lora,null")
    parser.add_argument("--n", type=int, default=150)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=Path("runs/mechanism"))
    parser.add_argument("--answers", type=Path, default=None, help="a run folder whose authors' answers to use")
    parser.add_argument("--dtype", default=None, help="the judges' dtype (default: the device's)")
    parser.add_argument("--jobs", type=int, default=1, help="members studied side by side (a GPU: several)")
    parser.add_argument("--batch-size", type=int, default=None, help="judged pairs per forward pass (a GPU: more)")
    args = parser.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    family_members = members(args)
    judges = [m for ms in family_members.values() for m in ms]
    config = args.out / "config.toml"
    config.write_text(
        f'name = "mechanism"\ndata = "heldout"\nn = {args.n}\nmodels = {json.dumps(list(AUTHORS))}\njudges '
        f"= {json.dumps(judges)}\n"
        f'max_words = 60\nmax_new_tokens = 96\nattention = "final"\ndevice = "{args.device}"\n'
        + (f'dtype = "{args.dtype}"\n' if args.dtype else "")
        + (f"batch_size = {args.batch_size}\n" if args.batch_size else "")
    )
    run = args.out / "run"
    placed = _placed_answers(args, config, run)
    if not (run / "summary.json").exists():
        interp("dbg", str(config), "--out", str(run), "--json", *placed)
    judged = set(json.loads((run / "summary.json").read_text())["judges"])
    if missing := [j for j in judges if j not in judged]:  # a run judged for other members: never mixed in
        raise SystemExit(f"{run} was judged without {', '.join(missing)}: give these members a fresh --out")

    study = functools.partial(study_member, args)

    work = [(family, member) for family, ms in family_members.items() for member in ms]
    if args.jobs > 1:  # each worker on its own copy of the run (a run has one writer), merged back after
        copies = [args.out / f"run.job{k}" for k in range(args.jobs)]
        for copy in copies:
            if not copy.exists():
                shutil.copytree(run, copy)
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // args.jobs)))

        def worker(k: int) -> list[dict]:
            done = []
            for family, member in work[k :: args.jobs]:
                try:
                    done.append(study(copies[k], family, member) | {"family": family})
                except (SystemExit, Exception) as failed:  # one failing member: the others go on
                    print(f"{member}: {failed}", file=sys.stderr, flush=True)
            return done

        with ThreadPoolExecutor(args.jobs) as pool:
            entries = [e for part in pool.map(worker, range(args.jobs)) for e in part]
        for copy in copies:  # the keyed results (explain, causal) of every copy into the run; its own files stay
            for path in copy.rglob("*"):
                target = run / path.relative_to(copy)
                if path.is_file() and not target.exists() and not path.name.endswith(".lock"):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target)
    else:
        entries = [study(run, family, member) | {"family": family} for family, member in work]
    found: dict[str, list[dict]] = {family: [] for family in family_members}
    for family, member in work:
        found[family] += [e for e in entries if e["member"] == member and e["family"] == family]
    missing = [member for family, member in work if not any(e["member"] == member for e in found[family])]
    print(f"members_missing: {len(missing)} {missing}")  # a member whose explain failed counts in no figure below

    _print_figures(found, run)


if __name__ == "__main__":
    main()
