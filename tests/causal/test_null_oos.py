"""Amendment 9's reading of new nulls (experiments/causal/null_oos_figures.py): a null whose gap gate does not pass
counts 0 under the amended rule without its ladder; one whose gate passes is pending until its ladder finished,
never guessed; the registered reading needs the ladder whatever the gate says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "experiments" / "causal" / "null_oos_figures.py"


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
