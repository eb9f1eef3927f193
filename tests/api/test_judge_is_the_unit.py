"""The Judge a user holds is the unit every study runs (issue 82 item 1, issue 77 item 11): a `Judge`'s open
`hooks` and `applying` blocks run in every judgment `interp.intervene` and `interp.sweep` make with it, its
baseline included, and enter every key, so a hooked study never reuses the plain one's judgments."""

from __future__ import annotations

import math

import pytest
import torch

import interp
from interp.errors import InterpError
from tests.helpers.runs import small_run_config

LAYER, HEAD, COEFFICIENT = 1, 2, 6.0


@pytest.fixture(scope="module")
def notebook(tmp_path_factory, tiny_llama_dir):
    """A notebook's state: a tiny random Llama run, and a Judge wrapping the model the user holds."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = tmp_path_factory.mktemp("unit-run")
    run = interp.dbg(small_run_config(folder, str(tiny_llama_dir)), folder / "run", progress=False)
    hf_model = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    judge = interp.Judge.wrap(hf_model, AutoTokenizer.from_pretrained(tiny_llama_dir))
    return run, judge


def _direction(judge) -> list[float]:
    width = judge.model.hf_model.config.head_dim
    return [1.0 / math.sqrt(width)] * width


def _add_to_head(direction):
    """The user's hook: a constant added to one head's output (hook_z: [batch, pos, head, d_head])."""
    unit = torch.tensor(direction, dtype=torch.float64)

    def add(z):
        z = z.clone()
        z[:, :, HEAD] = (z[:, :, HEAD].double() + COEFFICIENT * unit).to(z.dtype)
        return z

    return add


def _blocks(judge):
    """The three ways a notebook holds the judge: plain, under the user's hook, under the same edit as a spec."""
    direction = _direction(judge)
    point = f"blocks.{LAYER}.attn.hook_z"
    spec = dict(
        site="head_output", op="add", layers=[LAYER], heads=[HEAD], direction=direction, coefficient=COEFFICIENT
    )
    return {
        "plain": lambda: _nothing(),
        "hooked": lambda: judge.hooks({point: _add_to_head(direction)}, key="add-head"),
        "spec": lambda: judge.applying(**spec),
    }


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *_):
        return False


def _numbers(result, name):
    """P(own) before, DBG (soft) before, and each variant's mean effect."""
    record = result.raw["judges"][name]
    effects = [record["effects"][k]["mean"] for k in sorted(record["effects"])]
    return [record["before"]["mean_p_own"], record["before"]["dbg_soft"], *effects]


def test_a_hooked_judge_is_what_intervene_and_sweep_run(notebook):
    run, judge = notebook
    name = run.judges[0]
    intervened, swept = {}, {}
    for way, block in _blocks(judge).items():
        with block():
            intervened[way] = interp.intervene(
                run, target="self", alpha=0.0, judges=[judge], device="cpu", progress=False
            )
            config = {"run": run, "name": "unit", "judges": [judge], "targets": ["self"], "alphas": [0.25, 0.0]}
            swept[way] = interp.sweep(config | {"all_layers": True, "device": "cpu"}, progress=False)
    hooked, spec, plain = (_numbers(intervened[w], name) for w in ("hooked", "spec", "plain"))
    assert hooked == pytest.approx(spec, abs=1e-6)
    assert hooked[0] != pytest.approx(plain[0], abs=1e-4) and hooked[2] != pytest.approx(plain[2], abs=1e-4)
    columns = ["effect", "dbg_soft", "mean_p_own"]
    assert swept["hooked"][columns].to_numpy() == pytest.approx(swept["spec"][columns].to_numpy(), abs=1e-6)
    assert not swept["hooked"]["mean_p_own"].to_numpy() == pytest.approx(swept["plain"]["mean_p_own"].to_numpy())
    # three keys, three folders: nothing judged under one block is reused under another
    keys = {way: tuple(table["key"]) for way, table in swept.items()}
    assert len({*keys.values()}) == 3 and len({table.attrs["path"] for table in swept.values()}) == 3
    assert len({r.raw["variant_keys"][name]["self"] for r in intervened.values()}) == 3


def test_a_keyed_hook_resumes_and_an_unkeyed_one_is_never_reused(notebook):
    run, judge = notebook
    name = run.judges[0]
    point, add = f"blocks.{LAYER}.attn.hook_z", _add_to_head(_direction(judge))
    keys = []
    for key in ("same", "same", None, None):
        with judge.hooks({point: add}, key=key):
            result = interp.intervene(run, target="self", alpha=0.0, judges=[judge], device="cpu", progress=False)
        keys.append(result.raw["variant_keys"][name]["self"])
    assert keys[0] == keys[1] and len(set(keys)) == 3


def test_a_control_judge_inside_a_hooks_block_runs_the_hooks(notebook, tiny_gemma3_dir):
    """77 item 11: a control Judge under its own hooks block is judged under them (it matched the plain result)."""
    run, judge = notebook
    name = run.judges[0]
    from transformers import AutoModelForCausalLM, AutoTokenizer

    hf_model = AutoModelForCausalLM.from_pretrained(tiny_gemma3_dir)
    control = interp.Judge.wrap(hf_model, AutoTokenizer.from_pretrained(tiny_gemma3_dir), name="control-gemma")
    zero = {"blocks.0.hook_resid_post": lambda x: x * 0.5}
    results = []
    for hooked in (False, True):
        block = control.hooks(zero, key="half") if hooked else _nothing()
        with block:
            results.append(
                interp.intervene(
                    run, target="self", alpha=0.0, judges=[judge], control_judge=[control], device="cpu", progress=False
                )
            )
    plain, hooked = (r.raw["control_variant_keys"][name] for r in results)
    assert plain != hooked
    effects = [r.raw["judges"][name]["controls"] for r in results]
    assert effects[0] != effects[1]


def test_studies_that_cannot_run_a_judges_blocks_refuse_in_one_line(notebook, tmp_path):
    run, judge = notebook
    with judge.applying(target="a", alpha=0.0), pytest.raises(InterpError, match="interp.dbg .*open blocks"):
        interp.dbg(small_run_config(tmp_path, judge), tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()
    with judge.hooks({"blocks.0.hook_resid_pre": lambda x: x}):
        for study in (interp.explain, interp.localize):
            with pytest.raises(InterpError, match=f"{study.__name__} judges with the plain model"):
                study(run, judge)
    with judge.hooks({"blocks.0.hook_resid_pre": lambda x: x}), pytest.raises(InterpError, match="backend"):
        interp.intervene(run, target="self", alpha=0.0, judges=[judge], backend="transformer_lens", progress=False)
