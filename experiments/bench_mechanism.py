"""Bench: does `interp explain` find where self-preference lives, when we built it there?

    python experiments/bench_mechanism.py [--seeds 1-4] [--attn-seeds 9-12] [--null-seeds 0-5]
                                          [--families attn,heads,lora,null] [--n 150] [--device cpu]
                                          [--out runs/mechanism] [--answers RUN] [--dtype float32]
                                          [--jobs 1] [--batch-size 8]

The plan, registered before any result: experiments/causal/plan.md, "Plan 3". Steps (every one keyed and kept,
so a rerun resumes where it stopped):
1. train the attention-routed and planted-heads members not yet trained (`interp organism train`);
2. one run over the organisms' held-out set with every member as a judge (`attention = "final"`);
3. `interp explain RUN --judge M` per member, with the automatic controls (an organism's null family);
4. the manifest's heads on the same test split: the own-answer mask (attention-routed), the head-output mean
   ablation (planted-heads).
`--answers RUN`: the authors' answers (and items) of a run made with the same data, n, seed, authors and decoding,
placed in the bench's run before it is judged, so the judging can run where the authors' weights are not (a GPU
machine holding SmolLM2 only: a run whose answers are all there loads no author).
Prints one `name: value` a line: route_power_attention, route_power_output, route_fpr, the true heads' shares,
AUROC per method per family.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from interp.metrics.causal_test import auroc as causal_auroc

REPO = Path(__file__).resolve().parents[1]
AUTHORS = ("smollm2-135m-instruct", "gemma3-270m")
RECIPES = {
    "attn": "smollm2-135m-selfpref-attn.toml",
    "heads": "smollm2-135m-selfpref-heads.toml",
    "lora": "smollm2-135m-selfpref.toml",
}
NULLS = ["smollm2-135m-judge"] + [f"smollm2-135m-judge-seed{s}" for s in range(1, 6)]
SETTINGS = ["--top-k", "3", "--mlp-k", "2", "--selection-share", "0.4", "--split-seed", "0", "--random-sets", "1"]


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


def _print_figures(found: dict[str, list[dict]], run: Path) -> None:
    """The bench's figures per family: route power, the true heads' share removed, the false-positive rate and
    each localisation method's AUROC against the planted heads."""

    def best(result: dict, site: str) -> dict | None:
        rows = [c for c in result["candidates"] if c["site"] == site and c["selected_by"] != "random"]
        return (
            max(rows, key=lambda c: c["share_removed"] if c["share_removed"] is not None else -np.inf) if rows else None
        )

    # (family, site, figure name, whether a causal call there is the pattern route)
    for family, site, label, pattern in (
        ("attn", "attention", "attention", True),
        ("heads", "head_output", "output", False),
    ):
        if family not in found:
            continue
        hits = [
            bool((c := best(e["result"], site)) and c["causal"] and (c["route"] == "pattern") == pattern)
            for e in found[family]
        ]
        print(f"route_power_{label}: {np.mean(hits):.2f} ({sum(hits)} of {len(hits)})")
        shares = [e.get("true_share") for e in found[family]]
        print(
            f"share_removed_true_heads_{label}: "
            f"{np.mean([s for s in shares if s is not None]) if any(s is not None for s in shares) else None} "
            f"(per seed: {shares})"
        )
    if "null" in found:
        called = [any(c["causal"] for c in e["result"]["candidates"]) for e in found["null"]]
        print(f"route_fpr: {np.mean(called):.2f} ({sum(called)} of {len(called)} nulls)")
    for family in ("attn", "heads"):
        for method in ("attention", "atp", "atp-output"):
            values = []
            for e in found.get(family, []):
                folder = Path(run) / "explain"
                (csv,) = [
                    p
                    for p in folder.glob("*/localisation.csv")
                    if json.loads((p.parent / "explain.json").read_text())["judge"] == e["member"]
                ]
                import pandas as pd

                frame = pd.read_csv(csv)
                rows = frame[frame["method"] == method]
                values.append(
                    auroc(
                        {(int(r.layer), int(r.head)): float(r.score) for r in rows.itertuples()},
                        {tuple(h) for h in e["truth"]},
                    )
                )
            if values:
                print(f"auroc_{method}_{family}: {np.mean(values):.3f} (per seed: {[round(v, 3) for v in values]})")


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
    from interp.core.adapters import adapter_folder, read_manifest
    from interp.hooks.nodes import node_from_dict
    from interp.hooks.spec import AttentionIntervention, pairs_table

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

    def study(on: Path, family: str, member: str) -> dict:
        """explain on `on` (the run or a copy of it), then the manifest's heads on the same test split."""
        result = json.loads(interp("explain", str(on), "--judge", member, *SETTINGS, "--device", args.device, "--json"))
        manifest = read_manifest(adapter_folder(member)) if adapter_folder(member) else {}
        truth = manifest.get("planted_heads")
        entry = {"member": member, "result": result, "truth": truth}
        if truth and family in ("attn", "heads"):
            spec = args.out / f"true-heads-{family}-{Path(member).name}.toml"
            heads = pairs_table(truth)
            made = (
                AttentionIntervention(target="self", alpha=0.0, heads=heads, name="true-heads-mask")
                if family == "attn"
                else node_from_dict(
                    {"site": "head_output", "op": "mean", "heads": heads, "name": "true-heads-output-mean"}
                )
            )
            spec.write_text(made.to_toml())
            split = ["--selection-share", "0.4", "--split-seed", "0", "--device", args.device, "--json"]
            payload = json.loads(interp("intervene", str(on), "--spec", str(spec), "--judge", member, *split))
            (row,) = [r for r in payload["causal"] if r["judge"] == member]
            entry["true_share"] = row["share_removed"]
        return entry

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
