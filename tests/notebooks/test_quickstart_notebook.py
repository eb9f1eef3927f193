"""The quickstart notebook does its five tasks top to bottom on the packaged models (in CI too)."""

from __future__ import annotations

import pytest

from tests.helpers import REPO


@pytest.mark.slow
def test_quickstart_notebook_runs(tmp_path, monkeypatch):
    import nbclient
    import nbformat
    import pandas as pd

    notebook = nbformat.read(REPO / "notebooks" / "quickstart.ipynb", as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), (
        "commit the notebook with outputs cleared"
    )
    monkeypatch.setenv("INTERP_QUICKSTART_DIR", str(tmp_path))
    client = nbclient.NotebookClient(
        notebook, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(REPO / "notebooks")}}
    )
    client.execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # Figure 7 and the head map, shown as returned (no show() helper, no pyplot)
    text = "".join(o.get("text", "") for o in outputs)
    assert "span attention: (30, 9, 2) = [layer, head, span]" in text  # SmolLM2-135M: 30 layers x 9 heads
    assert "self@alpha=0: P(own)" in text
    (results,) = (tmp_path / "run" / "sweeps").glob("quickstart-*/results.csv")
    table = pd.read_csv(results)
    assert (
        len(table) == 2 * 2
        and set(table["target"]) == {"self", "random"}
        and set(table["judge"]) == {"smollm2-135m-judge"}
    )
