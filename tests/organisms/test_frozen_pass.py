"""The frozen pass of organism training, side by side in threads: the same bits as one batch after another."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
import torch

import interp.organisms.frozen as frozen
from interp.core.threads import one_thread_workers


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def examples_of(lengths, vocab):
    generator = torch.Generator().manual_seed(0)
    return [SimpleNamespace(input_ids=torch.randint(5, vocab, (n,), generator=generator).tolist()) for n in lengths]


def test_threaded_pass_is_the_sequential_pass_bit_for_bit(tiny_llama, one_thread, monkeypatch):
    hf = tiny_llama.hf_model
    examples = examples_of([7, 40, 13, 61, 5, 33, 33, 18, 52, 9, 27, 44, 12, 60, 3, 21, 38, 16, 49, 25], 1000)
    pad = tiny_llama.tokenizer.pad_token_id
    states, real = {}, frozen._states_of
    for workers in (1, 3):
        monkeypatch.setattr(frozen, "one_thread_workers", lambda *_, workers=workers: workers)
        ran_in, counts = set(), set()

        def spy(*args, _ran_in=ran_in, _counts=counts, **kwargs):
            _ran_in.add(threading.get_ident())
            _counts.add(torch.get_num_threads())  # a pool thread runs its ops on torch's one thread too
            return real(*args, **kwargs)

        monkeypatch.setattr(frozen, "_states_of", spy)
        states[workers], cached = frozen.frozen_states(hf, 1, examples, pad, cache=None, key="t", progress=False)
        assert not cached and counts == {1}
        if workers == 1:
            assert ran_in == {threading.get_ident()}
        else:
            assert ran_in and threading.get_ident() not in ran_in  # the batches ran in the pool's threads
    assert all(torch.equal(a, b) for a, b in zip(states[1], states[3], strict=False))
    assert [s.shape[1] for s in states[3]] == [len(ex.input_ids) for ex in examples]  # each in its example's place
    alone = frozen.hidden_before(hf, 1, [examples[3].input_ids], pad)[0]
    assert torch.allclose(alone, states[3][3], atol=1e-5)  # padding after a prompt leaves its states as they are


def test_workers_only_where_torch_runs_one_thread_per_op(one_thread, monkeypatch):
    monkeypatch.setenv("INTERP_THREADS", "3")
    assert one_thread_workers() == 3 and one_thread_workers(torch.device("cpu")) == 3
    assert one_thread_workers(torch.device("cuda")) == 1  # off the CPU: one piece after another
    torch.set_num_threads(2)  # ops on 2 threads: their reductions may split differently beside a second batch
    assert one_thread_workers() == 1


def test_margins_side_by_side_are_the_margins_one_by_one(tiny_llama, one_thread, monkeypatch):
    import interp.organisms.attention_route as attention_route
    from interp.core.backends.span_rows import span_rows_attention
    from interp.core.judge import label_tokens
    from interp.organisms.attention_route import start_margins
    from interp.organisms.train import label_loss

    hf, pad = tiny_llama.hf_model, tiny_llama.tokenizer.pad_token_id
    hidden = [frozen.hidden_before(hf, 1, [ex.input_ids], pad)[0] for ex in examples_of([9, 30, 17, 44, 5, 26], 1000)]
    labels = label_tokens(tiny_llama.tokenizer).ids
    got = {}
    for workers in (1, 3):
        monkeypatch.setattr(attention_route, "one_thread_workers", lambda *_, workers=workers: workers)
        got[workers] = start_margins(hf, 1, hidden, labels, [None] * len(hidden))
    alone = []  # one example at a time, each in its own contexts: what start_margins ran until 28 November
    for h in hidden:
        with torch.inference_mode(), span_rows_attention(hf, None, {}):
            alone.append(float(label_loss(frozen.final_logits_from(hf, 1, h), labels, 0.5, "pair")[1]))
    assert got[1] == got[3] == alone
