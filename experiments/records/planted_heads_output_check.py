"""Does ablating what the planted heads *write* remove the planted organism's self-preference,
where masking where they attend did not? On instructions no one here wrote.

    python experiments/records/planted_heads_output_check.py [--data interp/builtin/alpacaeval_unseen_48.json]
        [--n N] [--out runs/planted-heads-output]

Items: the default is AlpacaEval instructions no organism trained on and no bench reads. `--data dev --n 60`
is the organisms' development set; `--data heldout` is the bench's set (plan 4): a development check must not
read it, so the script refuses it.

Steps, each an `interp` command (printed before it runs; every judgment is keyed, so a rerun resumes):
1. `interp dbg`: SmolLM2 and Gemma-3 answer, the shipped planted-heads organism judges (no attention recorded);
2. `interp intervene RUN --spec` with a head_output mean ablation at the manifest's `planted_heads` (every
   position; the means over the run's items), against the organism's null family (6 shipped null organisms);
3. the same heads' own-answer attention mask, for contrast (measured on the held-out set: about 3 % of the gap).
Prints one figure a line (`name: value`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from null_family_check import AUTHORS, interp  # the script beside this one: each step an `interp` command

ORGANISM = "smollm2-135m-selfpref-heads-seed4"


def table(heads: list[list[int]]) -> str:
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        by_layer.setdefault(layer, []).append(head)
    return "{ " + ", ".join(f"{layer} = {sorted(hs)}" for layer, hs in sorted(by_layer.items())) + " }"


def report(name: str, payload: dict) -> None:
    (row,) = [r for r in payload["causal"] if r["judge"] == ORGANISM]
    print(f"{name}_causal: {row['causal']}")
    print(f"{name}_p_value: {row['p_value']}")
    print(f"{name}_share_removed: {row['share_removed']}")
    print(f"{name}_share_removed_ci: {row['share_removed_ci']}")
    print(f"{name}_within_judge_change: {row['effect']['mean']:+.4f}")


def main() -> None:
    from interp.core.adapters import adapter_folder, read_manifest

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="interp/builtin/alpacaeval_unseen_48.json")
    parser.add_argument("--n", type=int, default=500, help="items sampled from the data (all when fewer)")
    parser.add_argument("--out", type=Path, default=Path("runs/planted-heads-output"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    planted = read_manifest(adapter_folder(ORGANISM))["planted_heads"]
    config = args.out / "config.toml"
    if args.data == "heldout":
        raise SystemExit("error: the held-out set is the bench's (plan 4); a development check reads --data dev")
    print(f"items: {args.data} (the first --n after the run's seeded draw)")
    data = Path(args.data).resolve() if Path(args.data).exists() else args.data  # a file, or a built-in set's name
    config.write_text(
        f'name = "planted-heads-output"\ndata = "{data}"\nn = {args.n}\nmodels = ["{AUTHORS[0]}", "{AUTHORS[1]}"]\n'
        f'judges = ["{ORGANISM}"]\nmax_words = 60\nmax_new_tokens = 96\nattention = "none"\n'
    )
    run = args.out / "run"
    if not (run / "summary.json").exists():
        interp("dbg", str(config), "--out", str(run), "--json")
    output_spec = args.out / "planted_heads_mean.toml"
    output_spec.write_text(
        f'site = "head_output"\nop = "mean"\nheads = {table(planted)}\npositions = "all"\nname = '
        '"planted-heads-output-mean"\n'
    )
    mask_spec = args.out / "planted_heads_mask.toml"
    mask_spec.write_text(f'target = "self"\nalpha = 0.0\nheads = {table(planted)}\nname = "planted-heads-own-mask"\n')
    print(f"planted_heads: {planted}")
    output = json.loads(interp("intervene", str(run), "--spec", str(output_spec), "--judge", ORGANISM, "--json"))
    report("head_output_mean", output)
    (result,) = [
        json.loads(p.read_text()) for p in (run / "interventions").glob("planted-heads-output-mean-*/result.json")
    ]
    mirror = result["judges"][ORGANISM]["mirror"]
    print(
        f"head_output_mean_unjustified_flipped: {mirror['unjustified_flipped']} of {mirror['unjustified']} "
        f"({mirror['unjustified_flipped_ci']})"
    )
    print(
        f"head_output_mean_legitimate_kept: {mirror['legitimate_kept']} of {mirror['legitimate']} "
        f"({mirror['legitimate_kept_ci']})"
    )
    print(f"n_test: {result['n_items']}, controls: {len(result['test']['controls'][ORGANISM])}")
    report(
        "own_answer_mask",
        json.loads(interp("intervene", str(run), "--spec", str(mask_spec), "--judge", ORGANISM, "--json")),
    )


if __name__ == "__main__":
    main()
