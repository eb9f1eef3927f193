"""Node interventions against independent oracles, on tiny models built here (Llama, Gemma-3, Qwen2, GPT-2 shapes).

The oracle never uses the toolkit's hooks: a head's output zeroed is the model with that head's input columns of
the output projection zeroed; an MLP's output zeroed is the model with its down projection zeroed; a residual
projection is a forward hook written out here; a patch from the same prompt is the plain pass.
"""

from __future__ import annotations

import copy

import pytest
import torch

from interp.core.backends import left_pad, make_backend
from interp.core.judge import judge_batch, label_tokens
from interp.core.models import wrap_model
from interp.core.spans import tokenized_judge_prompt
from interp.errors import InterpError
from interp.hooks.node_data import node_edit_builder, reference_means
from interp.hooks.nodes import NodeIntervention, node_edits, node_from_dict, register
from interp.hooks.sites import check_hook_names, decoder_layers, hook_names, site_hooks
from tests.helpers.models import tiny_gemma3_config, tiny_llama_config

TOL = 1e-5
PAIRS = [
    ("How do I boil an egg?", "Boil it for eight minutes, then cool it in cold water.", "Eggs are a food."),
    ("Name a prime number.", "Seven is prime.", "Nine, which is divisible by three, so not prime at all."),
]


def _qwen(tokenizer):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        pad_token_id=tokenizer.pad_token_id,
        attn_implementation="eager",
    )
    torch.manual_seed(3)
    return Qwen2ForCausalLM(config).eval()


def _gpt2(tokenizer):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(4)
    return GPT2LMHeadModel(
        GPT2Config(vocab_size=len(tokenizer), n_embd=64, n_layer=2, n_head=4, n_positions=1024)
    ).eval()


def _llama(tokenizer):
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(tiny_llama_config(tokenizer)).eval()


def _gemma(tokenizer):
    from transformers import Gemma3ForCausalLM

    torch.manual_seed(2)
    return Gemma3ForCausalLM(tiny_gemma3_config(tokenizer, sliding_window=1024, layer_types=None)).eval()


SHAPES = {"llama": _llama, "gemma3": _gemma, "qwen2": _qwen, "gpt2": _gpt2}


def _tokenizer(shape, smollm2_tokenizer, gemma3_tokenizer):
    return gemma3_tokenizer if shape == "gemma3" else smollm2_tokenizer


def _ids(tokenizer) -> torch.Tensor:
    return torch.tensor([tokenizer.encode("The quick brown fox jumps over the lazy dog near the river bank.")])


def _out_projection(block):
    attention = getattr(block, "self_attn", None) or block.attn
    return getattr(attention, "o_proj", None) or attention.c_proj


def _down_projection(block):
    return getattr(block.mlp, "down_proj", None) or block.mlp.c_proj


def _logits(model, ids, edits=None):
    with torch.no_grad(), site_hooks(model, edits or {}):
        return model(input_ids=ids).logits[0, -1]


def _batch(ids):
    return left_pad([ids[0].tolist()], 0)


def _spec(**keys) -> NodeIntervention:
    return node_from_dict(keys)


def _compiled(model, ids, spec):
    batch, offsets = _batch(ids)
    n_layers = model.config.get_text_config().num_hidden_layers
    return node_edits([spec], n_layers, batch, offsets, None)


@pytest.mark.parametrize("shape", SHAPES)
def test_zeroing_a_heads_output_is_zeroing_its_output_projection_columns(shape, smollm2_tokenizer, gemma3_tokenizer):
    tokenizer = _tokenizer(shape, smollm2_tokenizer, gemma3_tokenizer)
    model = SHAPES[shape](tokenizer)
    ids = _ids(tokenizer)
    oracle = copy.deepcopy(model)
    projection = _out_projection(decoder_layers(oracle)[1])
    n_heads = model.config.get_text_config().num_attention_heads
    with torch.no_grad():
        if isinstance(projection, torch.nn.Linear):  # [out, in]: the head's input columns
            width = projection.in_features // n_heads
            projection.weight[:, 2 * width : 3 * width] = 0
        else:  # GPT-2's Conv1D is [in, out]: the head's input rows
            width = projection.weight.shape[0] // n_heads
            projection.weight[2 * width : 3 * width, :] = 0
    edited = _logits(model, ids, _compiled(model, ids, _spec(site="head_output", op="zero", layers=[1], heads=[2])))
    plain = _logits(model, ids)
    assert torch.allclose(edited, _logits(oracle, ids), atol=TOL)
    assert not torch.allclose(edited, plain, atol=1e-4)  # the edit did something


@pytest.mark.parametrize("shape", SHAPES)
def test_zeroing_an_mlps_output_is_zeroing_its_down_projection(shape, smollm2_tokenizer, gemma3_tokenizer):
    tokenizer = _tokenizer(shape, smollm2_tokenizer, gemma3_tokenizer)
    model = SHAPES[shape](tokenizer)
    ids = _ids(tokenizer)
    oracle = copy.deepcopy(model)
    down = _down_projection(decoder_layers(oracle)[0])
    with torch.no_grad():
        down.weight.zero_()
        if getattr(down, "bias", None) is not None:
            down.bias.zero_()
    edited = _logits(model, ids, _compiled(model, ids, _spec(site="mlp_output", op="zero", layers=[0])))
    assert torch.allclose(edited, _logits(oracle, ids), atol=TOL)
    assert not torch.allclose(edited, _logits(model, ids), atol=1e-4)


@pytest.mark.parametrize("shape", SHAPES)
def test_projecting_a_direction_out_of_the_residual_stream_equals_the_hand_edit(
    shape, smollm2_tokenizer, gemma3_tokenizer
):
    tokenizer = _tokenizer(shape, smollm2_tokenizer, gemma3_tokenizer)
    model = SHAPES[shape](tokenizer)
    ids = _ids(tokenizer)
    d_model = model.config.get_text_config().hidden_size
    direction = torch.randn(d_model, generator=torch.Generator().manual_seed(9))
    unit = (direction / direction.norm()).double()

    def by_hand(_module, _args, output):
        hidden = output[0] if isinstance(output, tuple) else output
        wide = hidden.double()
        edited = (wide - (wide @ unit)[..., None] * unit).to(hidden.dtype)
        return (edited, *output[1:]) if isinstance(output, tuple) else edited

    handle = decoder_layers(model)[0].register_forward_hook(by_hand)
    try:
        oracle = _logits(model, ids)
    finally:
        handle.remove()
    spec = _spec(site="residual", op="project_out", layers=[0], direction=direction.tolist())
    edited = _logits(model, ids, _compiled(model, ids, spec))
    assert torch.allclose(edited, oracle, atol=TOL)
    assert not torch.allclose(edited, _logits(model, ids), atol=1e-4)
    added = _logits(
        model,
        ids,
        _compiled(
            model, ids, _spec(site="residual", op="add", layers=[0], direction=direction.tolist(), coefficient=0.0)
        ),
    )
    assert torch.allclose(added, _logits(model, ids), atol=TOL)  # adding 0 x u is the identity


def _judged(model, edit=None):
    backend = make_backend(model, "hf")
    prompts = [tokenized_judge_prompt(model, "helpfulness", *pair) for pair in PAIRS]
    return (
        torch.tensor(
            [
                j.probs["A"]
                for j in judge_batch(backend, prompts, label_tokens(model.tokenizer), readout=None, edit=edit)
            ],
            dtype=torch.float64,
        ),
        backend,
        prompts,
    )


@pytest.mark.parametrize("shape", ["llama", "gemma3"])
def test_a_patch_from_the_same_prompt_is_the_identity_and_a_swap_patch_of_everything_is_the_swapped_pair(
    shape, smollm2_tokenizer, gemma3_tokenizer
):
    tokenizer = _tokenizer(shape, smollm2_tokenizer, gemma3_tokenizer)
    model = wrap_model(SHAPES[shape](tokenizer), tokenizer, name=shape)
    plain, backend, prompts = _judged(model)
    same = node_edit_builder(
        [_spec(site="residual", op="patch", counterfactual="same", layers=[0, 1])], backend, own=None
    )
    assert torch.allclose(_judged(model, same)[0], plain, atol=1e-6)
    # patching every position of the last layer's stream from the swapped pair gives the swapped pair's verdict
    swapped = [tokenized_judge_prompt(model, "helpfulness", q, b, a) for q, a, b in PAIRS]
    swapped_p = torch.tensor(
        [j.probs["A"] for j in judge_batch(backend, swapped, label_tokens(tokenizer), readout=None)],
        dtype=torch.float64,
    )
    last = model.n_layers - 1
    swap = node_edit_builder(
        [_spec(site="residual", op="patch", counterfactual="swap", layers=[last])], backend, own=None
    )
    assert torch.allclose(_judged(model, swap)[0], swapped_p, atol=TOL)


def test_composition_of_disjoint_sites_is_order_free(smollm2_tokenizer):
    model = wrap_model(_llama(smollm2_tokenizer), smollm2_tokenizer, name="llama")
    _, backend, prompts = _judged(model)
    first = _spec(site="head_output", op="zero", layers=[0], heads=[1])
    means = {
        1: reference_means(backend, _spec(site="mlp_output", op="mean", layers=[1]), prompts, own=None, authors=None)
    }
    second = _spec(site="mlp_output", op="mean", layers=[1])
    one = _judged(model, node_edit_builder([first, second], backend, own=None, means=means))[0]
    other = _judged(model, node_edit_builder([second, first], backend, own=None, means={0: means[1]}))[0]
    assert torch.allclose(one, other, atol=1e-7)
    assert not torch.allclose(one, _judged(model)[0], atol=1e-4)


def test_every_backend_gives_the_same_head_ablation(smollm2_tokenizer):
    model = wrap_model(_llama(smollm2_tokenizer), smollm2_tokenizer, name="llama")
    prompts = [tokenized_judge_prompt(model, "helpfulness", *pair) for pair in PAIRS]
    spec = _spec(site="head_output", op="zero", layers=[1], heads=[0, 3], positions="final")
    values = {}
    for name in ("hf", "nnsight", "transformer_lens"):
        backend = make_backend(model, name)
        judged = judge_batch(
            backend,
            prompts,
            label_tokens(smollm2_tokenizer),
            readout=None,
            edit=node_edit_builder([spec], backend, own=None),
        )
        values[name] = torch.tensor([j.probs["A"] for j in judged], dtype=torch.float64)
    plain = _judged(model)[0]
    assert not torch.allclose(values["hf"], plain, atol=1e-4)
    assert torch.allclose(values["nnsight"], values["hf"], atol=TOL)
    assert torch.allclose(values["transformer_lens"], values["hf"], atol=1e-4)


def test_hooks_are_removed_on_exit_and_on_error(smollm2_tokenizer):
    from tests.helpers.models import module_hooks

    model = _llama(smollm2_tokenizer)
    before = module_hooks(model)
    with pytest.raises(RuntimeError, match="boom"):
        with site_hooks(model, {"blocks.0.hook_mlp_out": lambda t: None}):
            raise RuntimeError("boom")
    assert module_hooks(model) == before


def test_unknown_or_missing_hook_points_are_one_line(smollm2_tokenizer):
    model = _llama(smollm2_tokenizer)
    assert (
        "blocks.1.attn.hook_z" in hook_names(model) and len(hook_names(model)) == 2 * 7
    )  # 5 module points, the pattern and the values
    with pytest.raises(InterpError, match="does not exist"):
        check_hook_names(model, ["blocks.7.hook_mlp_out"])

    class Fused(torch.nn.Module):  # an output projection that exposes no per-head input
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)

    for block in decoder_layers(model):
        block.self_attn.o_proj = Fused(block.self_attn.o_proj)
    assert not any(name.endswith("hook_z") for name in hook_names(model))
    with pytest.raises(InterpError, match="exposes no per-head output"):
        check_hook_names(model, ["blocks.0.attn.hook_z"])


def test_specs_are_data(tmp_path):
    spec = _spec(site="head_output", op="mean", layers=[23, 27], heads={"23": [8, 3], "27": [1]}, positions="all")
    assert spec.heads_table == {23: (3, 8), 27: (1,)}
    assert node_from_dict(spec.to_dict()) == spec
    path = tmp_path / "spec.toml"
    path.write_text(spec.to_toml())
    from interp.hooks.nodes import load_node_spec

    assert load_node_spec(path) == spec
    for bad, message in [
        (dict(site="head_output", op="zero", heads=[1.5]), "non-negative integers"),
        (dict(site="mlp_output", op="zero", heads=[1]), "the head sites"),
        (dict(site="head_output", op="melt"), "unknown op"),
        (dict(site="head_output", op="zero", wobble=1), "unknown key 'wobble'"),
        (dict(site="head_output", op="project_out", direction=[1.0]), "acts on mlp_output, residual"),
        (
            dict(site="residual", op="patch", counterfactual="swap", positions="self"),
            "positions must be 'all' or 'final'",
        ),
        (dict(site="residual", op="resample", positions="all"), "positions must be 'final'"),
        (dict(site="residual", op="add", direction=[0.0, 0.0]), "zero or non-finite norm"),
    ]:
        with pytest.raises(InterpError, match=message):
            node_from_dict(bad)


@register
class Halve(NodeIntervention):
    """A user's kind, defined in a test file: scale the site by one half."""

    op = "halve-test"

    def replacement(self, activation, context):
        return activation * 0.5


def test_a_registered_kind_loads_and_runs(smollm2_tokenizer):
    model = wrap_model(_llama(smollm2_tokenizer), smollm2_tokenizer, name="llama")
    spec = node_from_dict({"site": "mlp_output", "op": "halve-test", "layers": [0]})
    assert isinstance(spec, Halve)
    _, backend, _ = _judged(model)
    halved = _judged(model, node_edit_builder([spec], backend, own=None))[0]
    oracle = copy.deepcopy(model.hf_model)
    with torch.no_grad():
        oracle.model.layers[0].mlp.down_proj.weight.mul_(0.5)
    assert torch.allclose(halved, _judged(wrap_model(oracle, smollm2_tokenizer, name="halved"))[0], atol=TOL)
