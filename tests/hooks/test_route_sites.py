"""A head's two routes as hook points: its pattern (`attn.hook_pattern`) and the values it reads (`attn.hook_v`).

Oracles: a head's output is its pattern times its values, so patching both from a counterfactual is patching its
output (`attn.hook_z`) from it; reading the points changes nothing; a patch from the prompt itself is the identity;
under grouped-query attention a values patch at one head leaves the heads that share its key/value head alone.
Tiny Llama and Gemma-3 models (grouped-query, sliding window) built here.
"""

from __future__ import annotations

import pytest
import torch

from interp.core.backends import Edits, make_backend
from interp.core.judge import judge_batch, label_tokens
from interp.core.models import wrap_model
from interp.core.spans import tokenized_judge_prompt
from interp.errors import InterpError
from interp.hooks.node_data import node_edit_builder
from interp.hooks.nodes import node_from_dict
from interp.hooks.sites import site_hooks
from tests.helpers.models import tiny_gemma3_config, tiny_llama_config

PAIRS = [
    ("How do I boil an egg?", "Boil it for eight minutes, then cool it in cold water.", "Eggs are a food."),
    ("Name a prime number.", "Seven is prime.", "Nine, which is divisible by three, so not prime at all."),
]
TOL = 1e-5


def _model(shape, smollm2_tokenizer, gemma3_tokenizer):
    if shape == "gemma3":
        from transformers import Gemma3ForCausalLM

        torch.manual_seed(2)
        return wrap_model(Gemma3ForCausalLM(tiny_gemma3_config(gemma3_tokenizer)).eval(), gemma3_tokenizer, name=shape)
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    return wrap_model(LlamaForCausalLM(tiny_llama_config(smollm2_tokenizer)).eval(), smollm2_tokenizer, name=shape)


def _p_a(model, edit=None) -> torch.Tensor:
    backend = make_backend(model, "hf")
    prompts = [tokenized_judge_prompt(model, "helpfulness", *pair) for pair in PAIRS]
    judged = judge_batch(backend, prompts, label_tokens(model.tokenizer), readout=None, edit=edit)
    return torch.tensor([j.probs["A"] for j in judged], dtype=torch.float64)


def _patch(model, *specs):
    return node_edit_builder([node_from_dict(spec) for spec in specs], make_backend(model, "hf"), own=None)


@pytest.mark.parametrize("shape", ["llama", "gemma3"])
def test_patching_a_heads_pattern_and_values_is_patching_its_output(shape, smollm2_tokenizer, gemma3_tokenizer):
    model = _model(shape, smollm2_tokenizer, gemma3_tokenizer)
    where = {"heads": {0: [1], 1: [0, 2]}, "counterfactual": "swap", "op": "patch"}
    output = _p_a(model, _patch(model, {"site": "head_output", **where}))
    both = _p_a(model, _patch(model, {"site": "head_pattern", **where}, {"site": "head_values", **where}))
    pattern = _p_a(model, _patch(model, {"site": "head_pattern", **where}))
    values = _p_a(model, _patch(model, {"site": "head_values", **where}))
    plain = _p_a(model)
    assert torch.allclose(both, output, atol=TOL)
    assert not torch.allclose(output, plain, atol=1e-4)  # the heads matter on these prompts
    assert not torch.allclose(pattern, values, atol=1e-4)  # the two routes are different edits


@pytest.mark.parametrize("shape", ["llama", "gemma3"])
def test_reading_the_route_points_or_patching_them_from_the_prompt_itself_changes_nothing(
    shape, smollm2_tokenizer, gemma3_tokenizer
):
    model = _model(shape, smollm2_tokenizer, gemma3_tokenizer)
    plain = _p_a(model)
    same = {"op": "patch", "counterfactual": "same", "heads": [0, 1]}
    assert torch.allclose(
        _p_a(model, _patch(model, {"site": "head_pattern", **same}, {"site": "head_values", **same})), plain, atol=TOL
    )


def test_a_values_patch_at_one_head_leaves_the_heads_sharing_its_key_value_head_alone(
    smollm2_tokenizer, gemma3_tokenizer
):
    model = _model("llama", smollm2_tokenizer, gemma3_tokenizer)
    config = model.hf_model.config
    groups = config.num_attention_heads // config.num_key_value_heads
    assert groups > 1, "the tiny Llama must use grouped-query attention for this check"
    ids = torch.tensor([model.tokenizer.encode("The quick brown fox jumps over the lazy dog near the river bank.")])
    backend = make_backend(model, "hf")
    from interp.core.backends import left_pad

    batch, _ = left_pad([ids[0].tolist()], 0)
    kept: dict[str, torch.Tensor] = {}

    def keep(name):
        def fn(activation):
            kept[name] = activation.detach().clone()

        return fn

    backend.forward(batch, edits=Edits(sites={"blocks.0.attn.hook_z": keep("plain")}))
    zeros = {
        "blocks.0.attn.hook_v": lambda v: torch.where(
            torch.arange(v.shape[2])[None, None, :, None] == 0, torch.zeros_like(v), v
        )
    }
    backend.forward(batch, edits=Edits(sites={**zeros, "blocks.0.attn.hook_z": keep("edited")}))
    assert torch.allclose(kept["edited"][:, :, 0], torch.zeros_like(kept["edited"][:, :, 0]))  # head 0 read zeros
    assert torch.allclose(
        kept["edited"][:, :, 1:groups], kept["plain"][:, :, 1:groups], atol=1e-6
    )  # its group's other heads did not


def test_route_points_outside_the_toolkits_attention_stop_with_one_line(smollm2_tokenizer, gemma3_tokenizer):
    model = _model("llama", smollm2_tokenizer, gemma3_tokenizer)
    ids = torch.tensor([model.tokenizer.encode("Hello there")])
    with pytest.raises(InterpError, match="toolkit's attention function"):
        with torch.no_grad(), site_hooks(model.hf_model, {"blocks.0.attn.hook_pattern": lambda p: None}):
            model.hf_model(input_ids=ids)


def test_route_sites_take_patch_only_and_heads():
    with pytest.raises(InterpError, match="acts on"):
        node_from_dict({"site": "head_pattern", "op": "mean", "heads": [0]})
    spec = node_from_dict({"site": "head_values", "op": "patch", "heads": {3: [1]}, "counterfactual": "reference"})
    assert spec.hook_names(4) == ["blocks.3.attn.hook_v"]
