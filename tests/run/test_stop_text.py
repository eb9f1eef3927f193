"""Few-shot stop: a row stops at the first step its new text holds the stop string, never on the prompt's."""

from __future__ import annotations

import torch

from interp.core.prompts import FEWSHOT_STOP
from interp.data import Item
from interp.run.responses import Decoding, generate_responses
from interp.run.stop_text import StopText


def test_each_row_stops_on_its_own_new_text(smollm2_tokenizer):
    tok = smollm2_tokenizer
    prompt = tok.encode("# Query\nSay hi.\n# Answer\n")  # the prompt holds the stop string: it must not count
    rows = ["Hello there.", "Hello.\n# Query\nNext", "Hi\n#no space"]
    encoded = [prompt + tok.encode(text) for text in rows]
    width = max(map(len, encoded))
    ids = torch.tensor([row + [tok.pad_token_id or 0] * (width - len(row)) for row in encoded])
    stop = StopText(tok, [FEWSHOT_STOP], len(prompt))
    assert stop(ids, torch.zeros(len(rows), 10)).tolist() == [False, True, False]
    # the step before the stop string was complete, the second row ran on
    short = torch.tensor([prompt + tok.encode("Hello.")] * 3)
    assert stop(short, torch.zeros(3, 10)).tolist() == [False, False, False]


def test_greedy_answers_do_not_depend_on_the_generation_batch(tiny_llama, tmp_path, monkeypatch):
    items = [Item(f"h{k}", "helpfulness", f"Tell me about item {k}{' in detail' * k}.") for k in range(5)]
    texts = []
    for size in (1, 5):
        monkeypatch.setenv("INTERP_CACHE", str(tmp_path / f"cache{size}"))
        decoding = Decoding(max_words=12, max_new_tokens=12, batch_size=size)
        texts.append(
            [(r.text, r.n_new_tokens) for r in generate_responses(tiny_llama, items, decoding, progress=False)]
        )
    assert texts[0] == texts[1]
