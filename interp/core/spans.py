"""Character spans of an assembled prompt -> token spans, through the tokenizer's offset mapping, and the
one tokenized judge prompt every judging path uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from interp.core.prompts import Prompt, judge_prompt
from interp.errors import InterpError


@dataclass(frozen=True)
class TokenizedPrompt:
    """A prompt's input ids, each named slot's token span (end exclusive) and its text."""

    input_ids: list[int]
    spans: dict[str, tuple[int, int]]  # token indices, end exclusive; an empty response gives start == end
    text: str

    def __len__(self) -> int:
        return len(self.input_ids)


def char_to_token_span(offsets: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """Tokens whose characters overlap [start, end). A boundary token shared with the template is included.

    Zero-width tokens (a BOS the tokenizer added) never belong to a span. An empty response gives the empty
    span at the first token after its position.
    """
    real = [(i, s, e) for i, (s, e) in enumerate(offsets) if e > s]
    if start == end:
        position = next((i for i, s, _ in real if s >= start), len(offsets))
        return position, position
    inside = [i for i, s, e in real if e > start and s < end]
    if not inside:
        raise InterpError(f"character span [{start}, {end}) maps to no token")
    return inside[0], inside[-1] + 1


def check_fits_context(
    n_tokens: int, context_length: int | None, what: str = "prompt", hint: str = "shorten the query or responses"
) -> None:
    """The one context-length check (judging, inspect, generation): `n_tokens` must fit the model's context."""
    if context_length and n_tokens > context_length:
        raise InterpError(f"{what} has {n_tokens} tokens but the model's context is {context_length}; {hint}")


def _prompt_parts(prompt: Prompt) -> list[tuple[int, int, bool]]:
    """(start, end, in a slot) of each part of the text, cut at every slot boundary."""
    cuts = sorted({0, len(prompt.text)} | {i for span in prompt.char_spans.values() for i in span})
    slots = prompt.char_spans.values()
    return [
        (start, end, any(s <= start and end <= e for s, e in slots)) for start, end in zip(cuts, cuts[1:], strict=False)
    ]


def _encode_part(tokenizer, prompt: Prompt, start: int, end: int, in_slot: bool, first: bool, **kwargs):
    """One part's encoding. A slot holds user text (query, response, reference): its chat-control strings
    ("<|im_end|>", "<start_of_turn>", "<bos>") must stay text, or the text could close its turn and forge
    another, so special tokens are split there. Template parts keep their special tokens.

    `split_special_tokens` splits every added token in a slow tokenizer but only the special ones in a fast
    tokenizer; both packaged models mark all their chat-control tokens special.
    """
    text, add_special_tokens = prompt.text[start:end], prompt.add_special_tokens and first
    return tokenizer(text, add_special_tokens=add_special_tokens, split_special_tokens=in_slot, **kwargs)


def tokenize_prompt(tokenizer, prompt: Prompt, *, max_length: int | None = None) -> TokenizedPrompt:
    """Tokenize part by part, cutting at every slot boundary, so no token straddles a response edge.

    (Some vocabularies merge a response's last character with the template after it, e.g. Gemma's ".</".)
    Slot text is encoded with special tokens split (see `_encode_part`). Offsets still come from each part's
    offset mapping, shifted to the whole prompt.
    """
    ids: list[int] = []
    offsets: list[tuple[int, int]] = []
    for index, (start, end, in_slot) in enumerate(_prompt_parts(prompt)):
        encoding = _encode_part(tokenizer, prompt, start, end, in_slot, index == 0, return_offsets_mapping=True)
        ids += encoding["input_ids"]
        offsets += [(s + start, e + start) if e > s else (s, e) for s, e in encoding["offset_mapping"]]
    check_fits_context(len(ids), max_length)
    spans = {slot: char_to_token_span(offsets, start, end) for slot, (start, end) in prompt.char_spans.items()}
    return TokenizedPrompt(ids, spans, prompt.text)


def encode_prompt(tokenizer, prompt: Prompt) -> list[int]:
    """The ids of `tokenize_prompt(tokenizer, prompt).input_ids`, without offsets, so a slow tokenizer works too:
    the one encoding of a prompt with user text in it (generation prompts included), slots encoded as text."""
    ids: list[int] = []
    for index, (start, end, in_slot) in enumerate(_prompt_parts(prompt)):
        ids += _encode_part(tokenizer, prompt, start, end, in_slot, index == 0)["input_ids"]
    return ids


def tokenized_judge_prompt(
    model, task: str, query: str, response_a: str, response_b: str, *, ties: bool = False
) -> TokenizedPrompt:
    """The judge prompt for this model's kind, tokenized, with token spans; checks it fits the context. With
    `ties`, Chen et al.'s three-way A/T/B prompt (`interp.core.prompts.judge_prompt`).

    >>> prompt = interp.tokenized_judge_prompt(model, "helpfulness", "What is 2 + 2?", "4", "5")
    >>> sorted(prompt.spans)
    ['a', 'b', 'query']

    The one way every judging path (runs, gold model judges, attention maps, steering) builds a prompt, so
    their token positions agree. Empty responses are allowed (they give empty spans).
    """
    prompt = judge_prompt(model.tokenizer, task, query, response_a, response_b, kind=model.kind, ties=ties)
    return tokenize_prompt(model.tokenizer, prompt, max_length=model.context_length or None)


def build_judge_prompt(model, task: str, query: str, response_a: str, response_b: str) -> TokenizedPrompt:
    """`tokenized_judge_prompt` for text typed by a user: every part must be non-empty.

    >>> prompt = interp.build_judge_prompt(model, "helpfulness", "What is 2 + 2?", "4", "5")
    >>> start, end = prompt.spans["a"]
    >>> model.tokenizer.decode(prompt.input_ids[start:end]).strip()
    '4'
    """
    for slot, text in (("query", query), ("response A", response_a), ("response B", response_b)):
        if not text.strip():
            raise InterpError(f"{slot} is empty; pass non-empty text")
    return tokenized_judge_prompt(model, task, query, response_a, response_b)


def token_labels(tokenizer, input_ids: Sequence[int]) -> list[str]:
    """One label per token, its own decoded text (what a figure or table of per-token values shows)."""
    return [tokenizer.decode([token]) for token in input_ids]
