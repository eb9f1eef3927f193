"""`route_fpr` out of sample (plan 3, amendment 9): the new null seeds' gap gates, and their ladders where run.

    python experiments/records/null_oos_figures.py runs/null-oos

The folder holds, per new null seed S, `gateS.json` (`null_gap.py --json` on `runS`, the null's own copy of the
bench's run) and whatever of `interp explain`'s tests on `runS` have finished (`runS/interventions/*/result.json`).
- amended reading (amendment 7): a null counts when a candidate is causal after Holm *and* the gate passes. A null
  whose gate does not pass counts 0 without its ladder; one whose gate passes counts only once its ladder finished
  (else it is pending, and named).
- registered reading: any candidate causal after Holm; only over nulls whose eight candidate tests finished.
Prints one `name: value` a line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mechanism_figures import candidates, finished  # a record beside this one (the script's folder is on the path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder of the new nulls' runs and gates")
    args = parser.parse_args()
    gates = {
        int(p.stem[len("gate") :]): json.loads(p.read_text())
        for p in args.out.glob("gate*.json")
        if p.stem[len("gate") :].isdigit()
    }
    tests = finished(args.out)
    amended, registered, pending = {}, {}, []
    for seed, gate in sorted(gates.items()):
        rows = tests.get(gate["judge"], {})
        read = {rule: candidates(rows, rule) if rows else None for rule in ("registered", "amended")}
        if read["registered"] is not None:
            registered[seed] = any(c["causal"] for c in read["registered"])
        if not gate["gate_passes"]:
            amended[seed] = False
        elif read["amended"] is not None:
            amended[seed] = any(c["causal"] for c in read["amended"])
        else:
            pending.append(seed)
        gap = gate["gap"]
        print(
            f"  null seed {seed}: gap {100 * gap['estimate']:+.1f} points [{100 * gap['low']:+.1f}, "
            f"{100 * gap['high']:+.1f}] over {len(gate['controls'])} controls, gate p {gate['p_value']:.3g} -> "
            f"{'passes' if gate['gate_passes'] else 'does not pass'}; ladder "
            f"{'finished' if read['registered'] is not None else 'not run or unfinished'}"
        )
    for name, called in (("amended", amended), ("registered", registered)):
        hits = sum(called.values())
        value = f"{hits / len(called):.2f} ({hits} of {len(called)} new nulls)" if called else "none read"
        print(f"route_fpr_oos_{name}: {value}")
    print(f"gate_passes_oos: {sum(g['gate_passes'] for g in gates.values())} of {len(gates)}")
    print(f"amended_pending: {pending}")


if __name__ == "__main__":
    main()
