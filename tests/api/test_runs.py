"""The run functions of the notebook API on a real (tiny-model) run: typed results, figures, no global backend."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from interp.errors import InterpError
from interp.report.figures import Figure

import interp
from tests.helpers import REPO

ITEMS = [  # id, query, reference, the other writer's answer
    ("capital", "What is the capital of France?", "The capital of France is Paris.", "I think it is Lyon."),
    ("boil", "At what temperature does water boil?", "Water boils at 100 degrees Celsius.", "About 90 degrees."),
    ("legs", "How many legs does a spider have?", "A spider has eight legs.", "A spider has six legs."),
    ("sky", "Why is the sky blue?", "Air scatters blue light more than red.", "Because the sea is blue."),
]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_llama_dir) -> tuple[Path, str]:
    """A run judged by the tiny Llama: its own answers (8 generated tokens) against imported ones."""
    folder = tmp_path_factory.mktemp("api-run")
    judge = str(tiny_llama_dir)
    (folder / "items.jsonl").write_text("".join(json.dumps({"id": i, "task": "helpfulness", "query": q, "reference": r}) + "\n" for i, q, r, _ in ITEMS))
    (folder / "other.jsonl").write_text("".join(json.dumps({"item_id": i, "text": b}) + "\n" for i, _, _, b in ITEMS))
    config = dict(  # keys of a run TOML
        n=len(ITEMS), data=str(folder / "items.jsonl"), models=(judge, "writer-y"), judges=[judge], n_boot=50, device="cpu",
        max_new_tokens=8, imports={"writer-y": str(folder / "other.jsonl")},
    )  # fmt: skip
    run = interp.dbg(config, folder / "run", progress=False)
    assert isinstance(run, interp.RunResult) and run.path == folder / "run"
    return run.path, judge


def test_load_run_is_typed(tiny_run):
    root, judge = tiny_run
    run = interp.load_run(root)
    assert isinstance(run, interp.RunResult) and run.path == root and run.judges == [judge]
    assert run.models == (judge, "writer-y") and len(run.run.items) == len(ITEMS)
    scores = run.scores()
    assert list(scores.index) == [judge] and scores.loc[judge, "own_model"] == judge
    assert scores.loc[judge, "dbg_hard"] == run.summary["judges"][judge]["dbg_hard"]
    judgments = run.judgments(judge)
    assert len(judgments) == 2 * len(ITEMS) and set(judgments["order"]) == {"ab", "ba"}
    assert run.attention(judge).mass.shape[:2] == (len(ITEMS), 2)
    assert interp.load_run(run) is run
    with pytest.raises(InterpError, match="not a finished run"):
        interp.load_run(root.parent / "nowhere")


def test_figure7_and_head_map_return_figures(tiny_run, tiny_llama):
    root, judge = tiny_run
    run = interp.load_run(root)
    for fig in (interp.figure7(run), interp.figure7(root, stat="mass", judges=[judge]), interp.head_map(root, judge, top_k=3)):
        assert isinstance(fig, Figure)
        png = fig._repr_png_()  # what a notebook shows
        assert png.startswith(b"\x89PNG")
    loaded = interp.Judge.wrap(tiny_llama)  # named by its folder's name; the run's judge is the folder's path
    heads = interp.head_map(run, loaded, top_k=3)
    assert any("own" in ax.get_title() for ax in heads.axes)
    with pytest.raises(InterpError):
        interp.head_map(root, "not-a-judge")


def test_importing_the_api_switches_no_matplotlib_backend():
    code = (
        "import matplotlib; before = matplotlib.rcParams._get_backend_or_none(); "
        "import interp; interp.figure7; import interp.report.attention; "
        "assert matplotlib.rcParams._get_backend_or_none() == before, matplotlib.rcParams._get_backend_or_none(); "
        "import sys; assert 'matplotlib.pyplot' not in sys.modules"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


def test_intervene_returns_a_typed_result(tiny_run):
    root, judge = tiny_run
    result = interp.intervene(root, target="self", alpha=0.0, with_controls=True, device="cpu", progress=False)
    assert isinstance(result, interp.InterventionResult) and result.spec == interp.AttentionIntervention(target="self", alpha=0.0)
    assert result.n_items == len(ITEMS) and set(result.judges) == {judge}
    record = result.judges[judge]
    assert set(record.effects) == {"self", "other", "random"}
    raw = result.raw["judges"][judge]
    assert record.verdict == raw["verdict"] and record.causal == raw["causal"]
    assert record.p_value == raw["p_value"] and record.alpha == 0.05 and record.causal == (record.p_value <= 0.05)
    assert record.control_judge is None and record.n_test == len(ITEMS)  # one plain judge: a test within the judge
    assert record.effects["self"].mean == raw["effects"]["self"]["mean"]
    frame = result.frame()
    assert len(frame) == 3 and (frame["ci_low"] <= frame["effect"] + 1e-12).all()
    again = interp.intervene(root, {"target": "self", "alpha": 0.0}, with_controls=True, device="cpu", progress=False)  # reuses the judgments
    assert again.judges[judge].effects == record.effects


def test_sweep_returns_a_dataframe(tiny_run):
    root, judge = tiny_run
    config = {"run": str(root), "name": "api", "targets": ["self", "random"], "alphas": [0.0, 1.0], "all_layers": True, "device": "cpu"}
    table = interp.sweep(config, progress=False)
    assert isinstance(table, pd.DataFrame) and len(table) == 4 and set(table["judge"]) == {judge}
    assert Path(table.attrs["path"]).is_file()
    assert {"target", "alpha", "effect", "effect_lo", "effect_hi", "dbg_hard"} <= set(table.columns)
    unchanged = table[table["alpha"] == 1.0]
    assert (unchanged["effect"].abs() < 1e-6).all()  # alpha = 1 changes nothing
    from interp.metrics.causal_test import holm

    assert (unchanged["p_value"] == 1.0).all()  # no change at all: no evidence
    assert list(table["p_holm"]) == pytest.approx(holm(list(table["p_value"])))  # the points are one family
    with pytest.raises(InterpError, match="targetz"):
        interp.sweep({"run": str(root), "targetz": ["self"]})
