"""The figures of bench_mechanism (plan 3) from whatever tests of a bench folder have finished, runs cut short too.

    python experiments/records/mechanism_figures.py runs/mechanism-gpu

`bench_mechanism.py` prints its figures only once every member's `explain` has returned. A bench cut at a time
limit (a GPU lease) leaves every finished causal test keyed in `RUN/interventions/*/result.json` (and in
`RUN.jobK/` with `--jobs`); this reads them and prints the same `name: value` lines, each member's candidates
rebuilt from its finished candidate tests (Holm over the member's candidates, as `explain` does), with what is
missing named rather than guessed:
- a member whose candidate tests are not all finished counts in no figure (listed in `members_incomplete`);
- a head set whose route parts (total, pattern, content) are not all finished has route `pending`, and a figure
  that needs it says how many members it waits for.
Two readings of "causal" are made: `registered` (plan 3 as registered: Holm p at most 0.05) and `amended` (plan 3
amendment 7, which the figures use: and only when the judge has a significant gap to carry, the candidate has a
share). Both are printed for `route_fpr`; there is no option to choose one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the bench is a script of experiments/, not a package
from bench_mechanism import auroc  # noqa: E402  the bench's AUROC of the planted heads

from interp.metrics.causal_test import holm
from interp.studies.routes import PartShare, route_verdict

METHODS = {"attention": "attention", "atp": "attention", "atp-output": "head_output"}
KINDS = {
    "attention-attention": "attention",
    "attention-atp": "atp",
    "head_output-atp-output": "atp-output",
    "mlp-atp": "atp-mlp",
}


def family(judge: str) -> str:
    name = Path(judge).name
    return "attn" if name.startswith("attn-") else "heads" if name.startswith("heads-") else "null"


def finished(root: Path) -> dict[str, dict[str, dict]]:
    """judge -> intervention name (without its key) -> that judge's row of result.json, over RUN and RUN.jobK."""
    out: dict[str, dict[str, dict]] = {}
    for path in sorted(root.glob("run*/interventions/*/result.json")):
        data = json.loads(path.read_text())
        name = path.parent.name.rsplit("-", 1)[0]
        for judge, row in data["judges"].items():
            out.setdefault(judge, {})[name] = row | {"spec": data["spec"]}
    return out


def share(row: dict) -> float | None:
    value = row.get("share_removed")
    return value["estimate"] if isinstance(value, dict) else value


def heads_of(spec: dict) -> list[list[int]]:
    return sorted([int(layer), int(h)] for layer, hs in (spec.get("heads") or {}).items() for h in hs)


def label(heads: list[list[int]]) -> str:
    by: dict[int, list[int]] = {}
    for layer, head in heads:
        by.setdefault(layer, []).append(head)
    return "-".join(f"L{layer}H{'.'.join(str(h) for h in sorted(hs))}" for layer, hs in sorted(by.items()))


def route(tests: dict[str, dict], heads: list[list[int]]) -> str:
    parts = {}
    for part in ("total", "pattern", "content"):
        row = tests.get(f"route-{part}-{label(heads)}-other")
        if row is None:
            return "pending"
        s = row.get("share_removed")
        parts[part] = PartShare(
            part, share(row), (s["low"], s["high"]) if isinstance(s, dict) else None, row["p_value"], row["causal"]
        )
    return route_verdict(parts)[0]


def candidates(tests: dict[str, dict], rule: str) -> list[dict] | None:
    rows = {k: v for k, v in tests.items() if k.startswith("explain-")}
    found = []
    for name, row in rows.items():
        kind = name[len("explain-") :].rsplit("-top", 1)[0]
        by = "random" if "-random" in name else "direction" if kind.startswith("direction") else KINDS[kind]
        site = name.split("-")[1].replace("mlp", "mlp_output").replace("direction", "residual")
        found.append(
            dict(name=name, site=site, selected_by=by, heads=heads_of(row["spec"]), share=share(row), p=row["p_value"])
        )
    chosen = [c for c in found if c["selected_by"] != "random"]
    randoms = {c["site"] for c in found if c["selected_by"] == "random"}
    if len(chosen) < len(KINDS) + 1 or not {c["site"] for c in chosen if c["site"] != "residual"} <= randoms:
        return None  # a candidate test still missing (a chosen one, + direction; or a site's random set): no reading
    # plan 3's reading: Holm over every candidate with a test (random sets included), as explain did then; these
    # records carry no share interval, so plan 3's two readings are made here
    tested = [c for c in found if c["p"] is not None]
    adjusted = dict(zip((id(c) for c in tested), holm([c["p"] for c in tested]), strict=True))
    for c in found:  # amended (amendment 7): Holm and a share; registered: Holm alone
        c["p_holm"] = adjusted.get(id(c))
        holm_passes = None if c["p_holm"] is None else c["p_holm"] <= 0.05
        c["causal"] = None if rule == "amended" and c["share"] is None else holm_passes
    for c in found:
        c["route"] = route(tests, c["heads"]) if c["heads"] and c["selected_by"] != "random" else None
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="a bench_mechanism --out folder")
    args = parser.parse_args()
    tests = finished(args.out)
    manifests = {
        str(p.parent.resolve()): json.loads(p.read_text()) for p in (args.out / "organisms").glob("*/manifest.json")
    }
    judges = sorted(tests)
    read = {rule: {j: candidates(tests[j], rule) for j in judges} for rule in ("registered", "amended")}
    print(f"members_incomplete: {[Path(j).name for j in judges if read['amended'][j] is None]}")
    for fam, site, want in (("attn", "attention", "pattern"), ("heads", "head_output", None)):
        members = [j for j in judges if family(j) == fam and read["amended"][j] is not None]
        hits, pending, shares, causal = [], 0, [], 0
        for j in members:
            rows = [c for c in read["amended"][j] if c["site"] == site and c["selected_by"] != "random"]
            best = max(rows, key=lambda c: -np.inf if c["share"] is None else c["share"])
            shares.append(round(best["share"], 2) if best["share"] is not None else None)
            causal += bool(best["causal"])
            print(
                f"  {Path(j).name}: best {site} {label(best['heads'])}, share {shares[-1]}, causal {best['causal']}, ",
                end="",
            )
            print(f"route {best['route']}")
            if best["route"] == "pending":
                pending += 1
                continue
            hits.append(bool(best["causal"]) and (best["route"] == want if want else best["route"] != "pattern"))
        name = "route_power_attention" if fam == "attn" else "route_power_output"
        value = f"{np.mean(hits):.2f} ({sum(hits)} of {len(hits)})" if hits else "none read"
        print(f"{name}: {value}; route pending for {pending} of {len(members)} members")
        print(f"best_{site}_candidate_share_{fam}: {shares}")
        print(f"best_{site}_candidate_causal_{fam}: {causal} (of {len(members)} members)")
    for fam in ("attn", "heads"):
        for j in [j for j in judges if family(j) == fam and read["amended"][j] is not None]:
            truth = manifests.get(j, {}).get("planted_heads")
            if not truth:
                continue
            atp = next(c for c in read["amended"][j] if c["name"].startswith("explain-attention-atp-top"))
            if sorted(map(list, truth)) == atp["heads"] and fam == "attn":
                print(
                    f"  true heads of {Path(j).name} = its atp candidate: the own answer masked there removes "
                    f"{atp['share']:.2f}"
                )
    nulls = [j for j in judges if family(j) == "null"]
    for rule in ("registered", "amended"):
        done = [j for j in nulls if read[rule][j] is not None]
        called = [any(c["causal"] for c in read[rule][j]) for j in done]
        print(f"route_fpr_{rule}: {np.mean(called):.2f} ({sum(called)} of {len(done)} nulls)" if done else "")
    for fam in ("attn", "heads"):
        for method in METHODS:
            values = []
            for j in [j for j in judges if family(j) == fam]:
                truth = {tuple(h) for h in manifests.get(j, {}).get("planted_heads", [])}
                csvs = [p for p in args.out.glob("run*/explain/*/localisation.csv") if Path(j).name in p.parent.name]
                if not truth or not csvs:
                    continue
                frame = pd.read_csv(csvs[0])
                rows = frame[frame["method"] == method]
                if rows.empty:  # this method did not localise for the member (explain -m): no AUROC to read
                    continue
                scores = {(int(r.layer), int(r.head)): float(r.score) for r in rows.itertuples()}
                values.append(auroc(scores, truth))
            if values:
                print(f"auroc_{method}_{fam}: {np.mean(values):.3f} (per seed: {[round(v, 3) for v in values]})")


if __name__ == "__main__":
    main()
