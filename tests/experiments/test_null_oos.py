"""Amendment 9's reading of new nulls (experiments/records/null_oos_figures.py): a null whose gap gate does not pass
counts 0 under the amended rule without its ladder; one whose gate passes is pending until its ladder finished,
never guessed; the registered reading needs the ladder, every random set included, whatever the gate says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "experiments" / "records" / "null_oos_figures.py"


LADDER = {  # plan 3's eight candidate tests of a null (--top-k 3 --mlp-k 2 --random-sets 1)
    "explain-attention-attention-top3": {"3": [1]},
    "explain-attention-atp-top3": {"3": [2]},
    "explain-head_output-atp-output-top3": {"3": [3]},
    "explain-mlp-atp-top2": None,
    "explain-direction-L1": None,
    "explain-attention-random0-3": {"2": [0]},
    "explain-head_output-random0-3": {"2": [0]},
    "explain-mlp-random0-2": None,
}


def _ladder(folder: Path, seed: int, names: list[str], p: float) -> None:
    for name in names:
        row = {"p_value": p if name == names[0] else 0.5, "share_removed": None}
        out = folder / f"run{seed}" / "interventions" / f"{name}-0123abcd"
        out.mkdir(parents=True)
        record = {"judges": {f"/x/null-seed{seed}": row}, "spec": {"heads": LADDER[name]}}
        (out / "result.json").write_text(json.dumps(record))


def _gate(folder: Path, seed: int, p: float) -> None:
    gap = {"estimate": 0.01, "low": -0.01, "high": 0.03, "level": 0.95, "n_boot": 1000}
    record = {"judge": f"/x/null-seed{seed}", "controls": ["a", "b", "c"], "gap": gap, "p_value": p}
    (folder / f"gate{seed}.json").write_text(json.dumps(record | {"gate_passes": p <= 0.05}))


def test_a_null_without_a_gap_counts_zero_and_one_with_a_gap_waits_for_its_ladder(tmp_path):
    _gate(tmp_path, 6, 0.4)
    _gate(tmp_path, 7, 0.02)
    _gate(tmp_path, 8, 0.9)
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if not line.startswith(" "))
    assert lines["route_fpr_oos_amended"] == "0.00 (0 of 2 new nulls)"
    assert lines["route_fpr_oos_registered"] == "none read"
    assert lines["gate_passes_oos"] == "1 of 3" and lines["amended_pending"] == "[7]"


def test_the_registered_reading_waits_for_every_random_set_and_holds_over_the_eight(tmp_path):
    _gate(tmp_path, 6, 0.4)
    _gate(tmp_path, 7, 0.4)
    _ladder(tmp_path, 6, list(LADDER)[:6], 0.001)  # random head-output and MLP sets not finished
    _ladder(tmp_path, 7, list(LADDER), 0.001)  # Holm over eight: 0.008, called (no gap: not under the amended rule)
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if not line.startswith(" "))
    assert lines["route_fpr_oos_registered"] == "1.00 (1 of 1 new nulls)"
    assert lines["route_fpr_oos_amended"] == "0.00 (0 of 2 new nulls)"
    assert "null seed 6: " in done.stdout and "ladder not run or unfinished" in done.stdout.split("null seed 7")[0]
