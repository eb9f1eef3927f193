"""The run functions of the notebook API on a real (tiny-model) run: typed results, figures, no global backend."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import interp
from interp.errors import InterpError
from interp.report.figures import Figure
from tests.helpers import REPO
from tests.helpers.runs import ITEMS, small_run_config


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_llama_dir) -> tuple[Path, str]:
    """A run judged by the tiny Llama: its own answers (8 generated tokens) against imported ones."""
    folder = tmp_path_factory.mktemp("api-run")
    judge = str(tiny_llama_dir)
    config = small_run_config(folder, judge)
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
    assert scores.loc[judge, "dbg_hard"] == run.summary.judges[judge].dbg_hard
    judgments = run.judgments(judge)
    assert len(judgments) == 2 * len(ITEMS) and set(judgments["order"]) == {"ab", "ba"}
    assert run.attention(judge).mass.shape[:2] == (len(ITEMS), 2)
    assert interp.load_run(run) is run
    with pytest.raises(InterpError, match="not a finished run"):
        interp.load_run(root.parent / "nowhere")


def test_figure7_and_head_map_return_figures(tiny_run, tiny_llama):
    root, judge = tiny_run
    run = interp.load_run(root)
    for fig in (
        interp.figure7(run),
        interp.figure7(root, stat="mass", judges=[judge]),
        interp.head_map(root, judge, top_k=3),
    ):
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
    assert isinstance(result, interp.InterventionResult) and result.spec == interp.AttentionIntervention(
        target="self", alpha=0.0
    )
    assert result.n_items == len(ITEMS) and set(result.judges) == {judge}
    record = result.judges[judge]
    assert set(record.effects) == {"self", "other", "random"}
    raw = result.raw["judges"][judge]
    assert record.verdict == raw["verdict"] and record.causal == raw["causal"]
    assert record.p_value == raw["p_value"] and record.test_alpha == 0.05 and record.p_holm == raw["p_holm"]
    # one plain judge and no judge that wrote neither answer: no control, so no self-preference verdict
    assert (
        record.controls == ()
        and record.causal is None
        and record.p_value is None
        and "no control judge" in record.reason
    )
    assert (
        record.within.mean == raw["within_judge"]["effect"] and 0 < record.p_within <= 1 and record.n_test == len(ITEMS)
    )
    assert record.effects["self"].mean == raw["effects"]["self"]["mean"]
    frame = result.frame()
    assert len(frame) == 3 and (frame["ci_low"] <= frame["effect"] + 1e-12).all()
    again = interp.intervene(
        root, {"target": "self", "alpha": 0.0}, with_controls=True, device="cpu", progress=False
    )  # reuses the judgments
    assert again.judges[judge].effects == record.effects


def test_sweep_returns_a_dataframe(tiny_run):
    root, judge = tiny_run
    config = {
        "run": str(root),
        "name": "api",
        "targets": ["self", "random"],
        "alphas": [0.0, 1.0],
        "all_layers": True,
        "device": "cpu",
    }
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


# ---- nothing the caller passes is dropped; a held judge is the judge that runs ----------------------------


def test_intervene_refuses_a_mask_it_would_drop(tiny_run):
    """With top_heads or all_layers, the mask is chosen for you: a spec, spec keys or `alpha` (a mask strength,
    not the test's level) given too would be dropped, so each is one clear error, before anything is written."""
    root, judge = tiny_run
    before = sorted(p.name for p in (root / "interventions").glob("*")) if (root / "interventions").exists() else []
    with pytest.raises(InterpError, match=r"alpha=0.01 is a spec's mask strength.*test_alpha"):
        interp.intervene(root, top_heads=8, selection_share=0.4, alpha=0.01, device="cpu", progress=False)
    with pytest.raises(InterpError, match=r"all_layers=True chooses the mask itself, so a spec would be dropped"):
        interp.intervene(root, spec={"target": "self", "alpha": 0.0}, all_layers=True, device="cpu", progress=False)
    with pytest.raises(InterpError, match=r"top_heads=2 chooses the mask itself, so spec key 'layers'"):
        interp.intervene(root, top_heads=2, selection_share=0.5, layers=[0], device="cpu", progress=False)
    with pytest.raises(InterpError, match=r"unknown keyword 'level'"):
        interp.intervene(root, target="self", alpha=0.0, level=0.01, device="cpu", progress=False)
    with pytest.raises(InterpError, match="exactly one"):
        interp.intervene(root, device="cpu", progress=False)
    with pytest.raises(InterpError, match="--specificity none: a causal verdict needs the specificity check"):
        interp.intervene(root, all_layers=True, specificity="none", device="cpu", progress=False)
    after = sorted(p.name for p in (root / "interventions").glob("*")) if (root / "interventions").exists() else []
    assert after == before


def test_intervene_tests_at_the_level_it_is_given(tiny_run):
    """`test_alpha` is the level, `alpha` the spec's mask strength: both reach the result, under their own names."""
    root, judge = tiny_run
    result = interp.intervene(root, target="self", alpha=0.25, test_alpha=0.01, device="cpu", progress=False)
    record = result.judges[judge]
    assert result.spec.alpha == 0.25 and result.raw["spec"]["alpha"] == 0.25
    assert (
        record.test_alpha == 0.01
        and result.raw["judges"][judge]["test_alpha"] == 0.01
        and "alpha" not in result.raw["judges"][judge]
    )
    assert result.raw["design"]["test_alpha"] == 0.01
    assert record.p_holm == record.p_value  # one judge: nothing to adjust, both shown (None: no controls)
    assert record.causal is None and record.reason


def test_a_held_judge_runs_dbg_and_intervene_loaded_once(tmp_path, tiny_llama_dir, monkeypatch):
    """A `Judge.wrap` judge is used as it is by interp.dbg and interp.intervene, never loaded
    again by name (the loader counts its calls); its control may be given the same way."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import interp.core.models as models

    hf_model = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_llama_dir)
    judge = interp.Judge.wrap(hf_model, tokenizer, name="held-llama")
    loads: list = []
    real = models.load_model
    monkeypatch.setattr(models, "load_model", lambda *a, **k: loads.append(a[0] if a else k) or real(*a, **k))
    (tmp_path / "items.jsonl").write_text(
        "".join(json.dumps({"id": i, "task": "helpfulness", "query": q, "reference": r}) + "\n" for i, q, r, _ in ITEMS)
    )
    (tmp_path / "other.jsonl").write_text("".join(json.dumps({"item_id": i, "text": b}) + "\n" for i, _, _, b in ITEMS))
    config = dict(
        n=len(ITEMS),
        data=str(tmp_path / "items.jsonl"),
        models=[judge, "writer-y"],
        judges=[judge],
        n_boot=20,
        device="cpu",
        max_new_tokens=4,
        imports={"writer-y": str(tmp_path / "other.jsonl")},
    )
    run = interp.dbg(config, tmp_path / "run", progress=False)
    assert run.judges == ["held-llama"] and run.models == ("held-llama", "writer-y")
    result = interp.intervene(run, target="self", alpha=0.0, judges=[judge], device="cpu", progress=False)
    assert set(result.judges) == {"held-llama"} and result.judges["held-llama"].n_test == len(ITEMS)
    assert loads == []  # the held model answered, judged and was re-judged: no load by name
    with pytest.raises(InterpError, match="is the judge under test"):
        interp.intervene(run, all_layers=True, judges=[judge], control_judge=judge, device="cpu", progress=False)
    assert loads == []


def test_a_held_judge_runs_a_sweep_loaded_once(tiny_run, tiny_llama_dir, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import interp.core.models as models

    root, judge_path = tiny_run
    judge = interp.Judge.wrap(
        AutoModelForCausalLM.from_pretrained(tiny_llama_dir), AutoTokenizer.from_pretrained(tiny_llama_dir)
    )
    loads: list = []
    monkeypatch.setattr(models, "load_model", lambda *a, **k: loads.append(a) or pytest.fail("loaded by name"))
    config = {
        "run": interp.load_run(root),
        "name": "held",
        "judges": [judge],
        "targets": ["self"],
        "alphas": [0.5],
        "all_layers": True,
        "device": "cpu",
    }
    table = interp.sweep(config, progress=False)
    assert set(table["judge"]) == {judge_path} and len(table) == 1 and loads == []


def test_a_from_nnsight_judge_is_tested_as_it_is(tiny_run, tiny_llama_dir, monkeypatch):
    """A judge made with Judge.from_nnsight is the judge the causal test runs: its model makes the passes, and
    nothing is loaded by name."""
    from nnsight import LanguageModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import interp.core.models as models

    root, judge_path = tiny_run
    hf_model = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    judge = interp.Judge.from_nnsight(LanguageModel(hf_model, tokenizer=AutoTokenizer.from_pretrained(tiny_llama_dir)))
    passes = []
    hf_model.model.register_forward_hook(lambda *_: passes.append(1))
    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("loaded by name"))
    held = interp.intervene(
        root, target="self", alpha=0.625, judges=[judge], device="cpu", progress=False
    )  # a new key: judged now
    assert set(held.judges) == {judge_path} and held.judges[judge_path].n_test == len(ITEMS) and passes
