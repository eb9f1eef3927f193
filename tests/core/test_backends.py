"""The three backends agree with each other and with plain HF `output_attentions`; booting leaves the
user's model untouched; batched (left-padded) and shared-prefix judging equal one prompt at a time."""

from __future__ import annotations

import pytest
import torch

from interp.core.backends import BACKENDS, Batch, left_pad, make_backend
from interp.core.judge import (
    judge_batch,
    judgment_record,
    label_tokens,
)
from interp.core.spans import build_judge_prompt
from tests.helpers.reference import (
    ANSWER_A,
    ANSWER_B,
    BATCH_ITEMS,
    BATCH_TOL,
    QUERY,
    TINY,
    TOL,
    assert_close,
    plain_hf,
    slow,
    style_kinds,
    tokenized,
)

# ---- three backends agree with each other and with plain HF output_attentions -------------------


def _agreement_params():
    """Tiny models: every prompt style x two tasks x both query sets. Real models (slow, ~1-2 s a forward):
    chat and few-shot for SmolLM2, few-shot for Gemma (pre-trained, no chat template), every task once,
    the "after" query set once per model."""
    cases = [
        ("tiny_llama", "post", "helpfulness", "final"),
        ("tiny_llama", "post", "helpfulness", "after"),
        ("tiny_llama", "pre", "translation", "final"),
        ("tiny_llama", "pre", "truthfulness", "after"),
        ("tiny_gemma3", "pre", "truthfulness", "final"),
        ("tiny_gemma3", "pre", "truthfulness", "after"),
        ("tiny_gemma3", "pre", "translation", "final"),
        ("smollm2", "post", "helpfulness", "final"),
        ("smollm2", "post", "helpfulness", "after"),
        ("smollm2", "pre", "translation", "final"),
        ("gemma3", "pre", "truthfulness", "final"),
        ("gemma3", "pre", "translation", "after"),
    ]
    return [
        pytest.param(*case, marks=() if case[0].startswith("tiny") else (slow,), id="-".join(case)) for case in cases
    ]


@pytest.mark.parametrize("name,kind,task,readout", _agreement_params())
def test_backends_agree_with_plain_hf(backends, name, kind, task, readout):
    bset = backends(name)
    model = bset.model
    prompt = tokenized(model, task, QUERY, ANSWER_A, ANSWER_B, kind=kind)
    assert len(prompt) <= (model.context_length or len(prompt))
    ref_logits, ref_probs, ref_mass = plain_hf(model, prompt, readout)
    assert ref_mass.shape == (model.n_layers, model.n_heads, 2)
    labels = label_tokens(model.tokenizer)
    first = None
    for backend_name in BACKENDS:
        backend = bset[backend_name]
        (judgment,) = judge_batch(backend, [prompt], labels, readout=readout)
        where = f"{name}/{backend_name}/{kind}/{task}/{readout}"
        assert judgment.spans == prompt.spans
        first = first or judgment  # backends against each other (hf first), then each against plain HF
        assert abs(judgment.probs["A"] - first.probs["A"]) <= TOL, f"{where} vs hf backend: label probs"
        assert_close(judgment.mass, first.mass, TOL, f"{where} vs hf backend: per-head masses")
        assert_close(
            [judgment.probs["A"], judgment.probs["B"]], [ref_probs["A"], ref_probs["B"]], TOL, f"{where} label probs"
        )
        assert abs(judgment.probs["A"] + judgment.probs["B"] - 1.0) < 1e-9
        assert_close(judgment.mass, ref_mass, TOL, f"{where} per-head masses")
        assert_close(judgment.mass.mean(1), ref_mass.mean(1), TOL, f"{where} per-layer masses")
        # the record's per-layer numbers are the head means of the same masses, and means are mass / |span|
        record = judgment_record(judgment)
        width = [e - s for s, e in (prompt.spans["a"], prompt.spans["b"])]
        assert_close([row["mass_a"] for row in record["layers"]], ref_mass[:, :, 0].mean(1), TOL, f"{where} mass_a")
        assert_close(
            [row["mean_b"] for row in record["layers"]], ref_mass[:, :, 1].mean(1) / width[1], TOL, f"{where} mean_b"
        )
        if readout == "final":
            ids = torch.tensor([prompt.input_ids])
            logits = backend.forward(Batch(ids, torch.ones_like(ids)))
            # logits reach ~30 in float32; a full-vocab matmul (TransformerLens, nnsight) and HF's
            # last-position-only one differ by ~3e-5 here, so allow 1e-3 absolute
            assert_close(logits[0], ref_logits, TOL * 10, f"{where} final-position logits")
            assert int(logits[0].argmax()) == int(ref_logits.argmax())


# ---- the model object stays the user's -------------------------------------------------------------


@pytest.mark.parametrize("name", TINY + [pytest.param("smollm2", marks=slow)])
def test_booting_backends_leaves_the_model_untouched(backends, name):
    bset = backends(name)  # records the plain HF output before anything is booted
    model = bset.model
    attention_types = [type(m) for n, m in model.hf_model.named_modules() if n.endswith("self_attn")]
    prompt = tokenized(model, "helpfulness", QUERY, ANSWER_A, ANSWER_B, kind="pre")
    labels = label_tokens(model.tokenizer)
    for backend_name in ("transformer_lens", "nnsight"):
        judge_batch(bset[backend_name], [prompt], labels)  # boot and run it once, hooks and all
    with torch.no_grad():
        out = model.hf_model(bset.probe, output_attentions=True)
    assert out.attentions is not None and len(out.attentions) == model.n_layers
    assert all(a is not None and a.shape[1] == model.n_heads for a in out.attentions)
    assert torch.equal(out.logits, bset.before_logits)
    for layer, (now, before) in enumerate(zip(out.attentions, bset.before_attentions, strict=False)):
        assert torch.equal(now, before), f"layer {layer} attention changed"
    assert [type(m) for n, m in model.hf_model.named_modules() if n.endswith("self_attn")] == attention_types
    assert model.hf_model.config._attn_implementation == "eager"
    assert bset.module_hooks(model.hf_model) == bset.before_hooks  # no hook of ours left behind


# ---- batched (left-padded) judging equals one prompt at a time -------------------------------------


def _batch_params():
    """Every backend on the tiny models; on the real ones hf and transformer_lens (the bridge handles the
    padding mask itself; nnsight runs the HF forward with the same arguments as hf)."""
    params = []
    for name in TINY:
        params.append(pytest.param(name, "final", BACKENDS, id=f"{name}-final"))
        params.append(
            pytest.param(name, "after", ("hf",), id=f"{name}-after")
        )  # the query set lives in the shared reducer
    for name in ("smollm2", "gemma3"):
        params.append(pytest.param(name, "final", ("hf", "transformer_lens"), marks=slow, id=f"{name}-final"))
    return params


@pytest.mark.parametrize("name,readout,backend_names", _batch_params())
def test_batched_judging_equals_one_at_a_time(backends, name, readout, backend_names):
    bset = backends(name)
    model = bset.model
    kind = style_kinds(model)[0]
    prompts = [tokenized(model, "helpfulness", q, a, b, kind=kind) for q, a, b in BATCH_ITEMS]
    assert len({len(p) for p in prompts}) == len(prompts), "prompts should differ in length"
    labels = label_tokens(model.tokenizer)
    for backend_name in backend_names:
        backend = bset[backend_name]
        batched = judge_batch(backend, prompts, labels, readout=readout)
        for index, prompt in enumerate(prompts):
            (single,) = judge_batch(backend, [prompt], labels, readout=readout)
            where = f"{name}/{backend_name}/{readout}/prompt {index}"
            assert batched[index].spans == single.spans == prompt.spans
            assert batched[index].n_tokens == len(prompt)
            assert_close(
                [batched[index].probs["A"], batched[index].probs["B"]],
                [single.probs["A"], single.probs["B"]],
                BATCH_TOL,
                f"{where} probs",
            )
            assert_close(batched[index].mass, single.mass, BATCH_TOL, f"{where} masses")
            assert_close(batched[index].label_mass, single.label_mass, BATCH_TOL, f"{where} label mass")


SHARED_PREFIX_TARGETS = [None, "a", "random"]  # no bias; a bias in the suffix; a control that may fall in the prefix


@pytest.mark.parametrize("target", SHARED_PREFIX_TARGETS)
@pytest.mark.parametrize("readout", ["final", "after"])
@pytest.mark.parametrize(
    "name,shares", [("tiny_llama", True), ("tiny_gemma3_wide_window", True), ("tiny_gemma3", False)]
)
def test_shared_prefix_pass_equals_one_at_a_time(request, monkeypatch, name, shares, readout, target):
    """The hf backend runs a batch's common prefix once (keys and values repeated over the rows); results
    equal one prompt at a time. A sliding window shorter than the batch (tiny_gemma3: 48) must not share."""
    from interp.core.backends.hf import HFBackend
    from interp.core.judge import shared_prefix_length
    from interp.hooks.compile import bias_builder
    from interp.hooks.spec import AttentionIntervention

    model = request.getfixturevalue(name)
    backend = make_backend(model, "hf")
    kind = style_kinds(model)[0]
    prompts = [tokenized(model, "helpfulness", q, a, b, kind=kind) for q, a, b in BATCH_ITEMS]
    prompts += [tokenized(model, "helpfulness", q, b, a, kind=kind) for q, a, b in BATCH_ITEMS]
    assert shared_prefix_length(prompts) >= 16
    spec = AttentionIntervention(target=target, alpha=0.0, seed=1) if target else None
    bias = bias_builder(spec, model) if spec else None
    labels = label_tokens(model.tokenizer)
    shared_passes = []
    original = HFBackend._forward_shared
    monkeypatch.setattr(
        HFBackend, "_forward_shared", lambda self, *args: shared_passes.append(1) or original(self, *args)
    )
    batched = judge_batch(backend, prompts, labels, readout=readout, bias=bias)
    if shares and target != "random":
        assert shared_passes, "the batch's common prefix was not shared"
    if not shares:
        assert not shared_passes, "a sliding window shorter than the batch must not share the prefix"
    for index, prompt in enumerate(prompts):
        (single,) = judge_batch(backend, [prompt], labels, readout=readout, bias=bias)
        where = f"{name}/{readout}/{target}/prompt {index}"
        assert_close([batched[index].probs["A"]], [single.probs["A"]], BATCH_TOL, f"{where} probs")
        assert_close(batched[index].mass, single.mass, BATCH_TOL, f"{where} masses")


@pytest.mark.parametrize("positions,shares", [("final", True), ("spans", True), ("all", False)])
def test_shared_prefix_with_residual_edits(tiny_llama, monkeypatch, positions, shares):
    """Steering edits that leave the prefix alone run on the shared-prefix pass; one at every position
    (the prefix included) falls back to the plain pass. Either way batched == one at a time."""
    from interp.core.backends.hf import HFBackend
    from interp.hooks.steering import steer

    backend = make_backend(tiny_llama, "hf")
    prompts = [tokenized(tiny_llama, "helpfulness", q, a, b, kind="post") for q, a, b in BATCH_ITEMS]
    direction = torch.randn(tiny_llama.hf_model.config.hidden_size, generator=torch.Generator().manual_seed(0))
    edit = steer(direction, 0, 3.0, "add", positions)
    labels = label_tokens(tiny_llama.tokenizer)
    shared_passes = []
    original = HFBackend._forward_shared
    monkeypatch.setattr(
        HFBackend, "_forward_shared", lambda self, *args: shared_passes.append(1) or original(self, *args)
    )
    batched = judge_batch(backend, prompts, labels, readout="final", edit=edit)
    assert bool(shared_passes) == shares
    plain = judge_batch(backend, prompts, labels, readout="final")
    assert max(abs(x.probs["A"] - y.probs["A"]) for x, y in zip(batched, plain, strict=False)) > 1e-4, (
        "the edit should matter"
    )
    for index, prompt in enumerate(prompts):
        (single,) = judge_batch(backend, [prompt], labels, readout="final", edit=edit)
        assert_close([batched[index].probs["A"]], [single.probs["A"]], BATCH_TOL, f"{positions} prompt {index} probs")
        assert_close(batched[index].mass, single.mass, BATCH_TOL, f"{positions} prompt {index} masses")


def test_shared_prefix_patterns_keep_the_batch_columns(tiny_llama):
    """Patterns from the shared-prefix pass are the plain pass's rows for the suffix queries, key for key
    (prefix keys included), so any pattern consumer sees the batch's own coordinates."""
    from interp.core.judge import shared_prefix_length

    backend = make_backend(tiny_llama, "hf")
    prompts = [tokenized(tiny_llama, "helpfulness", q, a, b, kind="post") for q, a, b in BATCH_ITEMS]
    batch, offsets = left_pad([p.input_ids for p in prompts], tiny_llama.tokenizer.pad_token_id)
    prefix = shared_prefix_length(prompts)
    plain, shared = {}, {}
    backend.forward(batch, on_pattern=lambda layer, pattern: plain.__setitem__(layer, pattern.clone()))
    backend.forward(
        batch, on_pattern=lambda layer, pattern: shared.__setitem__(layer, pattern.clone()), shared_prefix=prefix
    )
    width = batch.input_ids.shape[1]
    for layer in plain:
        assert shared[layer].shape[-2:] == (width - prefix, width)
        for row, offset in enumerate(offsets):
            real_queries = slice(max(prefix, offset + prefix), width)  # the suffix's non-pad query rows
            assert_close(
                shared[layer][row, :, real_queries.start - prefix :],
                plain[layer][row, :, real_queries],
                BATCH_TOL,
                f"layer {layer} row {row} pattern",
            )


def test_shared_prefix_stops_before_the_first_response(tiny_llama):
    from interp.core.judge import shared_prefix_length

    first = tokenized(tiny_llama, "helpfulness", QUERY, ANSWER_A, ANSWER_B, kind="post")
    swapped = tokenized(tiny_llama, "helpfulness", QUERY, ANSWER_B, ANSWER_A, kind="post")
    assert shared_prefix_length([first]) == 0  # one row: nothing to share
    assert shared_prefix_length([first, swapped]) <= min(first.spans["a"][0], swapped.spans["a"][0])
    assert shared_prefix_length([first, swapped]) >= first.spans["query"][1]  # both orders share the query


def test_left_pad_offsets():
    batch, offsets = left_pad([[5, 6, 7], [8]], pad_id=0)
    assert offsets == [0, 2]
    assert batch.input_ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert batch.attention_mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert batch.position_ids.tolist() == [[0, 1, 2], [0, 0, 0]]


def test_wrap_model_takes_the_users_object_as_load_model_would(tiny_llama_dir, tiny_llama):
    """A model the user already holds (here: built from a config, random weights) judges exactly as the same
    weights loaded by `load_model`, and stays the same object, with its placement read from its weights."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    from interp.core.models import wrap_model

    hf_model = LlamaForCausalLM.from_pretrained(tiny_llama_dir, attn_implementation="eager")
    hf_model.train()
    wrapped = wrap_model(hf_model, AutoTokenizer.from_pretrained(tiny_llama_dir), name="mine")
    assert wrapped.hf_model is hf_model and not hf_model.training
    assert (wrapped.placement.device, wrapped.placement.dtype) == ("cpu", "float32")
    assert (wrapped.kind, wrapped.n_layers, wrapped.n_heads) == (
        tiny_llama.kind,
        tiny_llama.n_layers,
        tiny_llama.n_heads,
    )
    prompts = [build_judge_prompt(tiny_llama, "helpfulness", "What is 2+2?", "It is 4.", "Five.")]
    ours, theirs = (
        judge_batch(make_backend(m, "hf"), prompts, label_tokens(m.tokenizer)) for m in (wrapped, tiny_llama)
    )
    assert ours[0].probs == theirs[0].probs and torch.equal(ours[0].mass, theirs[0].mass)
    bf16 = wrap_model(hf_model.to(torch.bfloat16), wrapped.tokenizer, name="mine")
    assert bf16.placement.dtype == "bfloat16"
