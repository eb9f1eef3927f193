"""Bench: does `interp explain` find where self-preference lives, when we built it there?

    python experiments/bench_mechanism.py [--families attn-trained,content,heads,mlp,direction,lora,null]
                                          [--seeds 7210-7219] [--null-seeds 0-11] [--n 150] [--device cpu]
                                          [--out runs/mechanism72] [--executor ray] [--no-sensitivity]
                                          [--report-only] [--answers RUN] [--dtype float32] [--jobs 1]
                                          [--batch-size 8]
    python experiments/bench_mechanism.py --plan 4 [--seeds 1-4] [--attn-seeds 9-12] [--null-seeds 0-5]
                                          [--families attn,heads,lora,null] [--out runs/mechanism] ...

    python experiments/bench_mechanism.py --plan 8 [--families ...] [--device cuda] [--out runs/mechanism78]
                                          [--records DIR] [--report-only] [--answers RUN] [--executor ray]

Plan 8 (issue 78, experiments/records/plan.md "Plan 8"): the bench in steps that land, one committed record a
member under experiments/records/bench8/ (train and check, the ladder, the verdict-temperature edit), resumed from
the records on any machine; `--report-only` reads the records alone. Its code: experiments/records/mechanism_plan8.py.

Plan 5 (the default; registered before any result: experiments/records/plan.md, "Plan 5"): plan 4's rules
(the matched null, the one-sided gap gate, a share that removes, Holm over the member's candidates, a route that
needs a causal total), ten seeds a family (7210-7219), twelve nulls, split seed 72901. Steps, every one keyed and
kept (a rerun resumes where it stopped; a step whose output is there is not run again):
1. train the members not yet trained: `interp organism train RECIPE --seed S --out OUT/organisms/FAMILY-seedS`
   for the six planted families (recipes in experiments/organisms/: -attn-trained, -content, -heads, -mlp,
   -direction and the LoRA-planted smollm2-135m-selfpref.toml); the nulls 0-5 are the shipped
   `smollm2-135m-judge` and `-seed1..5`, the new nulls 6-11 (plan 3, amendment 9) the null recipe trained with
   `--seed S` into OUT/organisms/null-seedS (a copy of runs/null-oos/organisms/null-seedS placed there is used);
2. one run over the organisms' held-out set (OUT/run, `attention = "final"`) with every member and the six shipped
   nulls as judges (a run judged without a member is refused: give it a fresh --out);
3. per member its full ladder, `interp explain RUN --judge M` with all five methods, routes on (counterfactual
   `other`), top 3 heads, 2 MLP layers, one random set per kind, and the registered controls named (the six
   shipped nulls other than M); then the trained attention-routed members' recipe check (the own answer masked at
   the manifest heads, on the same test split: OUT/checks/); then the nulls' ladders again with `--no-gap-gate`;
   unless `--no-sensitivity`, the planted members' ladders again with null seed 0 left out of the controls (k = 5).
   Members go round-robin over the families, so a bench cut short has read every family alike. A ladder whose
   explain.json (these settings, these controls) is under --out is not run again.
`--report-only` trains, judges and runs nothing: it reads whatever explain.json files (and recipe checks) are
under --out and prints the figures. Either way it prints one `name: value [lo, hi] (k of n)` a line (Clopper-Pearson
95 %) over the members whose ladder ran; where some did not, `(k of n run; m of N not run)`, never guessed:
route_power_pattern (attn-trained: the `attention` candidate causal with route `pattern`), route_power_content
(content: the `atp-output` candidate causal with route `content`), wrong_route_rate (heads, lora, mlp,
direction: any candidate causal with route `pattern`), site_power, site_power_mlp, site_power_direction (mlp: the
`atp-mlp` candidate causal; direction: the `direction` candidate causal), null_fpr_ladder and
null_fpr_ladder_no_gap_gate (nulls: any candidate causal, random sets included); by default (plan 5) the planted
figures again as `..._k5`. Then, not registered, shown as such: recipe_check_pattern (the mask at the manifest heads
removes at least 0.6 of the gap) and site_power_mlp_on_planted (the atp-mlp candidate causal and on a planted
layer); `auroc_<method>_<family>`, the selection split's ranking against the planted heads (attention, atp,
atp-output on attn-trained, content, heads) or layers (atp-mlp, direction on mlp, direction); one line per member
(each method's chosen candidate: causal, route, share); and the ladders' median wall time.

Plan 4 (`--plan 4`, "Plan 3" read under "Plan 4"; split seed 71071), as it ran: attention-routed (built)
and planted-heads members, the shipped LoRA-planted organism and nulls 0-5, the automatic controls; after each
ladder the manifest heads' own-answer mask (attention-routed) or head-output mean ablation (planted-heads). Prints
route_power_attention, route_power_output, wrong_route_rate, route_fpr and route_fpr_no_gap_gate, the true heads'
shares and AUROC per method per family (experiments/records/mechanism_figures.py reads a plan-4 bench cut short).
`--answers RUN` (either plan): the authors' answers (and items) of a run made with the same data, n, seed, authors
and decoding, placed in the bench's run before it is judged, so the judging can run where the authors' weights are
not (a GPU machine holding SmolLM2 only: a run whose answers are all there loads no author). `--jobs K`: K members
side by side, each on its own copy of the run, merged back after. `--executor ray` (plan 5): explain's and
intervene's tests on Ray.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from interp.metrics.stats import auroc as causal_auroc
from interp.metrics.stats import clopper_pearson

REPO = Path(__file__).resolve().parents[1]
ORGANISMS = REPO / "experiments" / "organisms"
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

# ---- plan 5 ----------------------------------------------------------------------------------------------------------
RECIPES5 = {  # family -> recipe (manifest planted_route: pattern, content, output, mlp, direction; lora: whole model)
    "attn-trained": "smollm2-135m-selfpref-attn-trained.toml",
    "content": "smollm2-135m-selfpref-content.toml",
    "heads": "smollm2-135m-selfpref-heads.toml",
    "mlp": "smollm2-135m-selfpref-mlp.toml",
    "direction": "smollm2-135m-selfpref-direction.toml",
    "lora": "smollm2-135m-selfpref.toml",
}
NULL_RECIPE = "smollm2-135m-judge.toml"  # the new nulls 6-11 (plan 3, amendment 9)
FAMILIES5 = (*RECIPES5, "null")
SPLIT_SEED5 = "72901"  # plan 5: used by no earlier run, check, amendment or must-show run
METHODS5 = ("attention", "atp", "atp-output", "atp-mlp", "direction")
SETTINGS5 = [
    *(SPLIT_SEED5 if flag == SPLIT_SEED else flag for flag in SETTINGS),
    "--counterfactual",
    "other",
    *(flag for method in METHODS5 for flag in ("--method", method)),
]
# what an explain.json must have been run with to count for plan 5 (its settings as written)
REGISTERED5 = {
    "top_k": 3,
    "mlp_k": 2,
    "selection_share": 0.4,
    "split_seed": int(SPLIT_SEED5),
    "random_sets": 1,
    "routes": True,
    "counterfactual": "other",
    "test_alpha": 0.05,
}
HEAD_METHODS5 = ("attention", "atp", "atp-output")  # rank (layer, head)
LAYER_METHODS5 = ("atp-mlp", "direction")  # rank layers
UNITS5 = {"attn-trained": HEAD_METHODS5, "content": HEAD_METHODS5, "heads": HEAD_METHODS5}
UNITS5 |= {"mlp": LAYER_METHODS5, "direction": LAYER_METHODS5}
SITE_METHODS5 = {"mlp": "atp-mlp", "direction": "direction"}  # site_power: the planted site's candidate
MASK_BAR = 0.6  # the recipe check: the own answer masked at the manifest heads removes at least this share


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


def train(args: argparse.Namespace, recipe: str, seed: int, folder: Path) -> None:
    """`interp organism train` of `recipe` with `seed` into `folder`, unless an organism is there already."""
    if not (folder / "manifest.json").is_file():
        interp(
            "organism",
            "train",
            str(ORGANISMS / recipe),
            "--seed",
            str(seed),
            "--out",
            str(folder),
            "--device",
            args.device,
        )


def members(args) -> dict[str, list[str]]:
    families = args.families.split(",")
    out: dict[str, list[str]] = {}
    for family in ("attn", "heads"):
        if family in families:
            out[family] = []
            for seed in seeds(args.attn_seeds if family == "attn" else args.seeds):
                folder = args.out / "organisms" / f"{family}-seed{seed}"
                train(args, RECIPES[family], seed, folder)
                out[family].append(str(folder))
    if "lora" in families:
        out["lora"] = ["smollm2-135m-selfpref"]
    if "null" in families:
        out["null"] = [NULLS[s] for s in seeds(args.null_seeds)]
    return out


def auroc(scores: dict, truth: set) -> float:
    """The planted units' scores (heads `(layer, head)` or layers) against every other unit's
    (interp.metrics.stats.auroc, ties half)."""
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


def judged_run(args: argparse.Namespace, judges: list[str], data: str = "heldout") -> Path:
    """OUT/run: the organisms' held-out set (plan 8: `data` the bench items) judged by every one of `judges`
    (`attention = "final"`); made, or resumed, here. A run judged without one of them is refused, never mixed in."""
    config = args.out / "config.toml"
    config.write_text(
        f'name = "mechanism"\ndata = "{data}"\nn = {args.n}\nmodels = {json.dumps(list(AUTHORS))}\njudges '
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
    return run


def run_work(args: argparse.Namespace, run: Path, work: list[tuple], study) -> list:
    """`study(on, *item)` for every item of `work` on the run, or with `--jobs` K side by side, each worker on its
    own copy of the run (a run has one writer), the copies' keyed results merged back after. A failing item is
    reported and the others go on; what each returned, in a list."""

    def attempt(on: Path, item: tuple) -> list:
        try:
            return [study(on, *item)]
        except (SystemExit, Exception) as failed:  # one failing member: the others go on
            print(f"{item}: {failed}", file=sys.stderr, flush=True)
            return []

    if args.jobs <= 1:
        return [done for item in work for done in attempt(run, item)]
    copies = [args.out / f"run.job{k}" for k in range(args.jobs)]
    for copy in copies:
        if not copy.exists():
            shutil.copytree(run, copy)
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // args.jobs)))

    def worker(k: int) -> list:
        return [done for item in work[k :: args.jobs] for done in attempt(copies[k], item)]

    with ThreadPoolExecutor(args.jobs) as pool:
        results = [done for part in pool.map(worker, range(args.jobs)) for done in part]
    for copy in copies:  # the keyed results (explain, causal) of every copy into the run; its own files stay
        for path in copy.rglob("*"):
            target = run / path.relative_to(copy)
            if path.is_file() and not target.exists() and not path.name.endswith(".lock"):
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
    return results


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


def true_heads_node(kind: str, truth: list[list[int]]):
    """The manifest heads' test: the own answer masked there (`mask`) or their outputs mean-ablated (`output`)."""
    from interp.hooks.nodes import node_from_dict
    from interp.hooks.spec import AttentionIntervention, pairs_table

    heads = pairs_table(truth)
    if kind == "mask":
        return AttentionIntervention(target="self", alpha=0.0, heads=heads, name="true-heads-mask")
    return node_from_dict({"site": "head_output", "op": "mean", "heads": heads, "name": "true-heads-output-mean"})


def true_heads_row(args: argparse.Namespace, on: Path, member: str, spec: Path, made, extra: list[str]) -> dict:
    """`interp intervene` of the test `made` (written to `spec`) on `member`, selection share 0.4; `extra`: the
    split seed and any further flags. The member's row of the causal table."""
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(made.to_toml())
    split = ["--selection-share", "0.4", *extra, "--device", args.device, "--json"]
    payload = json.loads(interp("intervene", str(on), "--spec", str(spec), "--judge", member, *split))
    (row,) = [r for r in payload["causal"] if r["judge"] == member]
    return row


# ---- plan 4, as it ran -----------------------------------------------------------------------------------------------


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
        made = true_heads_node("mask" if family == "attn" else "output", truth)
        row = true_heads_row(args, on, member, spec, made, ["--split-seed", SPLIT_SEED])
        entry["true_share"] = row["share_removed"]
    return entry


def bench_plan4(args: argparse.Namespace) -> None:
    """Plan 4's bench: train, judge, explain and test the manifest heads per member, then its figures."""
    family_members = members(args)
    run = judged_run(args, [m for ms in family_members.values() for m in ms])
    work = [(family, member) for family, ms in family_members.items() for member in ms]
    entries = run_work(args, run, work, lambda on, fam, member: study_member(args, on, fam, member) | {"family": fam})
    found: dict[str, list[dict]] = {family: [] for family in family_members}
    for family, member in work:
        found[family] += [e for e in entries if e["member"] == member and e["family"] == family]
    missing = [member for family, member in work if not any(e["member"] == member for e in found[family])]
    print(f"members_missing: {len(missing)} {missing}")  # a member whose explain failed counts in no figure below

    _print_figures(found, run)


# ---- plan 5: what counts, as pure functions of explain.json dicts ----------------------------------------------------


@dataclass(frozen=True)
class Member:
    """A bench judge: its family, its seed, and its name in the run (a shipped alias or an organism folder)."""

    family: str
    seed: int
    spec: str

    @property
    def name(self) -> str:
        return Path(self.spec).name


def controls_for(name: str, reading: str = "main") -> list[str]:
    """The registered controls (plan 5): the six shipped nulls other than the judge `name`; reading `k5` (the
    sensitivity reading of the planted families): null seed 0, the planted families' start, left out too."""
    leave = {name} | ({NULLS[0]} if reading == "k5" else set())
    return [null for null in NULLS if null not in leave]


def ladder_reading(explanation: dict) -> str | None:
    """Which plan-5 ladder an explain.json is: `main` (gated, the registered controls), `no_gap_gate` (the same
    controls, `--no-gap-gate`) or `k5` (gated, null seed 0 left out of the controls); None when its settings or
    controls are not plan 5's (another plan's ladder, a trial run), so it counts for nothing here."""
    settings = explanation.get("settings") or {}
    if any(settings.get(key) != value for key, value in REGISTERED5.items()):
        return None
    if set(settings.get("methods") or ()) != set(METHODS5) or explanation.get("null", "matched") != "matched":
        return None
    name = Path(explanation["judge"]).name
    controls = sorted(Path(c).name for c in explanation.get("controls") or ())
    gated = explanation.get("gap_gate", True)
    if controls == sorted(controls_for(name)):
        return "main" if gated else "no_gap_gate"
    if gated and controls == sorted(controls_for(name, "k5")):
        return "k5"
    return None


def is_called(candidate: dict | None, route: str | None = None) -> bool:
    """The candidate is causal (after Holm, with a share and a gap: `causal` is true, never None) and, where
    `route` is given, its route (under the default counterfactual) is that one."""
    return candidate is not None and candidate.get("causal") is True and route in (None, candidate.get("route"))


def wrong_route(ladder: dict) -> bool:
    """Any candidate, random ones included, called causal with route `pattern` (wrong_route_rate)."""
    return any(is_called(c, "pattern") for c in ladder["candidates"])


def any_causal(ladder: dict) -> bool:
    """Any candidate, random ones included, called causal (null_fpr_ladder)."""
    return any(is_called(c) for c in ladder["candidates"])


def site_called(family: str, ladder: dict) -> bool:
    """The planted site's candidate causal: `atp-mlp`'s for the MLP family, `direction`'s for the direction one."""
    return is_called(chosen(ladder, SITE_METHODS5[family]))


def on_planted_layers(ladder: dict, manifest: dict) -> bool:
    """The `atp-mlp` candidate causal and on at least one of the manifest's planted layers (not registered)."""
    candidate = chosen(ladder, "atp-mlp")
    planted = set(manifest.get("planted_layers") or ())
    return is_called(candidate) and bool(planted & set(candidate.get("layers") or ()))


def mask_removes(check: dict) -> bool:
    """The recipe check: the own answer masked at the manifest heads removes at least MASK_BAR of the gap (a share
    above 1, the preference turned round, counts: plan 3, amendment 2)."""
    share = check.get("share_removed")
    share = share.get("estimate") if isinstance(share, dict) else share
    return share is not None and share >= MASK_BAR


# (figure, the families it reads, the reading it reads (found[reading]: member name -> ladder or check), the predicate
# of (the member's family, its ladder or check, its manifest) that counts a member)
FIGURES5 = (
    ("route_power_pattern", ("attn-trained",), "main", lambda f, r, m: is_called(chosen(r, "attention"), "pattern")),
    ("route_power_content", ("content",), "main", lambda f, r, m: is_called(chosen(r, "atp-output"), "content")),
    ("wrong_route_rate", ("heads", "lora", "mlp", "direction"), "main", lambda f, r, m: wrong_route(r)),
    ("site_power", ("mlp", "direction"), "main", lambda f, r, m: site_called(f, r)),
    ("site_power_mlp", ("mlp",), "main", lambda f, r, m: site_called(f, r)),
    ("site_power_direction", ("direction",), "main", lambda f, r, m: site_called(f, r)),
    ("null_fpr_ladder", ("null",), "main", lambda f, r, m: any_causal(r)),
    ("null_fpr_ladder_no_gap_gate", ("null",), "no_gap_gate", lambda f, r, m: any_causal(r)),
)
UNREGISTERED5 = (  # printed after the registered figures, said to be outside the plan
    ("recipe_check_pattern", ("attn-trained",), "mask", lambda f, r, m: mask_removes(r)),
    ("site_power_mlp_on_planted", ("mlp",), "main", lambda f, r, m: on_planted_layers(r, m)),
)


def tally(members: list[Member], found: dict[str, dict], families, predicate, manifests=None):
    """(hits over the members of `families` whose result is in `found` (name -> ladder or check), the names of
    those whose result is not: not run, never guessed)."""
    hits, not_run = [], []
    for member in members:
        if member.family not in families:
            continue
        if member.name in found:
            hits.append(bool(predicate(member.family, found[member.name], (manifests or {}).get(member.name, {}))))
        else:
            not_run.append(member.name)
    return hits, not_run


def figure_line(name: str, hits: list[bool], not_run: list[str]) -> str:
    """`name: value [lo, hi] (k of n)` over the members run, Clopper-Pearson 95 %; where some were not run,
    `(k of n run; m of N not run)`; where none was, `not run (0 of N run)`."""
    total = len(hits) + len(not_run)
    if not hits:
        return f"{name}: not run (0 of {total} run)"
    k, n = sum(hits), len(hits)
    lo, hi = clopper_pearson(k, n)
    counts = f"{k} of {n}" + (f" run; {len(not_run)} of {total} not run" if not_run else "")
    return f"{name}: {k / n:.2f} [{lo:.2f}, {hi:.2f}] ({counts})"


def figure_lines(members: list[Member], found: dict[str, dict[str, dict]], manifests=None, figures=FIGURES5):
    """`figures` (the registered FIGURES5, or UNREGISTERED5) over `found` (reading -> member name -> ladder or
    check), each only where the bench has members of its families."""
    lines = []
    for name, families, reading, predicate in figures:
        hits, not_run = tally(members, found.get(reading, {}), families, predicate, manifests)
        if hits or not_run:
            lines.append(figure_line(name, hits, not_run))
    return lines


def sensitivity_lines(members: list[Member], found: dict[str, dict[str, dict]], manifests=None) -> list[str]:
    """The planted families' registered figures again on the k = 5 ladders (null seed 0 left out of the
    controls), as `name_k5`."""
    planted = [(name + "_k5", families, "k5", predicate) for name, families, _, predicate in FIGURES5]
    return figure_lines(members, found, manifests, [f for f in planted if "null" not in f[1]])


def planted_units(manifest: dict) -> set:
    """The planted heads `(layer, head)` or, for the MLP and direction families, the planted layers."""
    if manifest.get("planted_heads"):
        return {tuple(int(x) for x in head) for head in manifest["planted_heads"]}
    return {int(layer) for layer in manifest.get("planted_layers") or ()}


def member_aurocs(family: str, scores: dict[str, dict], manifest: dict) -> dict[str, float]:
    """method -> AUROC of its selection-split ranking (`scores`: method -> unit -> score) against the planted units,
    for the methods whose unit is the family's (heads for the head families, layers for mlp and direction); a
    method with no planted unit or no other unit among its scores gives none."""
    truth = planted_units(manifest)
    out = {}
    for method in UNITS5.get(family, ()):
        ranked = scores.get(method) or {}
        if any(unit in truth for unit in ranked) and any(unit not in truth for unit in ranked):
            out[method] = auroc(ranked, truth)
    return out


def auroc_lines(members: list[Member], aurocs: dict[str, dict[str, float]]) -> list[str]:
    """`auroc_<method>_<family>: mean (per seed: [...]; k of n run)` over the members with a value (`aurocs`:
    member name -> method -> AUROC)."""
    lines = []
    for family in UNITS5:
        group = [m for m in members if m.family == family]
        for method in UNITS5[family]:
            values = [round(aurocs[m.name][method], 3) for m in group if method in aurocs.get(m.name, {})]
            if values:
                lines.append(
                    f"auroc_{method}_{family}: {np.mean(values):.3f} (per seed: {values}; {len(values)} of "
                    f"{len(group)} run)"
                )
            elif group:
                lines.append(f"auroc_{method}_{family}: not run (0 of {len(group)} run)")
    return lines


def member_line(member: Member, ladder: dict) -> str:
    """One member's ladder in a line: each method's chosen candidate (causal or not, route, share), and whether a
    random set was called."""
    parts = []
    for method in METHODS5:
        candidate = chosen(ladder, method)
        if candidate is None:
            parts.append(f"{method} none")
            continue
        share = candidate.get("share_removed")
        route = f" {candidate['route']}" if candidate.get("route") else ""
        shown = f" {share:.2f}" if share is not None else ""
        parts.append(f"{method} {'causal' if is_called(candidate) else 'not causal'}{route}{shown}")
    randoms = [c for c in ladder["candidates"] if c["selected_by"] == "random" and is_called(c)]
    return f"  {member.name}: " + "; ".join(parts) + (f"; {len(randoms)} random set(s) causal" if randoms else "")


def report_lines(members: list[Member], found: dict[str, dict[str, dict]], local: dict, sensitivity=False):
    """Everything the bench prints, from what it found (`found`: reading -> member name -> ladder, and `mask` ->
    member name -> recipe check; `local`: member name -> (manifest, method -> unit -> score))."""
    manifests = {name: manifest for name, (manifest, _) in local.items()}
    not_run = [m.name for m in members if m.name not in found.get("main", {})]
    lines = [
        f"plan: 5 (split seed {SPLIT_SEED5}, counterfactual other, controls: the six shipped nulls other than "
        "the member)",
        f"members_not_run: {len(not_run)} of {len(members)} {not_run}",
        *figure_lines(members, found, manifests),
        *(sensitivity_lines(members, found, manifests) if sensitivity else []),
    ]
    aurocs = {m.name: member_aurocs(m.family, local[m.name][1], local[m.name][0]) for m in members if m.name in local}
    lines += auroc_lines(members, aurocs)
    if diagnostics := figure_lines(members, found, manifests, UNREGISTERED5):
        lines += ["-- not registered (diagnostics) --", *diagnostics]
    lines += [member_line(m, found["main"][m.name]) for m in members if m.name in found.get("main", {})]
    return lines


# ---- plan 5: the steps and the files -----------------------------------------------------------------------------


def members5(args: argparse.Namespace, *, trained: bool) -> list[Member]:
    """The bench's members, family by family in the registered order; `trained`: train those not yet trained."""
    families = args.families.split(",")
    if unknown := sorted(set(families) - set(FAMILIES5)):
        raise SystemExit(f"--families: {', '.join(unknown)} not among plan 5's ({', '.join(FAMILIES5)})")
    out = []
    for family in (f for f in FAMILIES5 if f in families):
        for seed in seeds(args.null_seeds if family == "null" else args.seeds):
            shipped = family == "null" and seed < len(NULLS)
            folder = args.out / "organisms" / f"{family}-seed{seed}"
            out.append(Member(family, seed, NULLS[seed] if shipped else str(folder)))
            if trained and not shipped:
                train(args, RECIPES5.get(family, NULL_RECIPE), seed, folder)
    return out


def round_robin(members: list[Member]) -> list[Member]:
    """The members one family after another, seed by seed (a bench cut short has read every family alike)."""
    by_family: dict[str, list[Member]] = {}
    for member in members:
        by_family.setdefault(member.family, []).append(member)
    return [m for group in itertools.zip_longest(*by_family.values()) for m in group if m is not None]


def find_ladders(out: Path) -> dict[str, dict[str, dict]]:
    """reading -> member name -> its explain.json, for every plan-5 ladder anywhere under `out` (its run, the run's
    copies of --jobs, a run copied back from another machine); the explain folder kept as `_folder` (its
    localisation beside it)."""
    found: dict[str, dict[str, dict]] = {}
    for path in sorted(out.rglob("explain.json")):
        try:
            ladder = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if (reading := ladder_reading(ladder)) is not None:
            found.setdefault(reading, {}).setdefault(Path(ladder["judge"]).name, ladder | {"_folder": str(path.parent)})
    return found


def mask_check_path(out: Path, member: Member) -> Path:
    return out / "checks" / f"mask-{member.name}.json"


def find_checks(out: Path, members: list[Member]) -> dict[str, dict]:
    """member name -> its recipe check (the manifest heads' mask), for the members whose check ran."""
    paths = {m.name: mask_check_path(out, m) for m in members}
    return {name: json.loads(path.read_text()) for name, path in paths.items() if path.is_file()}


def localisation_scores(folder: Path) -> dict[str, dict]:
    """method -> unit -> score of a ladder's selection-split localisation (its folder's localisation.csv: heads
    `(layer, head)`, atp-mlp's layers with head -1; directions.npz: each layer's paired accuracy)."""
    import pandas as pd

    scores: dict[str, dict] = {}
    if (folder / "localisation.csv").is_file():
        for row in pd.read_csv(folder / "localisation.csv").itertuples():
            unit = int(row.layer) if int(row.head) < 0 else (int(row.layer), int(row.head))
            scores.setdefault(str(row.method), {})[unit] = float(row.score)
    if (folder / "directions.npz").is_file():
        data = np.load(folder / "directions.npz")
        scores["direction"] = {int(layer): float(s) for layer, s in zip(data["layer"], data["score"], strict=True)}
    return scores


def manifest_of(member: Member) -> dict:
    path = Path(member.spec) / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def report5(args: argparse.Namespace, members: list[Member]) -> None:
    """Print plan 5's figures from whatever ladders and checks are under --out."""
    found = find_ladders(args.out)
    found["mask"] = find_checks(args.out, members)
    main = found.get("main", {})
    local = {
        m.name: (manifest_of(m), localisation_scores(Path(main[m.name]["_folder"]))) for m in members if m.name in main
    }
    sensitivity = args.sensitivity or bool(found.get("k5"))
    for line in report_lines(members, found, local, sensitivity):
        print(line)
    walls = []
    for path in sorted((args.out / "ladders").glob("*.json")):
        timings = json.loads(path.read_text()).get("timings") or {}
        walls += [timings["wall_s"]] if "wall_s" in timings else []
    if walls:
        spread = f"min {min(walls):.0f}, max {max(walls):.0f}; {len(walls)} ladders"
        print(f"ladder_wall_s: median {np.median(walls):.0f} ({spread})")


def study5(args: argparse.Namespace, done: dict[str, dict], on: Path, step: str, member: Member) -> None:
    """One step for one member on `on` (the run or a copy): a ladder (`main`, `no_gap_gate`, `k5`), kept by explain
    in the run and its JSON (with --timings) in OUT/ladders/; or the recipe check (`mask`) in OUT/checks/."""
    if step == "mask":
        path = mask_check_path(args.out, member)
        truth = manifest_of(member).get("planted_heads")
        if path.is_file() or not truth:
            return
        extra = ["--split-seed", SPLIT_SEED5, *(x for c in controls_for(member.name) for x in ("--control-judge", c))]
        made = true_heads_node("mask", truth)
        row = true_heads_row(args, on, member.spec, path.with_suffix(".toml"), made, extra + executor_flags(args))
        path.write_text(json.dumps(row | {"member": member.name}))
        return
    if member.name in done.get(step, {}):
        return
    controls = [x for c in controls_for(member.name, step) for x in ("--control-judge", c)]
    gate = ["--no-gap-gate"] if step == "no_gap_gate" else []
    command = [*SETTINGS5, *controls, *gate, "--device", args.device, *executor_flags(args), "--timings", "--json"]
    shown = interp("explain", str(on), "--judge", member.spec, *command)
    log = args.out / "ladders" / f"{member.name}-{step}.json"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(shown)


def executor_flags(args: argparse.Namespace) -> list[str]:
    return ["--executor", args.executor] if args.executor else []


def bench_plan5(args: argparse.Namespace) -> None:
    """Plan 5's bench: train, judge, the ladders and checks (module docstring), then its figures."""
    bench = members5(args, trained=True)
    judges = list(dict.fromkeys([m.spec for m in bench] + NULLS))  # the six shipped nulls: every member's controls
    run = judged_run(args, judges)
    order = round_robin(bench)
    work = [("main", m) for m in order] + [("mask", m) for m in order if m.family == "attn-trained"]
    work += [("no_gap_gate", m) for m in order if m.family == "null"]
    work += [("k5", m) for m in order if args.sensitivity and m.family != "null"]
    run_work(args, run, work, functools.partial(study5, args, find_ladders(args.out)))
    report5(args, bench)


def parse_args() -> argparse.Namespace:
    """The options; the defaults that differ by plan (families, seeds, nulls, folder) filled in from --plan."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", type=int, choices=(4, 5, 8), default=5, help="the registered bench (default: 5)")
    parser.add_argument("--seeds", default=None, help="the planted families' seeds (plan 5: 7210-7219; plan 4: 1-4)")
    parser.add_argument(
        "--attn-seeds",
        default="9-12",
        help="plan 4's attention-routed seeds (1-4 were read while it was built, 5-8 judged under the layers-27-29 "
        "recipe: plan 3, amendments 3 and 6)",
    )
    parser.add_argument("--null-seeds", default=None, help="plan 5: 0-11 (6-11 trained here); plan 4: 0-5")
    parser.add_argument("--families", default=None, help=f"plan 5: {','.join(FAMILIES5)}; plan 4: attn,heads,lora,null")
    parser.add_argument("--n", type=int, default=150)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=None, help="plan 5: runs/mechanism72; plan 4: runs/mechanism")
    parser.add_argument("--executor", default=None, help="where explain's tests run: local (default) or ray")
    parser.add_argument(
        "--sensitivity",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="plan 5: also the k = 5 ladders (null seed 0 out of the controls); --no-sensitivity skips them",
    )
    parser.add_argument(
        "--report-only", action="store_true", help="plan 5: print the figures from what is under --out; run nothing"
    )
    parser.add_argument("--answers", type=Path, default=None, help="a run folder whose authors' answers to use")
    parser.add_argument("--dtype", default=None, help="the judges' dtype (default: the device's)")
    parser.add_argument("--jobs", type=int, default=1, help="members studied side by side (a GPU: several)")
    parser.add_argument("--batch-size", type=int, default=None, help="judged pairs per forward pass (a GPU: more)")
    parser.add_argument("--records", type=Path, default=None, help="plan 8: the records (experiments/records/bench8)")
    args = parser.parse_args()
    if args.plan == 8:
        if args.seeds or args.null_seeds:
            parser.error("plan 8's seeds are registered (experiments/records/plan.md, Plan 8)")
        args.families = args.families or "attn-trained,content,heads,mlp,direction,lora,null"
        args.out = (args.out or Path("runs/mechanism78")).resolve()
        return args
    plan5 = args.plan == 5
    args.seeds = args.seeds or ("7210-7219" if plan5 else "1-4")
    args.null_seeds = args.null_seeds or ("0-11" if plan5 else "0-5")
    args.families = args.families or (",".join(FAMILIES5) if plan5 else "attn,heads,lora,null")
    args.out = (args.out or Path("runs/mechanism72" if plan5 else "runs/mechanism")).resolve()
    if not plan5 and (args.report_only or args.sensitivity or args.executor):
        parser.error(
            "--report-only, --sensitivity and --executor are plan 5's (plan 4 cut short: records/mechanism_figures.py)"
        )
    return args


def plan8(args: argparse.Namespace) -> None:
    """Plan 8 (experiments/records/mechanism_plan8.py): its records' report, or its steps; bad input is one
    `error:` line and exit 2, nothing written."""
    sys.path.insert(0, str(REPO / "experiments" / "records"))
    import mechanism_plan8 as plan

    records = (args.records or plan.RECORDS).resolve()
    try:
        if args.report_only:
            plan.report8(records)
            return
        args.records = records
        plan.bench_plan8(args)
    except plan.Refused as refused:
        print(f"error: {refused}", file=sys.stderr)
        raise SystemExit(2) from None


def main() -> None:
    args = parse_args()
    if args.plan == 8:
        plan8(args)
        return
    if args.report_only:
        report5(args, members5(args, trained=False))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    (bench_plan5 if args.plan == 5 else bench_plan4)(args)


if __name__ == "__main__":
    main()
