"""The unseen bar read on every unseen-style run at once: planted soft DBG minus null soft DBG, paired.

Why it exists: the issue checks the planted-minus-null soft DBG on one 16-item AlpacaEval-format file, and on
16 items one item moves it by several points. Each run folder given (`interp organism evaluate`, or any DBG run
in which both organisms judged the same answers) adds its items; this prints the figure per run and pooled,
with a paired bootstrap interval over items, and how often a 16-item file drawn from the pooled items would
reach the bar (+10 points). Prints one `name: value` per line; reads judgments only (seconds).
Usage: python experiments/organisms/unseen_gap.py RUN [RUN ...] [--null smollm2-135m-judge] [--planted
smollm2-135m-selfpref] e.g. the runs of the unseen bullet in docs/research-log.md: organisms/eval-ext/unseen48
organisms/eval-unseen-choice
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

BAR = 0.10
FILE_SIZE = 16
DRAWS = 10_000
RUN_BOOTS = 1000  # per run: `soft_dbg_gap`'s default, so the line equals `interp organism evaluate --gap-against`'s


def main() -> None:
    import numpy as np

    from interp.metrics.stats import bootstrap_ci
    from interp.organisms.evaluate import paired_verdicts

    def gap_line(name: str, diff, n_boot: int) -> str:
        lo, hi = bootstrap_ci(lambda idx: float(diff[idx].mean()), len(diff), n_boot=n_boot, seed=0)
        return f"{name}: {diff.mean():+.3f} [{lo:+.3f}, {hi:+.3f}] n {len(diff)}"

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--null", default="smollm2-135m-judge")
    parser.add_argument("--planted", default="smollm2-135m-selfpref")
    args = parser.parse_args()
    pooled = []
    for run in args.runs:
        planted, null = paired_verdicts(run, args.planted, args.null)  # read once: the run's line and the pool
        pooled.append(planted.p_own - null.p_own)
        print(gap_line(f"{run.name}_soft_dbg_gap", pooled[-1], RUN_BOOTS))
    diff = np.concatenate(pooled)
    print(gap_line("pooled_soft_dbg_gap", diff, DRAWS))
    rng = np.random.default_rng(0)
    draws = (
        [diff[rng.choice(len(diff), FILE_SIZE, replace=False)].mean() >= BAR for _ in range(DRAWS)]
        if len(diff) >= FILE_SIZE
        else []
    )
    print(
        f"file_of_{FILE_SIZE}_meets_bar_rate: {np.mean(draws):.3f}"
        if draws
        else f"file_of_{FILE_SIZE}_meets_bar_rate: n/a (fewer than {FILE_SIZE} items)"
    )


if __name__ == "__main__":
    main()
