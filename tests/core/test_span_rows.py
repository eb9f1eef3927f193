"""SDPA with exact attention rows (interp.core.backends.span_rows) against eager attention computed in the test.

Every reference is the same model run with eager attention and `output_attentions=True`; an intervention
bias is added in the reference by wrapping the family's own `eager_attention_forward` for that pass (so the
reference shares no code with span_rows). Tiny random models of six families cover grouped-query
heads, Qwen3's q/k norms, Mistral's sliding window, Gemma-3's sliding/global layers and Gemma-2's logit
softcapping; the windows are shorter than the prompts. Batches are left-padded with rows of different
lengths. The packaged models are marked slow.
"""

from __future__ import annotations

import contextlib
import functools
import sys

import pytest
import torch

from interp.core.attention import span_reducer
from interp.core.backends import Edits, left_pad
from interp.core.backends.hf import HFBackend
from interp.core.backends.span_rows import ALL_ROWS, IMPLEMENTATION, span_rows_attention
from interp.core.models import LoadedModel

ROWS_TOL = 1e-5
LOGITS_TOL = 1e-4
VOCAB = 256
WINDOW = 12  # shorter than every prompt below
LENGTHS = (40, 33, 25)  # left-padded to 40
SHAPE = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=128,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=512,
    initializer_range=0.2,  # far from uniform attention
    attn_implementation="eager",
)


def _config(family: str):
    import transformers as tf

    if family == "llama":
        return tf.LlamaConfig(num_hidden_layers=2, **SHAPE)
    if family == "qwen2":
        return tf.Qwen2Config(num_hidden_layers=2, **SHAPE)
    if family == "qwen3":
        return tf.Qwen3Config(num_hidden_layers=2, **SHAPE)
    if family == "mistral":
        return tf.MistralConfig(num_hidden_layers=2, sliding_window=WINDOW, **SHAPE)
    layers = dict(num_hidden_layers=3, layer_types=["sliding_attention", "full_attention", "sliding_attention"])
    if family == "gemma3":
        return tf.Gemma3TextConfig(sliding_window=WINDOW, query_pre_attn_scalar=16, **layers, **SHAPE)
    if family == "gemma2":
        return tf.Gemma2Config(
            sliding_window=WINDOW,
            query_pre_attn_scalar=16,
            attn_logit_softcapping=2.0,
            final_logit_softcapping=None,
            **layers,
            **SHAPE,
        )
    raise ValueError(family)


FAMILIES = ("llama", "qwen2", "qwen3", "mistral", "gemma3", "gemma2")


@functools.cache
def tiny(family: str) -> torch.nn.Module:
    import transformers as tf

    config = _config(family)
    classes = {
        "llama": tf.LlamaForCausalLM,
        "qwen2": tf.Qwen2ForCausalLM,
        "qwen3": tf.Qwen3ForCausalLM,
        "mistral": tf.MistralForCausalLM,
        "gemma3": tf.Gemma3ForCausalLM,
        "gemma2": tf.Gemma2ForCausalLM,
    }
    torch.manual_seed(FAMILIES.index(family))
    model = classes[family](config).eval()
    assert model.config._attn_implementation == "eager"
    return model


def n_layers(model) -> int:
    return model.config.get_text_config().num_hidden_layers


def left_padded_inputs(lengths=LENGTHS, seed: int = 0, vocab: int = VOCAB) -> dict:
    generator = torch.Generator().manual_seed(seed)
    sequences = [torch.randint(1, vocab, (n,), generator=generator).tolist() for n in lengths]
    batch, _ = left_pad(sequences, pad_id=0)
    return dict(input_ids=batch.input_ids, attention_mask=batch.attention_mask, position_ids=batch.position_ids)


def make_bias(model, rows: int, queries: int, keys: int, seed: int = 1, minus_inf=(18, 22)) -> dict[int, torch.Tensor]:
    """A nonzero bias on the first layer (shared by heads) and the last (per head, some keys at -inf)."""
    generator = torch.Generator().manual_seed(seed)
    heads = model.config.get_text_config().num_attention_heads
    first = torch.randn(rows, 1, queries, keys, generator=generator)
    last = torch.randn(rows, heads, queries, keys, generator=generator)
    last[:, :, :, minus_inf[0] : minus_inf[1]] = float("-inf")
    return {0: first, n_layers(model) - 1: last}


@contextlib.contextmanager
def eager_with_bias(model, bias: dict | None):
    """The family's eager attention with `bias[layer]` added to its additive mask, for the reference pass."""
    family = sys.modules[type(model.model.layers[0].self_attn).__module__]
    eager = family.eager_attention_forward

    def biased(module, query, key, value, attention_mask, **kwargs):
        layer_bias = (bias or {}).get(module.layer_idx)
        if layer_bias is not None:
            attention_mask = attention_mask + layer_bias
        return eager(module, query, key, value, attention_mask, **kwargs)

    family.eager_attention_forward = biased
    try:
        yield
    finally:
        family.eager_attention_forward = eager


def eager_reference(model, bias=None, **inputs):
    with torch.no_grad(), eager_with_bias(model, bias):
        out = model(**inputs, output_attentions=True)
    assert len(out.attentions) == n_layers(model)
    return [a.float() for a in out.attentions], out.logits[:, -1].float(), out


def captured(model, rows, bias=None, *, eager=False, **inputs):
    """One pass inside span_rows_attention; every layer's output[1] as its forward hook received it."""
    seen: dict[int, torch.Tensor | None] = {}
    modules = [layer.self_attn for layer in model.model.layers]
    handles = [
        m.register_forward_hook(lambda _m, _i, out, i=i: seen.__setitem__(i, out[1])) for i, m in enumerate(modules)
    ]
    try:
        with torch.no_grad(), span_rows_attention(model, rows, bias, eager=eager):
            assert model.config._attn_implementation == IMPLEMENTATION
            out = model(**inputs)
    finally:
        for handle in handles:
            handle.remove()
    assert model.config._attn_implementation == "eager"
    assert not any(hasattr(m, "_interp_span_rows") for m in modules)
    return seen, out.logits[:, -1].float(), out


def max_diff(a, b) -> float:
    assert a.shape == b.shape, f"{tuple(a.shape)} != {tuple(b.shape)}"
    finite = torch.isfinite(b)
    assert torch.equal(finite, torch.isfinite(a))
    return (a[finite] - b[finite]).abs().max().item()


def assert_rows_match(seen, reference, m: int, what: str) -> float:
    worst = 0.0
    for layer, expected in enumerate(reference):
        rows = seen[layer]
        assert rows.dtype == torch.float32
        diff = max_diff(rows, expected[:, :, -m:])
        assert diff <= ROWS_TOL, f"{what} layer {layer}: rows differ from eager by {diff:.3g}"
        worst = max(worst, diff)
    return worst


# ---- tiny models, plain left-padded pass -------------------------------------------------------------


@pytest.mark.parametrize("with_bias", [False, True], ids=["plain", "bias"])
@pytest.mark.parametrize("m", [1, 7])
@pytest.mark.parametrize("family", FAMILIES)
def test_rows_and_logits_equal_eager(family, m, with_bias):
    model = tiny(family)
    inputs = left_padded_inputs()
    width = inputs["input_ids"].shape[1]
    bias = make_bias(model, len(LENGTHS), width, width) if with_bias else None
    reference, reference_logits, _ = eager_reference(model, bias, **inputs)
    seen, logits, _ = captured(model, m, bias, **inputs)
    worst = assert_rows_match(seen, reference, m, family)
    assert max_diff(logits, reference_logits) <= LOGITS_TOL
    print(f"{family} m={m} bias={with_bias}: rows {worst:.2e}, logits {max_diff(logits, reference_logits):.2e}")
    if with_bias:  # the bias reached both the rows and the output
        unbiased, unbiased_logits, _ = eager_reference(model, None, **inputs)
        assert (unbiased[-1][:, :, -m:] - seen[n_layers(model) - 1]).abs().max() > 1e-3
        assert (unbiased_logits - logits).abs().max() > 1e-4
        assert torch.all(seen[n_layers(model) - 1][:, :, :, 18:22] == 0)


@pytest.mark.parametrize("family", ["mistral", "gemma3"])
def test_sliding_window_rows_see_only_the_window(family):
    model = tiny(family)
    inputs = left_padded_inputs()
    seen, _, _ = captured(model, 1, None, **inputs)
    sliding = seen[0][:, :, -1]  # layer 0 slides in both
    width = inputs["input_ids"].shape[1]
    assert torch.all(sliding[..., : width - WINDOW] == 0) and torch.all(sliding[..., width - WINDOW :] > 0)


@pytest.mark.parametrize("family", ["llama", "gemma2"])
def test_no_rows_gives_the_fast_output_and_no_weights(family):
    model = tiny(family)
    inputs = left_padded_inputs()
    width = inputs["input_ids"].shape[1]
    bias = make_bias(model, len(LENGTHS), width, width)
    for layer_bias in (None, bias):
        _, reference_logits, _ = eager_reference(model, layer_bias, **inputs)
        seen, logits, _ = captured(model, None, layer_bias, **inputs)
        assert all(w is None for w in seen.values())
        assert max_diff(logits, reference_logits) <= LOGITS_TOL


@pytest.mark.parametrize("family", ["llama", "gemma2", "gemma3"])
def test_all_rows_and_the_eager_mode(family):
    """rows >= query length gives the whole pattern (eager rows) beside the SDPA output, so capturing patterns
    does not change the logits; eager=True (the backends' reference mode) is the family's eager attention."""
    model = tiny(family)
    inputs = left_padded_inputs()
    width = inputs["input_ids"].shape[1]
    for layer_bias in (None, make_bias(model, len(LENGTHS), width, width)):
        reference, reference_logits, _ = eager_reference(model, layer_bias, **inputs)
        _, fast_logits, _ = captured(model, None, layer_bias, **inputs)
        seen, logits, _ = captured(model, ALL_ROWS, layer_bias, **inputs)
        assert torch.equal(logits, fast_logits)
        assert all(max_diff(seen[i], reference[i]) <= ROWS_TOL for i in range(n_layers(model)))
        seen, logits, _ = captured(model, ALL_ROWS, layer_bias, eager=True, **inputs)
        assert max_diff(logits, reference_logits) <= 1e-6
        assert all(max_diff(seen[i], reference[i]) <= 1e-7 for i in range(n_layers(model)))


def test_unpadded_batch_still_gets_rows():
    """A batch without padding is where transformers' sdpa mask would be skipped (is_causal)."""
    model = tiny("llama")
    inputs = left_padded_inputs(lengths=(30, 30))
    reference, reference_logits, _ = eager_reference(model, None, **inputs)
    seen, logits, _ = captured(model, 3, None, **inputs)
    assert_rows_match(seen, reference, 3, "unpadded")
    assert max_diff(logits, reference_logits) <= LOGITS_TOL


def test_restores_the_model_after_an_error():
    model = tiny("qwen3")
    with pytest.raises(RuntimeError, match="boom"), span_rows_attention(model, 2, {1: torch.zeros(1, 1, 1, 1)}):
        raise RuntimeError("boom")
    assert model.config._attn_implementation == "eager"
    assert not any(hasattr(layer.self_attn, "_interp_span_rows") for layer in model.model.layers)
    with pytest.raises(ValueError, match="positive"), span_rows_attention(model, 0, None):
        pass
    with pytest.raises(ValueError, match="layers"), span_rows_attention(model, 1, {5: torch.zeros(1)}):
        pass
    assert model.config._attn_implementation == "eager"


# ---- tiny models, prefix cache then suffix pass ------------------------------------------------------

PREFIX = 10
SUFFIXES = (20, 14, 9)


def prefix_then_suffix(model, run):
    """The shared-prefix layout: a batch-1 prefix pass into a DynamicCache, repeated over the rows, then the
    suffix pass with [prefix][pads][suffix] as its attention mask. `run(bias, **inputs)` runs one pass."""
    from transformers import DynamicCache

    generator = torch.Generator().manual_seed(3)
    prefix = torch.randint(1, VOCAB, (1, PREFIX), generator=generator)
    rows, width = len(SUFFIXES), max(SUFFIXES)
    suffix_ids = torch.zeros(rows, width, dtype=torch.long)
    mask = torch.ones(rows, PREFIX + width, dtype=torch.long)
    for row, n in enumerate(SUFFIXES):
        suffix_ids[row, width - n :] = torch.randint(1, VOCAB, (n,), generator=generator)
        mask[row, PREFIX : PREFIX + width - n] = 0
    cache = DynamicCache(config=model.config)
    run(None, input_ids=prefix, past_key_values=cache, use_cache=True)
    cache.batch_repeat_interleave(rows)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, PREFIX:]
    return dict(
        input_ids=suffix_ids, attention_mask=mask, position_ids=positions, past_key_values=cache, use_cache=True
    )


@pytest.mark.parametrize("m", [1, 5])
@pytest.mark.parametrize("family", FAMILIES)
def test_prefix_cache_suffix_pass_rows_equal_eager(family, m):
    model = tiny(family)
    queries, keys = max(SUFFIXES), PREFIX + max(SUFFIXES)
    # A sliding layer's cache keeps its last WINDOW - 1 keys: with a shorter prefix, every layer's keys are
    # the batch's columns and a bias can be given in them (the window itself still cuts the suffix pass).
    assert PREFIX < WINDOW - 1 < queries
    bias = make_bias(model, len(SUFFIXES), queries, keys, minus_inf=(3, 6))
    reference_inputs = prefix_then_suffix(model, lambda b, **inputs: eager_reference(model, b, **inputs))
    reference, reference_logits, _ = eager_reference(model, bias, **reference_inputs)
    inputs = prefix_then_suffix(model, lambda b, **inputs: captured(model, None, b, **inputs))
    seen, logits, _ = captured(model, m, bias, **inputs)
    assert seen[0].shape[2] == m and reference[0].shape[2] == queries
    worst = assert_rows_match(seen, reference, m, f"{family} suffix pass")
    assert max_diff(logits, reference_logits) <= LOGITS_TOL
    print(f"{family} suffix m={m}: rows {worst:.2e}, logits {max_diff(logits, reference_logits):.2e}")


# ---- the opt-in backend hook-up ----------------------------------------------------------------------


def loaded(model) -> LoadedModel:
    config = model.config.get_text_config()
    return LoadedModel("tiny", model, None, "pre", "test", config.num_hidden_layers, config.num_attention_heads, 512)


@pytest.mark.parametrize("shared", [0, PREFIX])
@pytest.mark.parametrize("readout", ["final", "after"])
@pytest.mark.parametrize("family", ["llama", "qwen3"])
def test_backend_sdpa_reduces_like_eager(family, readout, shared):
    model = loaded(tiny(family))
    generator = torch.Generator().manual_seed(5)
    prefix = torch.randint(1, VOCAB, (PREFIX,), generator=generator).tolist()
    sequences = [prefix + torch.randint(1, VOCAB, (n,), generator=generator).tolist() for n in SUFFIXES]
    batch, offsets = left_pad(sequences, 0)
    width = batch.input_ids.shape[1]
    spans = [{"a": (off + PREFIX, off + PREFIX + 3), "b": (off + PREFIX + 4, off + PREFIX + 7)} for off in offsets]
    bias = make_bias(model.hf_model, len(sequences), width, width, minus_inf=(width - 2, width - 1))
    bias[0] = torch.zeros_like(bias[0])  # the shared path needs the prefix unbiased
    bias[1][:, :, :, : PREFIX + max(offsets)] = 0
    results = {}
    for attention in ("eager", "sdpa"):
        reducer = span_reducer(spans, width, model.n_layers, model.n_heads, readout=readout)
        backend = HFBackend(model, attn_implementation=attention)
        logits = backend.forward(batch, edits=Edits(score_bias=bias or {}), on_pattern=reducer, shared_prefix=shared)
        results[attention] = (logits, reducer.stacked())
        assert model.hf_model.config._attn_implementation == "eager"
    expected_rows = 1 if readout == "final" else width - min(off + PREFIX + 7 for off in offsets)
    assert span_reducer(spans, width, 1, 1, readout=readout).rows_read == expected_rows
    assert max_diff(results["sdpa"][0], results["eager"][0]) <= LOGITS_TOL
    assert max_diff(results["sdpa"][1], results["eager"][1]) <= ROWS_TOL
    assert results["eager"][1].abs().sum() > 0


def test_backend_rejects_unknown_attention():
    from interp.core.backends import make_backend
    from interp.errors import InterpError

    with pytest.raises(InterpError, match="unknown attn_implementation 'flash'"):
        make_backend(loaded(tiny("llama")), "hf", attn_implementation="flash")


# ---- packaged models (slow) ---------------------------------------------------------------------------

SENTENCES = (
    "The judge reads two answers to the same question and decides which one is better. ",
    "Answer A explains the steps in order and checks the result at the end. ",
    "Answer B is shorter, skips the check, and states the result with confidence. ",
    "Both answers mention the same formula, but only one applies it correctly. ",
)


def real_inputs(model: LoadedModel, words=(60, 110, 160)) -> dict:
    sequences = []
    for row, n in enumerate(words):
        text = " ".join(" ".join(SENTENCES[(row + i) % 4] for i in range(12)).split()[:n])
        sequences.append(model.tokenizer.encode(text))
    batch, _ = left_pad(sequences, model.tokenizer.pad_token_id)
    assert 100 <= batch.input_ids.shape[1] <= 300 and len(set(map(len, sequences))) == 3
    return dict(input_ids=batch.input_ids, attention_mask=batch.attention_mask, position_ids=batch.position_ids)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["smollm2", "gemma3"])
def test_packaged_model_rows_equal_eager(request, name):
    model: LoadedModel = request.getfixturevalue(name)
    hf_model = model.hf_model
    inputs = real_inputs(model)
    width = inputs["input_ids"].shape[1]
    bias = make_bias(hf_model, 3, width, width, minus_inf=(width - 40, width - 30))
    bias = {0: bias[0], model.n_layers // 2: bias[model.n_layers - 1]}
    for layer_bias in (None, bias):
        reference, reference_logits, _ = eager_reference(hf_model, layer_bias, **inputs)
        for m in (1, 8):
            seen, logits, _ = captured(hf_model, m, layer_bias, **inputs)
            worst = assert_rows_match(seen, reference, m, name)
            diff = max_diff(logits, reference_logits)
            print(f"{name} tokens={width} m={m} bias={layer_bias is not None}: rows {worst:.2e}, logits {diff:.2e}")
            assert diff <= LOGITS_TOL
