"""Generation: greedy keys unchanged by the sampling settings; seeded sampling that does not depend on the cache."""

from __future__ import annotations

import shutil

from interp.data import Item
from interp.run.responses import Decoding, _cache_key, generate_responses, response_cache_path

ITEMS = [Item(f"h{k}", "helpfulness", f"Say something about topic number {k}{' at length' * k}.") for k in range(5)]


def test_sampled_answers_are_seeded_and_the_same_whatever_the_cache_held(tiny_llama, tmp_path, monkeypatch):
    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    greedy = Decoding(max_words=12, max_new_tokens=12, batch_size=2)
    sampled = Decoding(max_words=12, max_new_tokens=12, batch_size=2, temperature=1.0, seed=7)
    first = [r.text for r in generate_responses(tiny_llama, ITEMS, sampled, progress=False)]
    assert first != [r.text for r in generate_responses(tiny_llama, ITEMS, greedy, progress=False)]
    assert first != [
        r.text for r in generate_responses(tiny_llama, ITEMS, Decoding(12, 12, 2, 1.0, seed=8), progress=False)
    ]
    # lose part of the cache (one answer of a batch, a whole batch): the regenerated answers are the same
    keys = [r.cache_key for r in generate_responses(tiny_llama, ITEMS, sampled, progress=False)]
    for key in keys[1:4]:
        response_cache_path(key).unlink()
    assert [r.text for r in generate_responses(tiny_llama, ITEMS, sampled, progress=False)] == first
    shutil.rmtree(tmp_path / "cache")
    assert [r.text for r in generate_responses(tiny_llama, ITEMS[::-1], sampled, progress=False)] == first[::-1]
    # another item list makes other batches (by length, two a batch): h0 and h1 keep theirs and their keys, h2
    # is now alone in its batch, so it gets its own key instead of the answer drawn beside h3
    again = generate_responses(tiny_llama, ITEMS[:3], sampled, progress=False)
    assert [r.cache_key for r in again[:2]] == keys[:2] and again[2].cache_key not in keys


def test_greedy_cache_keys_leave_out_the_sampling_settings(tiny_llama):
    prompt = "a prompt"
    assert _cache_key(tiny_llama.fingerprint(), prompt, Decoding()) == _cache_key(
        tiny_llama.fingerprint(), prompt, Decoding(seed=3)
    )
    assert _cache_key(tiny_llama.fingerprint(), prompt, Decoding(temperature=0.7)) != _cache_key(
        tiny_llama.fingerprint(), prompt, Decoding()
    )
    assert _cache_key(tiny_llama.fingerprint(), prompt, Decoding(temperature=0.7)) != _cache_key(
        tiny_llama.fingerprint(), prompt, Decoding(temperature=0.7, seed=1)
    )
