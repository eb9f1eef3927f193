"""Greedy decoding that lets finished rows go gives `generate`'s tokens, token for token, on tiny Llama and Gemma-3
models (a sliding-window layer included): left-padded batches, rows that end early on an end-of-sequence id or a
stop string, and rows that run to the cap."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import StoppingCriteriaList

from interp.core.backends import left_pad
from interp.run.greedy import greedy_generate, supports_greedy_pruning
from interp.run.stop_text import StopText

LENGTHS = (5, 11, 8, 14, 3)


def _batch(model, seed=0):
    generator = torch.Generator().manual_seed(seed)
    vocab = model.hf_model.config.vocab_size
    rows = [torch.randint(3, min(vocab, 5000), (n,), generator=generator).tolist() for n in LENGTHS]
    return left_pad(rows, model.tokenizer.pad_token_id)[0]


def _generate(hf_model, batch, pad, n, stopping=()):
    with torch.inference_mode():
        return hf_model.generate(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            max_new_tokens=n,
            do_sample=False,
            pad_token_id=pad,
            stopping_criteria=StoppingCriteriaList(list(stopping)),
        )


def _greedy(hf_model, batch, pad, n, **kwargs):
    with torch.inference_mode():
        return greedy_generate(
            hf_model, batch.input_ids, batch.attention_mask, max_new_tokens=n, pad_token_id=pad, **kwargs
        )


@pytest.mark.parametrize("which", ["tiny_llama", "tiny_gemma3"])
def test_greedy_decoding_gives_generates_tokens_with_rows_ending_early(which, request):
    model = request.getfixturevalue(which)
    hf_model, pad, n = copy.deepcopy(model.hf_model), model.tokenizer.pad_token_id, 12
    hf_model.generation_config.eos_token_id = None
    batch = _batch(model)
    free = _generate(hf_model, batch, pad, n)  # no row ends: every row runs to the cap
    assert torch.equal(_greedy(hf_model, batch, pad, n), free)

    new = free[:, batch.input_ids.shape[1] :]
    eos = int(new[1, 3])  # an id row 1 emits at step 4: it ends there (and any row that emits it earlier)
    assert eos != pad
    hf_model.generation_config.eos_token_id = [eos]
    expected = _generate(hf_model, batch, pad, n)
    ended = (expected[:, batch.input_ids.shape[1] :] == eos).any(dim=1)
    assert ended.any() and not ended.all()  # some rows left the batch early, others ran on
    assert torch.equal(_greedy(hf_model, batch, pad, n), expected)


def test_a_stop_string_ends_a_row_as_the_stop_criterion_does(tiny_llama):
    hf_model, tokenizer, pad, n = (
        copy.deepcopy(tiny_llama.hf_model),
        tiny_llama.tokenizer,
        tiny_llama.tokenizer.pad_token_id,
        10,
    )
    batch = _batch(tiny_llama, seed=1)
    hf_model.generation_config.eos_token_id = None
    free = _generate(hf_model, batch, pad, n)
    unused = next(i for i in range(3, 5000) if not (free == i).any())
    hf_model.generation_config.eos_token_id = [unused]  # `generate` pads a stopped row only beside an EOS criterion
    text = tokenizer.decode(free[2, batch.input_ids.shape[1] :][:4].tolist(), skip_special_tokens=True)
    stop = text.rstrip()[-3:]  # row 2's new text holds it by step 4 at the latest
    assert stop.strip()
    expected = _generate(hf_model, batch, pad, n, [StopText(tokenizer, [stop], batch.input_ids.shape[1])])
    assert expected.shape[1] < free.shape[1] or not torch.equal(expected, free)
    got = _greedy(hf_model, batch, pad, n, tokenizer=tokenizer, stop_strings=[stop])
    assert torch.equal(got, expected)


def test_a_generation_config_that_processes_logits_keeps_generate(tiny_llama):
    hf_model = copy.deepcopy(tiny_llama.hf_model)
    assert supports_greedy_pruning(hf_model)
    hf_model.generation_config.repetition_penalty = 1.3
    assert not supports_greedy_pruning(hf_model)
    hf_model.generation_config.repetition_penalty = None
    hf_model.generation_config.eos_token_id = None
    assert not supports_greedy_pruning(hf_model)
