"""A check on one attention-routed organism: is its self-preference its heads' attention to its own answer?

    python experiments/records/attention_route_check.py ORGANISM_FOLDER [--n 60] [--out runs/attention-route] \
        [--explain]

On the organisms' development set (`data = "dev"`, 180 items: nothing trains on it and no bench reads it; the
held-out set is the bench's alone, so a development check never sees a bench item), each step an `interp`
command (printed before it runs; every judgment is keyed, so a rerun resumes):
1. `interp dbg`: SmolLM2 and Gemma-3 answer, the organism judges with span attention (`attention = "final"`);
2. `interp intervene --spec`: the own answer masked at the manifest's `planted_heads`, against the organism's null
   family (the six shipped nulls), on the test split (selection share 0.4, split seed 0);
3. the same mask at a random head set of the same size (seeded), the control that should remove nothing;
4. with `--explain`: `interp explain` (top 3 heads, 2 MLP layers, one random set of each), the whole ladder.
Prints one figure a line (`name: value`).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from null_family_check import AUTHORS, interp  # the script beside this one: each step an `interp` command

from interp.hooks.spec import AttentionIntervention, pairs_table

SPLIT = ["--selection-share", "0.4", "--split-seed", "0"]


def masked(run: Path, organism: str, heads, name: str, out: Path) -> dict:
    spec = out / f"{name}.toml"
    spec.write_text(AttentionIntervention(target="self", alpha=0.0, heads=pairs_table(heads), name=name).to_toml())
    payload = json.loads(interp("intervene", str(run), "--spec", str(spec), "--judge", organism, *SPLIT, "--json"))
    (row,) = [r for r in payload["causal"] if r["judge"] == organism]
    for key in ("causal", "p_value", "share_removed", "share_removed_ci"):
        print(f"{name}_{key}: {row[key]}")
    return row


def main() -> None:
    from interp.core.adapters import read_manifest

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("organism", type=Path)
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--out", type=Path, default=Path("runs/attention-route"))
    parser.add_argument("--explain", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    organism = str(args.organism.resolve())
    manifest = read_manifest(args.organism)
    planted = manifest["planted_heads"]
    print("items: dev split (interp/builtin/dev.jsonl), the first --n after the run's seeded draw")
    print(f"planted_heads: {planted}")
    print(f"planted_route: {manifest.get('planted_route')}")
    print(f"training_seconds: {manifest['timings_s']['total_s']:.0f}")
    config = args.out / "config.toml"
    config.write_text(
        f'name = "attention-route"\ndata = "dev"\nn = {args.n}\nmodels = ["{AUTHORS[0]}", "{AUTHORS[1]}"]\n'
        f'judges = ["{organism}"]\nmax_words = 60\nmax_new_tokens = 96\nattention = "final"\n'
    )
    run = args.out / "run"
    if not (run / "summary.json").exists():
        interp("dbg", str(config), "--out", str(run), "--json")
    masked(run, organism, planted, "true_heads_mask", args.out)
    rng = random.Random(f"{organism}|random-heads")
    pool = [(layer, head) for layer in range(30) for head in range(9) if [layer, head] not in planted]
    masked(run, organism, sorted(rng.sample(pool, len(planted))), "random_heads_mask", args.out)
    if args.explain:
        result = json.loads(
            interp("explain", str(run), "--judge", organism, "--top-k", "3", "--mlp-k", "2", *SPLIT, "--json")
        )
        for c in result["candidates"]:
            where = c["heads"] or c["layers"]
            print(
                f"explain_{c['site']}_{c['selected_by']}: share {c['share_removed']} {c['ci']}, causal "
                f"{c['causal']}, p_holm {c['p_holm']}, route {c['route']}, at {where}"
            )
        print(f"explain_answer: {result['answer']}")


if __name__ == "__main__":
    main()
