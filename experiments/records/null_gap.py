"""The gap gate of `interp explain`, from a run's clean verdicts alone (plan 3, amendments 7 and 9).

    python experiments/records/null_gap.py RUN --judge J [--selection-share 0.4] [--split-seed 0]
                                          [--control-judge C,...] [--json]

`explain` calls a candidate causal only where the judge has a gap to carry: its mean DBG on the test split is
significantly above its controls' (Crawford-Howell, alpha 0.05), before any intervention. That gate reads the
run's own judgments only, so it can be read before any candidate is tested: a judge whose gate does not pass has
no causal candidate under the amended rule, whatever its candidates' tests say. This prints the gate with the
function every causal test uses (`interp.metrics.judge_level.share_removed`, its `test_before`), on `explain`'s
test split and automatic controls (an organism: the null family of its base in the run and shipped).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from interp.causal.design import TestDesign, parse_control_judges, resolve_controls
from interp.core.models import own_model
from interp.engine.judges import baseline, judge_pool
from interp.locate.heads import run_judge
from interp.metrics.causal_test import ALPHA
from interp.metrics.judge_level import share_removed
from interp.run.store import read_run
from interp.splits import split_ids


def gap_gate(
    run_dir: str,
    judge: str,
    selection_share: float = 0.4,
    split_seed: int = 0,
    control_judges: tuple[str, ...] | None = None,
) -> dict:
    """The gate as `explain` reads it (same split, controls and function). A control outside the run is read from
    its keyed clean verdicts (judged by a causal test before; judged now if not)."""
    run = read_run(run_dir)
    judge = run_judge(run, judge)
    design = TestDesign(selection_share=selection_share, split_seed=split_seed, control_judges=control_judges)
    controls = resolve_controls(run, judge, design)
    pool = judge_pool(run)
    ids = [item.id for item in run.items]
    _, test = split_ids(ids, selection_share, split_seed, purpose="selection", what="--selection-share")
    items = [item for item in run.items if item.id in set(test)]
    own = own_model(judge)
    gold = run.gold_own(own)[[run.items.index(item) for item in items]]

    def dbg(name: str) -> np.ndarray:
        return baseline(run, name, items, own, pool, progress=False) - gold

    judge_dbg, control_dbg = dbg(judge), np.array([dbg(c) for c in controls])
    gate = share_removed(judge_dbg, judge_dbg, control_dbg, control_dbg, test_alpha=ALPHA)
    p = gate.test_before.p_value
    return {
        "judge": judge,
        "controls": controls,
        "n_test": len(items),
        "dbg_judge": float(judge_dbg.mean()),
        "dbg_controls": control_dbg.mean(axis=1).tolist(),
        "gap": gate.gap_before.to_dict(),
        "p_value": p,
        "gate_passes": p is not None and p <= ALPHA,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--judge", required=True)
    parser.add_argument("--selection-share", type=float, default=0.4)
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--control-judge", action="append", default=None, help="default: explain's automatic ones")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    controls = parse_control_judges(args.control_judge)
    out = gap_gate(args.run, args.judge, args.selection_share, args.split_seed, controls)
    if args.json:
        print(json.dumps(out, indent=1))
        return
    gap = out["gap"]
    print(f"judge: {out['judge']}")
    print(f"n_test: {out['n_test']}")
    print(f"controls: {len(out['controls'])}")
    print(f"dbg_judge: {out['dbg_judge']:.4f}")
    print(f"gap: {gap['estimate']:.4f} [{gap['low']:.4f}, {gap['high']:.4f}]")
    print(f"p_value: {out['p_value']}")
    print(f"gate_passes: {out['gate_passes']}")


if __name__ == "__main__":
    main()
