"""The cached final-position path against the full re-judge, site kind by site kind.

Each variant is judged twice: the full pass (the hf backend's forward with the interventions' own edits,
`interventions_builder`) and the cached path (one clean pass kept, then every variant as a block of rows of ONE
final-token pass over its keys and values). P(A) must agree to 1e-5, on tiny random models of three shapes built
here (Llama with grouped-query attention, Qwen2, and a Llama read as a base model without a chat template), and
once on the packaged SmolLM2 (slow). An edit the cached path cannot represent is refused, never run.
"""

from __future__ import annotations

import copy

import pytest
import torch

from interp.core.backends import left_pad, make_backend
from interp.core.backends.final_cached import clean_pass, final_pass
from interp.core.judge import label_probabilities, label_tokens
from interp.core.models import wrap_model
from interp.core.spans import tokenized_judge_prompt
from interp.errors import InterpError
from interp.hooks.final_row import FinalActivations, RowInputs, at_positions, final_row_edits, final_row_problem
from interp.hooks.node_data import interventions_builder, reference_means
from interp.hooks.nodes import node_from_dict
from interp.hooks.spec import AttentionIntervention
from interp.hooks.steering import ResidualSteering
from tests.helpers.models import TINY_SHAPE, tiny_llama_config

TOL = 1e-5
OWN, OTHER = "smollm2-135m-instruct", "gemma3-270m"
PAIRS = [
    ("How do I boil an egg?", "Boil it for eight minutes, then cool it in cold water.", "Eggs are a food."),
    ("Name a prime number.", "Seven is prime.", "Nine, which is divisible by three, so not prime at all."),
    ("What is the capital of France?", "Paris.", "The capital of France is Paris, on the Seine."),
]


def _llama(tokenizer, kind=None):
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(tiny_llama_config(tokenizer, num_hidden_layers=3)).eval()
    return wrap_model(model, tokenizer, name=OWN, kind=kind, source="test")


def _qwen(tokenizer, kind=None):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    shape = TINY_SHAPE | {"num_hidden_layers": 3, "max_position_embeddings": 2048, "initializer_range": 0.2}
    config = Qwen2Config(
        vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, attn_implementation="eager", **shape
    )
    torch.manual_seed(3)
    return wrap_model(Qwen2ForCausalLM(config).eval(), tokenizer, name=OWN, kind=kind, source="test")


def _base(tokenizer):
    plain = copy.deepcopy(tokenizer)
    plain.chat_template = None
    return _llama(plain, kind="pre")


def _direction(width: int, seed: int = 5) -> list[float]:
    return torch.randn(width, generator=torch.Generator().manual_seed(seed)).tolist()


def _variants(model) -> dict[str, list]:
    """One variant per site kind, every one at the final position."""
    width = model.hf_model.config.hidden_size
    heads = {1: [0, 3], 2: [1]}
    node = lambda **keys: node_from_dict({"positions": "final", **keys})  # noqa: E731
    return {
        "mask-self": [AttentionIntervention(target="self", alpha=0.0, queries="final")],
        "dampen-other-heads": [
            AttentionIntervention(target="other", alpha=0.3, queries="final", heads=((1, (0, 2)), (2, (3,))))
        ],
        "emphasis-a": [AttentionIntervention(target="a", alpha=3.0, queries="final", emphasis=True)],
        "zero-heads": [node(site="head_output", op="zero", heads=heads)],
        "mean-heads": [node(site="head_output", op="mean", heads=heads)],
        "resample-heads": [node(site="head_output", op="resample", heads=heads, seed=1)],
        "patch-swap-heads": [node(site="head_output", op="patch", heads=heads, counterfactual="swap")],
        "patch-other-heads": [node(site="head_output", op="patch", heads=heads, counterfactual="other")],
        "mean-mlp": [node(site="mlp_output", op="mean", layers=[0, 2])],
        "zero-mlp": [node(site="mlp_output", op="zero", layers=[1])],
        "add-residual": [node(site="residual", op="add", layers=[1], direction=_direction(width), coefficient=4.0)],
        "project-residual": [node(site="residual", op="project_out", layers=[0, 2], direction=_direction(width, 6))],
        "steer": [ResidualSteering(1, 3.0, "add", "final", torch.tensor(_direction(width, 7)))],
        "two-kinds": [
            AttentionIntervention(target="self", alpha=0.0, queries="final", layers=(2,)),
            node(site="head_output", op="zero", heads={0: [1]}),
        ],
    }


def _prompts(model):
    return [tokenized_judge_prompt(model, "helpfulness", q, a, b) for q, a, b in PAIRS] + [
        tokenized_judge_prompt(model, "helpfulness", q, b, a) for q, a, b in PAIRS
    ]


def _authors(n: int):
    half = n // 2
    return [(OWN, OTHER)] * half + [(OTHER, OWN)] * (n - half)


def _means(runner, interventions, prompts, authors):
    return {
        i: reference_means(runner, spec, prompts, own=OWN, authors=authors)
        for i, spec in enumerate(interventions)
        if spec.needs == "mean"
    }


def _p_a(logits, labels):
    return label_probabilities(logits, labels)[1][:, 0]


def _both_paths(model, rows: list[int], only: tuple[str, ...] | None = None):
    """P(A) per variant (`only`: those named) through the full pass and the cached path, for the prompts `rows` as
    one batch."""
    runner = make_backend(model, "hf")
    labels = label_tokens(model.tokenizer)
    everything = _prompts(model)
    prompts = [everything[r] for r in rows]
    authors = [_authors(len(everything))[r] for r in rows]
    batch, offsets = left_pad([p.input_ids for p in prompts], model.tokenizer.pad_token_id)
    variants = {name: v for name, v in _variants(model).items() if only is None or name in only}
    activations = FinalActivations(runner)
    clean = clean_pass(model, batch, keep=activations.points())
    activations.add([p.input_ids for p in prompts], clean.sites)
    full, cached_edits = {}, []
    for name, interventions in variants.items():
        means = _means(runner, interventions, everything, _authors(len(everything)))
        keys = dict(own=OWN, authors=authors, references=None, means=means, pool=everything)
        edits = interventions_builder(interventions, runner, **keys)(batch, offsets, prompts)
        full[name] = _p_a(runner.forward(batch, edits=edits), labels)
        cached_edits.append(final_row_edits(interventions, activations, batch, offsets, prompts, RowInputs(**keys)))
    logits = final_pass(model, clean, cached_edits)
    cached = {name: _p_a(logits[i], labels) for i, name in enumerate(variants)}
    plain = _p_a(runner.forward(batch), labels)
    return full, cached, plain, _p_a(clean.logits, labels)


SHAPES = {"llama-gqa": _llama, "qwen2": _qwen, "no-chat-template": _base}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("rows", [[0], [1, 4, 2]], ids=["one-prompt", "three-prompts-padded"])
def test_every_site_kind_at_the_final_position_equals_the_full_rejudge(shape, rows, smollm2_tokenizer):
    model = SHAPES[shape](smollm2_tokenizer)
    full, cached, plain, clean = _both_paths(model, rows)
    assert torch.allclose(clean, plain, atol=TOL, rtol=0)  # the clean pass's own logits are the plain pass's
    moved = 0
    for name in full:
        assert torch.allclose(cached[name], full[name], atol=TOL, rtol=0), (name, cached[name], full[name])
        moved += bool((full[name] - plain).abs().max() > 1e-4)
    assert moved >= len(full) - 2  # the edits do something (a comparison of no-ops would prove nothing)


def test_the_no_chat_template_model_reads_a_plain_prompt(smollm2_tokenizer):
    model = _base(smollm2_tokenizer)
    assert model.kind == "pre"
    assert "<|im_start|>" not in _prompts(model)[0].text


def test_edits_at_other_positions_are_refused_by_the_cached_path(smollm2_tokenizer):
    model = _llama(smollm2_tokenizer)
    runner = make_backend(model, "hf")
    prompts = _prompts(model)[:1]
    batch, offsets = left_pad([p.input_ids for p in prompts], model.tokenizer.pad_token_id)
    activations = FinalActivations(runner)
    refused = [
        AttentionIntervention(target="self", alpha=0.0),  # queries outside the span: every later position
        node_from_dict({"site": "head_output", "op": "zero", "heads": {1: [0]}}),  # positions all
        node_from_dict({"site": "head_pattern", "op": "patch", "heads": {1: [0]}, "positions": "final"}),
        ResidualSteering(1, 3.0, "add", "all", torch.ones(64)),
    ]
    for intervention in refused:
        assert final_row_problem([intervention]) is not None
        with pytest.raises(InterpError, match="cannot represent"):
            final_row_edits([intervention], activations, batch, offsets, prompts, RowInputs(OWN, [(OWN, OTHER)]))
    assert final_row_problem([at_positions(refused[0], "final"), at_positions(refused[1], "final")]) is None


def test_at_positions_refuses_a_position_a_kind_cannot_take():
    resample = node_from_dict({"site": "head_output", "op": "resample", "positions": "final"})
    with pytest.raises(InterpError, match="final position only"):
        at_positions(resample, "all")
    swap = node_from_dict({"site": "head_output", "op": "patch", "counterfactual": "swap"})
    assert at_positions(swap, "final").positions == "final"
    with pytest.raises(InterpError, match="unknown positions"):
        at_positions(swap, "spans")


@pytest.mark.slow
def test_the_cached_path_equals_the_full_rejudge_on_smollm2(smollm2):
    names = ("mask-self", "mean-heads", "patch-swap-heads", "project-residual")
    full, cached, plain, _ = _both_paths(smollm2, [0, 3], names)
    for name in names:
        assert torch.allclose(cached[name], full[name], atol=TOL, rtol=0), (name, cached[name], full[name])
