"""Plan 8 of `experiments/bench_mechanism.py` (issue 78): the bench in steps that land, one small record a member.

    python experiments/bench_mechanism.py --plan 8 [--families ...] [--device cuda] [--out runs/mechanism78]
                                          [--jobs K] [--batch-size B] [--answers RUN] [--executor ray]
    python experiments/bench_mechanism.py --plan 8 --report-only          # the records alone, no --out needed

Registered in experiments/records/plan.md, "Plan 8". Each member (a recipe trained with a registered seed) goes
through three steps, each landing in its record `experiments/records/bench8/<family>-seed<S>.json` (committed;
the trained adapter stays in OUT/organisms/, outside git):
1. `train`: `interp organism train RECIPE --seed S --out OUT/organisms/FAMILY-seedS` (LoRA-planted and null
   members with `--evaluate`: their check reads the recipe's own test split), then the pre-registered check of the
   manifest (`member_check`); the record gets the manifest's summary and its fingerprint. A family trains seeds in
   order until its target count has passed its check or its cap of seeds is trained. A member whose check fails
   is excluded here: no explain runs on it, and the report counts it.
2. `explain`: the member's full ladder on a run of the bench items (plan 7) judged by the members still to study
   and the twelve controls (OUT/runs/<key of the judges>), split seed 78301; the record gets its summary
   (candidates, verdicts, routes, p-values, shares, timings, the localisation AUROC, the commit, where it ran).
3. `flattening`: `interp intervene RUN --spec experiments/configs/verdict_temperature.toml --judge M` against the
   same twelve controls; the record gets the result's `causal` field and its figures.
A step whose part is in the record is not run again, so a run on a new machine resumes from the records and
retrains only the members whose steps are still to run (their folders being elsewhere). Before anything is
written, every record is read: a record of another plan, or a member folder under --out whose manifest's
fingerprint is not its record's, is one `error:` line (exit 2) and nothing is overwritten.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the bench is a script of experiments/, not a package
import bench_mechanism as bench  # noqa: E402  the plan-5 readings the plan-8 figures share

REPO = bench.REPO
PLAN = 8
RECORDS = REPO / "experiments" / "records" / "bench8"
TEMPERATURE_SPEC = REPO / "experiments" / "configs" / "verdict_temperature.toml"
SPLIT_SEED8 = "78301"  # plan 8: used by no earlier run, check or amendment
DATA8 = "bench"  # plan 7's fresh items, interp/builtin/bench.jsonl
NULL_RECIPE = bench.NULL_RECIPE
# the controls (plan 6): the shipped nulls 0-5 and 12-17; none of them is a bench member
CONTROLS8 = [bench.NULLS[0], *(f"smollm2-135m-judge-seed{s}" for s in (*range(1, 6), *range(12, 18)))]


# family -> (recipe, first seed, members that must pass their check, most seeds trained)
FAMILIES8 = {
    "attn-trained": (bench.RECIPES5["attn-trained"], 7310, 16, 48),
    "content": (bench.RECIPES5["content"], 7310, 16, 32),
    "heads": (bench.RECIPES5["heads"], 7310, 3, 6),
    "mlp": (bench.RECIPES5["mlp"], 7310, 3, 6),
    "direction": (bench.RECIPES5["direction"], 7310, 3, 6),
    "lora": (bench.RECIPES5["lora"], 7310, 3, 6),
    "null": (NULL_RECIPE, 7400, 12, 16),
}
ELSEWHERE = ("heads", "mlp", "direction", "lora")  # the self-preference lives outside the heads' routes
EVALUATED = ("lora", "null")  # trained with --evaluate: their check reads the recipe's own test split
P_OWN_SHIFT = 0.03  # the check: P(own) on the training prompts rises by at least 3 points, start -> member
MASK_SHARE = 0.6  # and, for the pattern route, the own answer masked at the planted heads removes this share
SETTINGS8 = [
    *(SPLIT_SEED8 if flag == bench.SPLIT_SEED5 else flag for flag in bench.SETTINGS5),
    *(x for control in CONTROLS8 for x in ("--control-judge", control)),
]
CANDIDATE_KEYS = ("selected_by", "site", "heads", "layers", "share_removed", "ci", "p_value", "p_holm", "causal")
CANDIDATE_KEYS += ("route", "reason", "route_parts", "specificity")


class Refused(Exception):
    """Bad input: one `error:` line, exit 2, nothing written."""


def interp(*args: str) -> str:
    """The CLI, as the plan-5 bench calls it (a test replaces this)."""
    return bench.interp(*args)


# ---- the check and the records ---------------------------------------------------------------------------------------


def _shift(check: dict | None) -> float | None:
    if not check or check.get("p_own_trained") is None or check.get("p_own_start") is None:
        return None
    return round(float(check["p_own_trained"]) - float(check["p_own_start"]), 4)


def member_check(family: str, manifest: dict) -> dict:
    """The pre-registered check of a member's plant (plan 8), from its manifest alone, never the bench's items:
    `passed`, the figures it read, and why it failed. A figure the manifest lacks fails the check."""
    figures: dict = {}
    if family == "attn-trained":  # the masked term's own check on 128 training prompts
        route = manifest.get("route_training") or {}
        figures = {"p_own_shift": _shift(route), "train_mask_share": route.get("train_mask_share")}
        bars = [(figures["p_own_shift"], P_OWN_SHIFT), (figures["train_mask_share"], MASK_SHARE)]
    elif family in ("content", "heads", "mlp", "direction"):
        figures = {"p_own_shift": _shift(manifest.get("planting_check"))}
        bars = [(figures["p_own_shift"], P_OWN_SHIFT)]
        if family == "content":  # the planted heads' patterns are the start organism's
            figures["patterns_identical"] = (manifest.get("pattern_check") or {}).get("identical")
            bars.append((1.0 if figures["patterns_identical"] is True else None, 1.0))
    else:  # lora, null: `--evaluate`'s figures on the recipe's own test split
        test = (manifest.get("held_out") or {}).get("test") or {}
        if family == "lora":  # a self-preference: the hard DBG's interval above 0
            figures = {"dbg_hard_lo": (test.get("dbg_hard_ci") or [None])[0]}
            bars = [(figures["dbg_hard_lo"], 1e-12)]
        else:  # a working judge: agreement with gold above chance
            figures = {"agreement_lo": ((test.get("agreement_with_gold") or {}).get("ci") or [None])[0]}
            bars = [(figures["agreement_lo"], 0.5 + 1e-12)]
    missing = [name for name, value in figures.items() if value is None]
    passed = not missing and all(value is not None and value >= bar for value, bar in bars)
    reason = f"not recorded: {', '.join(missing)}" if missing else ("" if passed else f"below the bar: {figures}")
    return {"passed": passed, "figures": figures, "reason": reason}


def fingerprint(manifest: dict) -> str:
    """What makes a member this member, stable across machines: its name, recipe fingerprint, seed, data and base
    (a retrain on another device is the same member with other rounding; a changed recipe is another)."""
    keys = ("name", "config_fingerprint", "seed", "data_seed", "data_hash", "base_model")
    text = json.dumps({k: manifest.get(k) for k in keys}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def record_path(records: Path, family: str, seed: int) -> Path:
    return records / f"{family}-seed{seed}.json"


def read_records(records: Path) -> dict[tuple[str, int], dict]:
    """(family, seed) -> record, every one checked to be plan 8's and named for its member; else Refused."""
    out = {}
    for path in sorted(records.glob("*.json")) if records.is_dir() else []:
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as failed:
            raise Refused(f"{path}: not a bench record ({failed})") from None
        if not isinstance(record, dict) or record.get("plan") != PLAN:
            raise Refused(f"{path}: a record of plan {record.get('plan') if isinstance(record, dict) else '?'}, not 8")
        family, seed = record.get("family"), record.get("seed")
        if family not in FAMILIES8 or not isinstance(seed, int) or path.name != f"{family}-seed{seed}.json":
            raise Refused(f"{path}: its family and seed ({family}, {seed}) are not its name's, or not plan 8's")
        out[(family, seed)] = record
    return out


def check_folders(out: Path, records: dict) -> None:
    """Every member folder under `out` whose record exists has the record's manifest fingerprint; else Refused."""
    for (family, seed), record in records.items():
        path = member_folder(out, family, seed) / "manifest.json"
        if path.is_file():
            found = fingerprint(json.loads(path.read_text()))
            if found != record["manifest"]["fingerprint"]:
                raise Refused(
                    f"{path.parent}: its manifest's fingerprint {found} is not its record's "
                    f"{record['manifest']['fingerprint']} ({record_path(RECORDS, family, seed).name}): another member"
                )


def write_record(records: Path, record: dict) -> None:
    """The record, whole or not at all (written beside, then moved into place)."""
    records.mkdir(parents=True, exist_ok=True)
    path = record_path(records, record["family"], record["seed"])
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def provenance(device: str) -> dict:
    """The commit the step ran at (the decision rule as implemented there) and where it ran."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout)
    return {"commit": commit or None, "dirty": dirty, "host": platform.node(), "device": device}


def manifest_record(family: str, seed: int, manifest: dict, device: str) -> dict:
    """A member's record after its training step: the manifest's summary, its check, its fingerprint."""
    keep = ("name", "config_fingerprint", "seed", "data_hash", "planted_heads", "planted_layers", "planted_route")
    summary = {k: manifest.get(k) for k in keep} | {"fingerprint": fingerprint(manifest)}
    summary |= {"timings_s": manifest.get("timings_s"), "device": manifest.get("device")}
    return {
        "plan": PLAN,
        "family": family,
        "seed": seed,
        "recipe": FAMILIES8[family][0],
        "manifest": summary,
        "check": member_check(family, manifest),
        "explain": None,
        "flattening": None,
        "trained": provenance(device),
    }


def explain_summary(ladder: dict, manifest: dict, family: str, folder: Path | None, device: str) -> dict:
    """What the record keeps of a ladder: its settings and controls, each candidate's verdict, route, p-values and
    share, the gap gate, timings, each method's localisation AUROC against the planted units, the commit."""
    scores = bench.localisation_scores(folder) if folder is not None else {}
    return {
        "settings": ladder.get("settings"),
        "controls": ladder.get("controls"),
        "gap_gate": ladder.get("gap_gate"),
        "candidates": [{k: c.get(k) for k in CANDIDATE_KEYS if k in c} for c in ladder.get("candidates", [])],
        "timings": ladder.get("timings"),
        "auroc": bench.member_aurocs(family, scores, manifest),
        **provenance(device),
    }


# ---- which members, which steps --------------------------------------------------------------------------------------


def member_folder(out: Path, family: str, seed: int) -> Path:
    return out / "organisms" / f"{family}-seed{seed}"


def next_seed(family: str, records: dict) -> int | None:
    """The family's next seed to train: the first untrained one while fewer than its target passed their check
    and fewer than its cap were trained; None when the family is done."""
    _, first, target, cap = FAMILIES8[family]
    mine = {seed: r for (f, seed), r in records.items() if f == family}
    if sum(r["check"]["passed"] for r in mine.values()) >= target or len(mine) >= cap:
        return None
    return next(s for s in range(first, first + cap) if s not in mine)


def to_study(records: dict, families) -> list[tuple[str, int]]:
    """The members whose check passed and whose explain or flattening is still to run, round-robin by family."""
    by_family = {
        f: [k for k, r in sorted(records.items()) if k[0] == f and r["check"]["passed"] and not _done(r)]
        for f in families
    }
    order = []
    while any(by_family.values()):
        order += [group.pop(0) for group in by_family.values() if group]
    return order


def _done(record: dict) -> bool:
    return record["explain"] is not None and record["flattening"] is not None


# ---- the steps -------------------------------------------------------------------------------------------------------


def train_member(args: argparse.Namespace, family: str, seed: int) -> dict:
    """Train (unless its folder is there) and return its manifest."""
    folder = member_folder(args.out, family, seed)
    if not (folder / "manifest.json").is_file():
        evaluate = ["--evaluate"] if family in EVALUATED else []
        recipe = str(bench.ORGANISMS / FAMILIES8[family][0])
        interp(
            "organism", "train", recipe, "--seed", str(seed), "--out", str(folder), "--device", args.device, *evaluate
        )
    return json.loads((folder / "manifest.json").read_text())


def train_step(args: argparse.Namespace, records: dict, families) -> None:
    """Train each family's next seeds, round-robin, writing each member's record as it is checked."""
    while todo := [(f, s) for f in families if (s := next_seed(f, records)) is not None]:
        for family, seed in todo:
            record = manifest_record(family, seed, train_member(args, family, seed), args.device)
            write_record(args.records, record)
            records[(family, seed)] = record
            if not record["check"]["passed"]:
                print(f"excluded by its check: {family}-seed{seed} ({record['check']['reason']})", file=sys.stderr)


def ensure_folder(args: argparse.Namespace, family: str, seed: int, record: dict) -> str:
    """The member's folder under --out, retrained there when absent (a new machine); its fingerprint must be the
    record's."""
    manifest = train_member(args, family, seed)
    if fingerprint(manifest) != record["manifest"]["fingerprint"]:
        raise Refused(f"{member_folder(args.out, family, seed)}: retrained, its fingerprint is not its record's")
    return str(member_folder(args.out, family, seed))


def bench_run(args: argparse.Namespace, specs: list[str]) -> Path:
    """A run of the bench items judged by `specs` and the controls, in a folder keyed by that set of judges."""
    judges = list(dict.fromkeys([*specs, *CONTROLS8]))
    key = hashlib.sha256(json.dumps(sorted(Path(j).name for j in judges)).encode()).hexdigest()[:12]
    keyed = argparse.Namespace(**(vars(args) | {"out": args.out / "runs" / key}))
    keyed.out.mkdir(parents=True, exist_ok=True)
    return bench.judged_run(keyed, judges, data=DATA8)


def study_step(args: argparse.Namespace, records: dict, families) -> None:
    """The ladders and the flattening tests of the members still to study, each landing in its record."""
    order = to_study(records, families)
    if not order:
        return
    specs = {key: ensure_folder(args, *key, records[key]) for key in order}
    run = bench_run(args, list(specs.values()))
    # --jobs K: K members side by side, each worker on its own copy of the run; a member whose command fails is
    # said, its record stays as it was, and the others go on
    work, keyed = [(key,) for key in order], argparse.Namespace(**(vars(args) | {"out": run.parent}))  # copies beside
    for done in bench.run_work(keyed, run, work, lambda on, key: study_member(args, on, key, records[key], specs[key])):
        records[(done["family"], done["seed"])] = done


def study_member(args: argparse.Namespace, run: Path, key: tuple[str, int], record: dict, spec: str) -> dict:
    """The member's ladder, then its flattening test, each written into its record as it lands (a part already
    there is not run again); the record as it now is."""
    manifest = json.loads((Path(spec) / "manifest.json").read_text())
    if record["explain"] is None:
        command = [*SETTINGS8, "--device", args.device, *bench.executor_flags(args), "--timings", "--json"]
        ladder = json.loads(interp("explain", str(run), "--judge", spec, *command))
        folder = ladder_folder(run, spec)  # where explain kept its localisation
        summary = explain_summary(ladder, manifest, key[0], folder, args.device)
        record = record | {"explain": summary | {"adapter_fingerprint": weights_fingerprint(spec)}}
        write_record(args.records, record)
    if record["flattening"] is None:
        record = record | {"flattening": flattening(args, run, spec)}
        write_record(args.records, record)
    return record


def weights_fingerprint(spec: str) -> str | None:
    """The member's adapter bytes (interp.core.adapters.adapter_fingerprint): which weights the ladder read, beside
    the identity fingerprint (a retrain elsewhere is the same member with other rounding)."""
    from interp.core.adapters import adapter_fingerprint

    return adapter_fingerprint(spec) if (Path(spec) / "adapter_model.safetensors").is_file() else None


def ladder_folder(run: Path, spec: str) -> Path | None:
    """The folder of the member's plan-8 ladder in `run` (gated, plan 8's split and controls), the newest if
    several; None when there is none."""
    found = []
    for path in run.rglob("explain.json"):
        try:
            ladder = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        settings, controls = ladder.get("settings") or {}, sorted(Path(c).name for c in ladder.get("controls") or ())
        if (
            Path(str(ladder.get("judge"))).name == Path(spec).name
            and str(settings.get("split_seed")) == SPLIT_SEED8
            and ladder.get("gap_gate", True) is not False
            and controls == sorted(CONTROLS8)
        ):
            found.append(path)
    return max(found, key=lambda p: p.stat().st_mtime).parent if found else None


def flattening(args: argparse.Namespace, run: Path, spec: str) -> dict:
    """`interp intervene` of the verdict-temperature edit on the member against the controls: its row's `causal`."""
    controls = [x for control in CONTROLS8 for x in ("--control-judge", control)]
    split = ["--selection-share", "0.4", "--split-seed", SPLIT_SEED8, "--device", args.device, "--json"]
    split += bench.executor_flags(args)
    payload = json.loads(
        interp("intervene", str(run), "--spec", str(TEMPERATURE_SPEC), "--judge", spec, *controls, *split)
    )
    (row,) = [r for r in payload["causal"] if Path(str(r["judge"])).name == Path(spec).name]
    keep = ("causal", "share_removed", "ci", "p_value", "reason", "specificity")
    return {k: row.get(k) for k in keep} | provenance(args.device)


def check_controls() -> None:
    """Every control resolves to an adapter here, before anything is trained or judged."""
    from interp.core.adapters import adapter_folder

    if missing := [c for c in CONTROLS8 if adapter_folder(c) is None]:
        raise Refused(f"controls not found: {', '.join(missing)} (plan 6's nulls must be shipped first)")


def bench_plan8(args: argparse.Namespace) -> None:
    """Plan 8's bench: every input checked, then train, study, report; each step lands in its record."""
    families = [f for f in FAMILIES8 if f in args.families.split(",")]
    records = read_records(args.records)
    check_folders(args.out, records)
    check_controls()
    if not TEMPERATURE_SPEC.is_file():
        raise Refused(f"{TEMPERATURE_SPEC}: the verdict-temperature spec is missing")
    train_step(args, records, families)
    study_step(args, records, families)
    for line in report_lines(records):
        print(line)


# ---- the report, from the records alone ------------------------------------------------------------------------------


def primary_called(family: str, explain: dict) -> bool:
    """The registered primary of a route family called causal with the planted route: `attention` with `pattern`
    (attn-trained), `atp-output` with `content` (content)."""
    method, route = {"attn-trained": ("attention", "pattern"), "content": ("atp-output", "content")}[family]
    return bench.is_called(bench.chosen(explain, method), route)


def any_route(explain: dict) -> bool:
    """Any candidate called causal with route `pattern` or `content` (wrong_route_rate)."""
    return any(bench.is_called(c, "pattern") or bench.is_called(c, "content") for c in explain["candidates"])


# figure, the families it reads, the record's part it reads, the predicate that counts a member
FIGURES8 = (
    ("route_power_pattern", ("attn-trained",), "explain", lambda f, part: primary_called(f, part)),
    ("route_power_content", ("content",), "explain", lambda f, part: primary_called(f, part)),
    ("wrong_route_rate", ELSEWHERE, "explain", lambda f, part: any_route(part)),
    ("null_fpr_ladder", ("null",), "explain", lambda f, part: bench.any_causal(part)),
    ("flattening_fpr", tuple(FAMILIES8), "flattening", lambda f, part: part.get("causal") is True),
)


def report_lines(records: dict) -> list[str]:
    """Everything the report prints: the plan, what is done, each figure `name: value [lo, hi] (k of n)` over the
    members whose check passed (with those not yet run counted), the AUROC per method, and the ladders' wall."""
    checked = {k: r for k, r in sorted(records.items()) if r["check"]["passed"]}
    excluded = sorted(f"{f}-seed{s}" for (f, s), r in records.items() if not r["check"]["passed"])
    lines = [
        f"plan: 8 (items {DATA8}, split seed {SPLIT_SEED8}, controls: the twelve nulls 0-5 and 12-17)",
        f"members_trained: {len(records)}; checked: {len(checked)}",
        f"excluded_by_check: {len(excluded)} of {len(records)} trained (not run) {excluded}",
    ]
    for family, (_, _, target, cap) in FAMILIES8.items():
        mine = [r for (f, _), r in records.items() if f == family]
        passed = sum(r["check"]["passed"] for r in mine)
        lines.append(f"family_{family}: {passed} of {target} needed passed ({len(mine)} of at most {cap} trained)")
    for name, families, part, predicate in FIGURES8:
        hits = [bool(predicate(k[0], r[part])) for k, r in checked.items() if k[0] in families and r[part]]
        not_run = [f"{k[0]}-seed{k[1]}" for k, r in checked.items() if k[0] in families and not r[part]]
        lines.append(bench.figure_line(name, hits, not_run))
    for family, methods in bench.UNITS5.items():
        for method in methods:
            group = [r for k, r in checked.items() if k[0] == family]
            values = [(r["explain"] or {}).get("auroc", {}).get(method) for r in group]
            values = [round(v, 3) for v in values if v is not None]
            if values:
                lines.append(f"auroc_{method}_{family}: {np.mean(values):.3f} ({len(values)} of {len(group)} checked)")
    walls = [((r["explain"] or {}).get("timings") or {}).get("wall_s") for r in checked.values()]
    walls = [w for w in walls if w is not None]
    if walls:
        spread = f"min {min(walls):.0f}, max {max(walls):.0f}, total {sum(walls):.0f}; {len(walls)} ladders"
        lines.append(f"ladder_wall_s: median {np.median(walls):.0f} ({spread})")
    trained = [((r["manifest"].get("timings_s") or {}).get("total_s")) for r in records.values()]
    if trained := [t for t in trained if t is not None]:
        lines.append(f"train_s: total {sum(trained):.0f} ({len(trained)} members)")
    where = sorted(
        {
            f"{(r.get('explain') or {}).get('host')} ({(r.get('explain') or {}).get('device')})"
            for r in checked.values()
            if r.get("explain")
        }
    )
    if where:
        lines.append(f"ladders_ran_on: {', '.join(where)}")
    return lines


def report8(records_folder: Path) -> None:
    for line in report_lines(read_records(records_folder)):
        print(line)
