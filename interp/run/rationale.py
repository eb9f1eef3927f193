"""A judge's rationale before its verdict: generated greedily from the judge prompt, then the prompt, the rationale
and a verdict cue are read in one forward pass (label probabilities and span attention at the verdict position).

Used by judge-side chain of thought (Chen et al. 2025 section 5: the judge reasons, then ends with "My final
verdict is ...") and by SALIERI's pointwise prompt ("Feedback: ... [RESULT] n"). Generation stops at the cue
(or at `max_new_tokens`); the rationale is the text before it. The verdict prompt is the judge prompt, then the
rationale as a slot named `rationale` (its token span is known, so its attention is read like an answer's),
then the cue, after which the next token is the label. Greedy decoding writes the label the judge puts most
probability on, so the verdict read is the one its own generation would have parsed.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from interp.core.backends import left_pad
from interp.core.models import LoadedModel, attention_implementation
from interp.core.prompts import Prompt
from interp.core.spans import encode_prompt
from interp.core.threads import rebalance_threads

RATIONALE_SLOT = "rationale"


def cut_at_cue(text: str, cue: str) -> str:
    """The rationale: generated text before the first `cue` (all of it when the cue never came), stripped."""
    return text.split(cue)[0].strip()


def generate_rationales(
    model: LoadedModel, prompts: Sequence[Prompt], *, cue: str, max_new_tokens: int, batch_size: int
) -> list[str]:
    """Greedy continuations of `prompts`, each cut at `cue` (`cut_at_cue`), in the prompts' order."""
    tokenizer = model.tokenizer
    out: list[str] = [""] * len(prompts)
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i].text))
    for start in range(0, len(order), batch_size):
        rebalance_threads()
        chunk = order[start : start + batch_size]
        batch = left_pad([encode_prompt(tokenizer, prompts[i]) for i in chunk], tokenizer.pad_token_id)[0].to(
            model.device
        )
        with torch.inference_mode(), attention_implementation(model.hf_model, "sdpa"):
            ids = model.hf_model.generate(
                input_ids=batch.input_ids,
                attention_mask=batch.attention_mask,
                max_new_tokens=max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
                do_sample=False,
                stop_strings=[cue],
                tokenizer=tokenizer,
            )
        for row, index in enumerate(chunk):
            new = [t for t in ids[row, batch.input_ids.shape[1] :].tolist() if t != tokenizer.pad_token_id]
            out[index] = cut_at_cue(tokenizer.decode(new, skip_special_tokens=True), cue)
    return out


def with_rationale(prompt: Prompt, rationale: str, cue: str, separator: str = " ") -> Prompt:
    """The verdict prompt: `prompt`, the rationale (slot `rationale`), `separator` and the cue (the next token is
    the verdict). The generation began right after `prompt`, so the rationale follows it directly."""
    start = len(prompt.text)
    text = f"{prompt.text}{rationale}{separator}{cue}"
    spans = dict(prompt.char_spans) | {RATIONALE_SLOT: (start, start + len(rationale))}
    return Prompt(text, spans, add_special_tokens=prompt.add_special_tokens, style=prompt.style)
