"""The ablation-sweep notebook runs top to bottom on a small real run (in CI too)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_ablation_sweep_notebook_runs_a_small_sweep(real_run, monkeypatch):
    import nbclient
    import nbformat
    import pandas as pd

    path = REPO / "notebooks" / "ablation_sweep.ipynb"
    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), (
        "commit the notebook with outputs cleared"
    )
    monkeypatch.setenv("INTERP_RUN_DIR", str(real_run.root))
    monkeypatch.setenv("INTERP_SWEEP_SMALL", "1")
    client = nbclient.NotebookClient(
        notebook, kernel_name="python3", timeout=900, resources={"metadata": {"path": str(REPO / "notebooks")}}
    )
    client.execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    (results_csv,) = (real_run.root / "sweeps").glob(
        "notebook_small-*/results.csv"
    )  # the folder name carries the sweep's key
    results = pd.read_csv(results_csv)
    # all + 1 band + top-2 + one random 2-head set, each x 2 targets x 1 alpha (the small sweep: 16 variants took 34 s)
    assert len(results) == (1 + 1 + 1 + 1) * 2 * 1
    assert set(results["family"]) == {"all", "band", "top_k", "random_k"}
    assert (results["effect_lo"] <= results["effect"] + 1e-12).all() and (
        results["effect"] <= results["effect_hi"] + 1e-12
    ).all()
    assert any("image/png" in o.get("data", {}) for o in outputs)  # effect_vs_k / effect_vs_alpha plots shown
