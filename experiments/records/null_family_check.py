"""A check on instructions no one here wrote: the null family tested leave-one-out must not be called
causal (at most one of its six), and a single control judge gives no self-preference verdict.

    python experiments/records/null_family_check.py [--data interp/builtin/alpacaeval_unseen_48.json]
        [--out runs/null-family-check] [--split-seed 0]

Steps, each an `interp` command (printed before it runs; every judgment is keyed, so a rerun resumes):
1. `interp dbg` with the planted organism and every shipped null organism as judges, `attention = "final"`;
2. for each null N: `interp intervene RUN --all-layers --selection-share 0.4 --split-seed S --judge N` with every
   other null as `--control-judge`;
3. one `interp intervene` with a single `--control-judge`: `causal` must be null with a reason.
Prints one figure a line (`name: value`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

AUTHORS = ["smollm2-135m-instruct", "gemma3-270m"]
PLANTED = "smollm2-135m-selfpref"
NULLS = ["smollm2-135m-judge", *(f"smollm2-135m-judge-seed{seed}" for seed in range(1, 6))]


def interp(*args: str) -> str:
    command = [sys.executable, "-m", "interp.cli", *args]
    print("$ interp " + " ".join(args), file=sys.stderr, flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{done.stderr[-2000:]}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="interp/builtin/alpacaeval_unseen_48.json")
    parser.add_argument("--out", type=Path, default=Path("runs/null-family-check"))
    parser.add_argument("--split-seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    config = args.out / "config.toml"
    judges = ", ".join(f'"{j}"' for j in [PLANTED, *NULLS])
    config.write_text(
        f'name = "null-family-check"\ndata = "{Path(args.data).resolve()}"\nn = 500\nmodels = '
        f'["{AUTHORS[0]}", "{AUTHORS[1]}"]\n'
        f'judges = [{judges}]\nmax_words = 60\nmax_new_tokens = 96\nattention = "final"\n'
    )
    run = args.out / "run"
    if not (run / "summary.json").exists():
        interp("dbg", str(config), "--out", str(run), "--json")
    verdicts = {}
    for judge in NULLS:
        controls = ",".join(n for n in NULLS if n != judge)
        payload = json.loads(
            interp(
                "intervene",
                str(run),
                "--all-layers",
                "--selection-share",
                "0.4",
                "--split-seed",
                str(args.split_seed),
                "--judge",
                judge,
                "--control-judge",
                controls,
                "--json",
            )
        )
        (row,) = [r for r in payload["causal"] if r["judge"] == judge]
        verdicts[judge] = row
        print(
            f"null_check_{judge}: causal {row['causal']}, p {row['p_value']}, within-judge change "
            f"{row['effect']['mean']:+.3f}",
            flush=True,
        )
    called = sum(bool(r["causal"]) for r in verdicts.values())
    print(f"null_check_called_causal: {called} of {len(NULLS)}")
    single = json.loads(
        interp(
            "intervene",
            str(run),
            "--all-layers",
            "--selection-share",
            "0.4",
            "--split-seed",
            str(args.split_seed),
            "--judge",
            NULLS[0],
            "--control-judge",
            NULLS[1],
            "--json",
        )
    )
    (row,) = single["causal"]
    print(f"null_check_single_control_causal: {row['causal']} ({row['reason']})")
    planted = json.loads(
        interp(
            "intervene",
            str(run),
            "--all-layers",
            "--selection-share",
            "0.4",
            "--split-seed",
            str(args.split_seed),
            "--judge",
            PLANTED,
            "--control-judge",
            ",".join(NULLS),
            "--json",
        )
    )
    (row,) = planted["causal"]
    print(
        f"null_check_planted: causal {row['causal']}, p {row['p_value']}, share of the gap removed "
        f"{row['share_removed']}"
    )


if __name__ == "__main__":
    main()
