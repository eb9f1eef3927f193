"""Bad input refused in one line before any work or write:

A. an organism config whose [heads] (or [lora]) asks for more layers or heads than the base model has;
B. INTERP_CACHE pointing at a file (or under one);
C. wrong argument types at the Python API (`Judge`, `attention_pattern`, the run functions);
D. a head localisation whose effects hold NaN (from empty answers): no ranking of NaN, no "top heads" boxed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tomli_w

import interp
from interp.errors import InterpError
from interp.organisms import train as train_module
from interp.organisms.config import OrganismConfig, load_organism_config
from interp.organisms.heads import draw_heads
from interp.organisms.pipeline import train_to_folder
from tests.organisms.test_heads_organism import train_tiny_null
from tests.organisms.test_organisms_train import TINY, tiny_authors  # noqa: F401  (fixture)

HEADS_TOML = Path(__file__).resolve().parents[1] / "experiments" / "organisms" / "smollm2-135m-selfpref-heads.toml"


def one_error_line(result, *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stderr.startswith("error: ") and result.stderr.strip().count("\n") == 0, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


# ---- A: [heads] against the model's shape --------------------------------------------------------------


def _small_heads_config(path: Path, **heads) -> Path:
    """The shipped planted-heads config with `heads` changed and its data cut to one item (quick if it ever ran)."""
    import tomllib

    data = tomllib.loads(HEADS_TOML.read_text())
    data["heads"].update(heads)
    data["data"].update(max_items=1, mtbench=False)
    path.write_text(tomli_w.dumps(data))
    return path


@pytest.mark.parametrize(
    ("heads", "needles"),
    [
        ({"n_heads": 999}, ("heads.n_heads = 999", "hold only 72 heads")),
        ({"n_heads": 73}, ("heads.n_heads = 73", "72")),  # one more than the last 8 layers hold
        ({"top_layers": 99}, ("heads.top_layers = 99", "30 decoder layers")),  # refused, not clipped to 30
        ({"top_layers": 31, "n_heads": 1}, ("heads.top_layers = 31",)),
    ],
    ids=["n_heads-999", "n_heads-73", "top_layers-99", "top_layers-31"],
)
def test_heads_beyond_the_model_is_one_line_before_anything(tmp_path, forked_cli, heads, needles):
    """Refused from the base's shape (its GGUF header), before any model is dequantised or answer generated:
    the job's own empty INTERP_CACHE stays empty (a late refusal would have filled it first)."""
    config = _small_heads_config(tmp_path / "heads.toml", **heads)
    cache = tmp_path / "cache"
    cache.mkdir()
    out = tmp_path / "out"
    result = forked_cli("organism", "train", config, "--seed", "1", "--out", out, env={"INTERP_CACHE": str(cache)})
    one_error_line(result, *needles)
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["cache", "heads.toml"]
    assert list(cache.iterdir()) == []
    family = forked_cli(
        "organism", "train", config, "--seeds", "0-2", "--out", tmp_path / "family", env={"INTERP_CACHE": str(cache)}
    )
    one_error_line(family, needles[0])
    assert not (tmp_path / "family").exists() and list(cache.iterdir()) == []


def test_shipped_heads_config_still_fits():
    from interp.organisms.config import check_config_fits, model_shape

    config = load_organism_config(HEADS_TOML)
    assert model_shape(config.base_model) == (30, 9)
    check_config_fits(config)  # 3 heads among the 8 x 9 of the top 8 layers: no error


def test_draw_heads_refuses_top_layers_beyond_the_model():
    with pytest.raises(InterpError, match="top_layers = 99.*only 30"):
        draw_heads(0, n_layers=30, n_heads=9, top_layers=99, count=3)
    assert draw_heads(0, 30, 9, 30, 3) == draw_heads(0, 30, 9, 30, 3)  # all layers is allowed


def _fail_generation(*args, **kwargs):
    raise AssertionError("answers were generated before the config was checked against the model")


@pytest.mark.parametrize(
    ("heads", "match"),
    [
        ({"n_heads": 9}, r"heads\.n_heads = 9: the last 2 layers .* hold only 8 heads"),
        ({"top_layers": 4}, r"heads\.top_layers = 4, but .* only 3"),
    ],
    ids=["n_heads", "top_layers"],
)
def test_heads_organism_checked_against_the_given_model_before_generation(
    tiny_authors,  # noqa: F811  (the fixture imported above)
    tmp_path,
    monkeypatch,
    heads,
    match,
):
    """The tiny base has 3 layers x 4 heads: the check reads the models given, not the alias's shape."""
    _, fresh = tiny_authors
    null = train_tiny_null(tmp_path, fresh)
    monkeypatch.setattr(train_module, "cached_answers", _fail_generation)
    config = OrganismConfig.model_validate(
        TINY | {"name": "tiny-heads", "heads": {"start": str(null), "n_heads": 2, "top_layers": 2} | heads}
    )
    out = tmp_path / "heads"
    with pytest.raises(InterpError, match=match):
        train_to_folder(config, out, progress=False, models=fresh())
    assert not out.exists()
    from interp.organisms.heads import train_heads_organism

    with pytest.raises(InterpError, match=match):  # in memory too (nothing written there), before any generation
        train_heads_organism(config, models=fresh(), progress=False)


def test_lora_top_layers_beyond_the_model_is_refused_not_clipped(tiny_authors, tmp_path, monkeypatch):  # noqa: F811
    _, fresh = tiny_authors
    monkeypatch.setattr(train_module, "cached_answers", _fail_generation)
    config = OrganismConfig.model_validate(TINY | {"lora": {"rank": 4, "top_layers": 5}})
    with pytest.raises(InterpError, match=r"lora\.top_layers = 5, but .* only 3"):
        train_to_folder(config, tmp_path / "out", progress=False, models=fresh())
    assert not (tmp_path / "out").exists()


# ---- B: INTERP_CACHE that cannot be the cache ----------------------------------------------------------


@pytest.fixture(scope="module")
def dbg_config(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> Path:
    """A cheap DBG config: two tiny Llamas, one item, four new tokens."""
    from transformers import LlamaForCausalLM

    from interp.config import RunConfig
    from tests.helpers.models import save_tiny, tiny_llama_config

    root = tmp_path_factory.mktemp("probe3-dbg")
    other = save_tiny(root / "other", tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=5)
    config = RunConfig(
        name="probe3",
        n=1,
        models=(str(tiny_llama_dir), str(other)),
        max_new_tokens=4,
        max_words=10,
        batch_size=2,
        n_boot=10,
        device="cpu",
    )
    path = root / "config.toml"
    path.write_text(config.to_toml())
    return path


@pytest.mark.parametrize("under", ["", "sub", "sub/deeper"], ids=["file", "file-sub", "file-sub-deeper"])
def test_interp_cache_on_a_file_is_one_line_and_no_run_folder(tmp_path, forked_cli, dbg_config, under):
    blocker = tmp_path / "cachefile"
    blocker.write_text("not a folder")
    cache = blocker / under if under else blocker
    out = tmp_path / "run"
    result = forked_cli("dbg", dbg_config, "--out", out, env={"INTERP_CACHE": str(cache)})
    one_error_line(result, "INTERP_CACHE", str(cache))
    assert not out.exists() and blocker.read_text() == "not a folder"
    demo = forked_cli("demo", "--n", "1", "--out", tmp_path / "demo", env={"INTERP_CACHE": str(cache)})
    one_error_line(demo, "INTERP_CACHE")
    assert not (tmp_path / "demo").exists()


def test_interp_cache_on_a_file_refused_by_the_python_api(tmp_path, monkeypatch, dbg_config):
    blocker = tmp_path / "cachefile"
    blocker.write_text("x")
    for cache in (blocker, blocker / "sub"):
        monkeypatch.setenv("INTERP_CACHE", str(cache))
        with pytest.raises(InterpError, match="INTERP_CACHE"):
            interp.dbg(dbg_config, tmp_path / "run", progress=False)
        assert not (tmp_path / "run").exists()


def test_check_cache_root_rule(tmp_path, monkeypatch):
    from interp.core.cache_dir import check_cache_root

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "new" / "cache"))  # creatable: fine, and not created
    assert check_cache_root() == tmp_path / "new" / "cache" and not (tmp_path / "new").exists()
    monkeypatch.setenv("INTERP_CACHE", str(tmp_path))
    assert check_cache_root() == tmp_path
    (tmp_path / "f").write_text("x")
    for bad in (tmp_path / "f", tmp_path / "f" / "a" / "b"):
        monkeypatch.setenv("INTERP_CACHE", str(bad))
        with pytest.raises(InterpError, match=f"INTERP_CACHE={bad}"):
            check_cache_root()
    monkeypatch.setenv("INTERP_CACHE", "")
    with pytest.raises(InterpError, match="INTERP_CACHE is set but empty"):
        check_cache_root()


# ---- C: wrong argument types at the Python API ---------------------------------------------------------


@pytest.fixture(scope="module")
def judge(tiny_llama_dir):
    return interp.Judge.load(str(tiny_llama_dir), device="cpu")


Q, A, B = "What is 2 + 2?", "It is 4.", "It is 5."


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda j: j(Q, None, B), "response_a must be a string, not NoneType"),
        (lambda j: j(Q, A, 3), "response_b must be a string, not int"),
        (lambda j: j(123, A, B), "query must be a string"),
        (lambda j: j(None, A, B), "query must be a string"),
        (lambda j: j([Q], [A], [None]), r"responses_b\[0\] must be a string"),
        (lambda j: j(Q, A, B, task=3), "task must be a task name"),
        (lambda j: j(Q, A, B, own=3), "own must be a string"),
        (lambda j: j.batch(Q, [A], [B]), "queries must be a list of strings"),
        (lambda j: j.batch(5, [A], [B]), "queries must be a list of strings"),
        (lambda j: j.batch([Q], A, [B]), "responses_a must be a list of strings"),
        (lambda j: j.batch([Q], [A], [b"bytes"]), r"responses_b\[0\] must be a string"),
        (lambda j: j.prompt(Q, A, None), "response_b must be a string"),
        (lambda j: j.attention_pattern(Q, A, B, layers=1.5), "layers= takes a layer number"),
        (lambda j: j.attention_pattern(Q, A, B, layers="1"), "layers= takes a layer number"),
        (lambda j: j.attention_pattern(Q, A, B, layers=True), "layers= takes a layer number"),
        (lambda j: j.attention_pattern(Q, A, B, heads=[1.5]), "heads= takes a head number .* float 1.5"),
        (lambda j: j.attention_pattern(Q, A, B, heads=[0, "1"]), "heads= takes a head number .* str '1'"),
        (lambda j: j.attention_pattern(Q, None, B), "response_a must be a string"),
        (lambda j: interp.Judge(j.backend, batch_size="8"), "batch_size must be an int"),
        (lambda j: interp.Judge.load(123), "spec .* must be a string"),
    ],
)
def test_judge_wrong_types_are_interp_errors(judge, call, match):
    with pytest.raises(InterpError, match=match):
        call(judge)


def test_attention_pattern_still_takes_ints_and_lists(judge):
    import numpy

    pattern = judge.attention_pattern(Q, A, B, layers=numpy.int64(1), heads=[0, 3])
    assert pattern.layers == (1,) and pattern.heads == (0, 3) and pattern.pattern.shape[:2] == (1, 2)
    assert judge(Q, A, B).p_a + judge(Q, A, B).p_b == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda out: interp.dbg(123, out), "config must be a RunConfig"),
        (lambda out: interp.dbg(["models"], out), "config must be a RunConfig"),
        (lambda out: interp.figure7(out, judges=3), "judges must be a list of strings or Judge objects"),
        (lambda out: interp.figure7(out, stat=3), "stat must be a string"),
        (lambda out: interp.head_map(out, 3), "judge must be the judge's name"),
        (lambda out: interp.head_map(out, "j", top_k="x"), "top_k must be an int"),
        (lambda out: interp.localize(out, "j", methods="atp"), "methods must be a list"),
        (lambda out: interp.localize(out, "j", n_items="x"), "n_items must be an int"),
        (lambda out: interp.intervene(out, top_heads="x"), "top_heads must be an int"),
        (lambda out: interp.intervene(out, all_layers="yes"), "all_layers must be True or False"),
        (lambda out: interp.intervene(out, all_layers=True, test_alpha="x"), "test_alpha must be a number"),
        (lambda out: interp.intervene(out, top_heads=3, selection_share="x"), "selection_share must be a number"),
        (lambda out: interp.intervene(out, all_layers=True, items="q1"), "items must be a list"),
        (lambda out: interp.intervene(out, all_layers=True, device=0), "device must be a string"),
        (lambda out: interp.sweep(123), "config must be a SweepConfig"),
    ],
)
def test_run_functions_wrong_types_are_interp_errors(tmp_path, call, match):
    out = tmp_path / "nowhere"
    with pytest.raises(InterpError, match=match):
        call(out)
    assert not out.exists()


def test_prompt_token_attention_wrong_types(tmp_path):
    from interp.api.token_attention import prompt_token_attention

    for layer, head, match in (
        (1.5, 0, "layer must be an int"),
        (0, "1", "head must be an int"),
        (True, 0, "layer must be an int"),
    ):
        with pytest.raises(InterpError, match=match):
            prompt_token_attention(tmp_path, "j", "item", "ab", layer, head)
    with pytest.raises(InterpError, match="judge must be a string"):
        prompt_token_attention(tmp_path, None, "item", "ab", 0, 0)


# ---- D: no ranking of NaN ------------------------------------------------------------------------------


def test_ranking_with_nan_effects_is_refused_naming_judge_and_method():
    from interp.locate.heads import _frame, check_finite_effects

    effect = np.arange(8, dtype=float).reshape(2, 4)
    assert list(_frame("atp", effect, 3, judge="j")["rank"]) == list(range(1, 9))  # finite: ranked as before
    effect[1, 2] = np.nan
    with pytest.raises(
        InterpError, match=r"judge 'tiny-judge', method 'attention': 1 of 8 heads .*NaN.*layer 1 head 2"
    ):
        _frame("attention", effect, 3, judge="tiny-judge")
    with pytest.raises(InterpError, match="method 'atp-output'"):
        check_finite_effects(np.full((2, 4), -np.inf), "j", "atp-output")
    with pytest.raises(InterpError, match="method 'mask'"):
        check_finite_effects(np.full((2, 4), np.nan), "j", "mask")


def test_localize_figures_refuse_a_table_with_nan_before_writing(tmp_path):
    from interp.report.localize import write_localize_figures

    table = pd.DataFrame(
        {
            "method": "attention",
            "layer": [0, 0, 1, 1],
            "head": [0, 1, 0, 1],
            "score": [np.nan, 0.3, 0.2, 0.1],
            "effect": [np.nan, 0.3, -0.2, 0.1],
            "rank": [1, 2, 3, 4],
            "single_judge": True,
            "n_items": 3,
        }
    )
    table.loc[0, "score"] = -np.inf  # a NaN score stood in for by -inf: still no number to draw
    with pytest.raises(InterpError, match=r"judge 'tiny-judge', method 'attention'"):
        write_localize_figures(table, tmp_path / "figures", "tiny-judge")
    assert not (tmp_path / "figures").exists()


def test_localize_run_with_nan_attention_is_refused(monkeypatch):
    """The attention method on a run whose answers were empty: per-token means of no tokens are NaN."""
    import torch

    from interp.locate import heads as localize_module

    class FakeDir:
        root = Path("/nowhere")

    class FakeRun:
        dir = FakeDir()

        class config:
            judge_specs = ["tiny-judge"]

        items = []

    monkeypatch.setattr(localize_module, "attention_judges", lambda root: ["tiny-judge"])
    monkeypatch.setattr(
        localize_module, "load_attention", lambda root, judge: type("A", (), {"item_ids": ["q1", "q2"]})()
    )
    monkeypatch.setattr(localize_module, "head_values", lambda attention, stat: torch.full((2, 4), float("nan")))
    with pytest.raises(InterpError, match=r"judge 'tiny-judge', method 'attention': 8 of 8 heads"):
        localize_module.localize_run(FakeRun(), "tiny-judge", ["attention"])
