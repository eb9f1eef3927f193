"""Responses: the paper's generation prompts (Tables 4-6), greedy (or seeded sampling), batched, capped at a
word limit.

Each response is cached on disk under a key made of the model's content (its weights, generation config and
tokenizer: `interp.core.fingerprint`), the exact prompt text and the decoding settings, so a re-run (or another
run with the same weights) reuses it, and other weights under the same name or folder never do. Cache files are written
atomically (temp file + rename): an interrupted run never leaves a truncated entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Sequence

import torch
from tqdm.auto import tqdm

from interp.core.backends import left_pad
from interp.core.models import LoadedModel, attention_implementation, cache_root
from interp.core.prompts import FEWSHOT_STOP, Prompt, generation_prompt
from interp.core.spans import check_fits_context, encode_prompt
from interp.core.threads import rebalance_threads
from interp.data import Item
from interp.run.greedy import greedy_generate, supports_greedy_pruning
from interp.run.reasoning import KNOWN_MARKERS, model_markers, split_reasoning
from interp.storage import atomic_write_text


@dataclass(frozen=True)
class Decoding:
    """How answers are generated: word and token limits, batch size, and greedy or sampled (temperature, seed)."""

    max_words: int = 200
    max_new_tokens: int = 256
    batch_size: int = 8
    # 0: greedy. Above 0: sampled at this temperature, reproducible from `seed`: batches are then fixed by the
    # item list (not by what the cache holds) and a batch missing any answer is regenerated whole.
    temperature: float = 0.0
    seed: int = 0

    @property
    def sampled(self) -> bool:
        """Whether answers are sampled (a temperature above 0) rather than greedy."""
        return self.temperature > 0


def decoding_of(config) -> "Decoding":
    """A run's decoding settings (`RunConfig`: max_words, max_new_tokens, generation_batch_size)."""
    return Decoding(
        max_words=config.max_words, max_new_tokens=config.max_new_tokens, batch_size=config.generation_batch_size
    )


@dataclass(frozen=True)
class Response:
    """One generated answer: its item, author, text, token count, cache key and removed reasoning."""

    item_id: str
    model: str
    text: str
    n_new_tokens: int
    cache_key: str
    reasoning: str = ""  # the reasoning blocks removed from the answer (`interp.run.reasoning`); "" when none


def final_answer(raw: str, max_words: int, markers: Sequence[tuple[str, str]] = KNOWN_MARKERS) -> tuple[str, str]:
    """(answer, removed reasoning) of a raw answer: its reasoning blocks removed (`split_reasoning`), then capped
    at `max_words` (the cap counts the answer's words only, never the reasoning's)."""
    split = split_reasoning(raw, markers)
    return cap_words(split.answer, max_words), split.removed


def cap_words(text: str, max_words: int) -> str:
    """Cut a response to at most `max_words` whitespace-separated words (the paper's 200-word cap)."""
    words = text.split()
    if len(words) <= max_words:
        return text.strip()
    return " ".join(words[:max_words])


def clean_generation(text: str, *, fewshot: bool) -> str:
    """Few-shot continuations run on into the next '# Query' block; keep only the answer."""
    if fewshot:
        text = text.split(FEWSHOT_STOP)[0]
    return text.strip()


def _cache_key(model_fingerprint: str, prompt_text: str, decoding: Decoding) -> str:
    """An answer's key: what the model holds (`LoadedModel.fingerprint`: weights, generation config, tokenizer;
    never its name, folder or `source`), the exact prompt text and the decoding."""
    settings = asdict(decoding) | {"batch_size": None}
    if not decoding.sampled:
        del settings["temperature"], settings["seed"]
    payload = json.dumps({"model": model_fingerprint, "prompt": prompt_text, "decoding": settings}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def _batch_key(prompt_key: str, batch_keys: Sequence[str]) -> str:
    """A sampled answer's key: its prompt's key and its batch-mates' (padding and the random stream depend on them)."""
    return hashlib.sha256(json.dumps([prompt_key, list(batch_keys)]).encode()).hexdigest()[:24]


def response_cache_path(key: str) -> Path:
    """Where the cached answer of `key` is stored."""
    return cache_root() / "responses" / f"{key}.json"


def _prompts(model: LoadedModel, items: Sequence[Item], decoding: Decoding, treatment: bool = False) -> list[Prompt]:
    return [
        generation_prompt(
            model.tokenizer, item.task, item.query, kind=model.kind, words=decoding.max_words, treatment=treatment
        )
        for item in items
    ]


def _encode(tokenizer, prompt: Prompt) -> list[int]:
    """The prompt's ids, its query encoded as text (chat tokens in an instruction stay text: `encode_prompt`)."""
    return encode_prompt(tokenizer, prompt)


def check_generation_lengths(
    model: LoadedModel, items: Sequence[Item], decoding: Decoding, *, name: str | None = None, treatment: bool = False
) -> None:
    """Every generation prompt plus `max_new_tokens` fits the model's context (checked before any generation)."""
    if not model.context_length:
        return
    for item, prompt in zip(items, _prompts(model, items, decoding, treatment), strict=False):
        n_prompt = len(_encode(model.tokenizer, prompt))
        check_fits_context(
            n_prompt + decoding.max_new_tokens,
            model.context_length,
            what=f"item {item.id!r}: generation prompt + max_new_tokens ({n_prompt} + {decoding.max_new_tokens})",
            hint=f"shorten the instruction or lower max_new_tokens (model {name or model.name})",
        )


def cached_responses(
    keys: Sequence[str], model_name: str, markers: Sequence[tuple[str, str]] = KNOWN_MARKERS
) -> tuple[dict[int, Response], list[int]]:
    """The answers already in the response cache ({index: response}, named `model_name`) and the indices
    of the keys still to ask for. An entry written before reasoning was removed loses its blocks here
    (`split_reasoning` leaves an answer without them as it is)."""
    results: dict[int, Response] = {}
    todo = []
    for index, key in enumerate(keys):
        path = response_cache_path(key)
        if path.exists():
            cached = Response(**(json.loads(path.read_text()) | {"model": model_name}))
            split = split_reasoning(cached.text, markers)
            removed = "\n\n".join(part for part in (cached.reasoning, split.removed) if part)
            results[index] = replace(cached, text=split.answer, reasoning=removed)
        else:
            todo.append(index)
    return results, todo


def generate_responses(
    model: LoadedModel,
    items: Sequence[Item],
    decoding: Decoding = Decoding(),
    *,
    name: str | None = None,
    progress: bool = True,
    treatment: bool = False,
) -> list[Response]:
    """Answers of `model` to `items` (greedy, or sampled per `decoding`), reusing the on-disk cache; returns them
    in item order. `treatment`: SALIERI's degraded answers (the prompt asks for incorrect ones; its own cache keys)."""
    tokenizer = model.tokenizer
    prompts = _prompts(model, items, decoding, treatment)
    fingerprint = model.fingerprint()
    prompt_keys = [_cache_key(fingerprint, p.text, decoding) for p in prompts]
    # Sampled: batches fixed by the item list, each answer keyed by its batch-mates too (`_batch_key`).
    fixed = _length_batches(range(len(prompts)), prompts, decoding.batch_size) if decoding.sampled else []
    mates = {i: [prompt_keys[j] for j in batch] for batch in fixed for i in batch}
    keys = [_batch_key(key, mates[i]) if decoding.sampled else key for i, key in enumerate(prompt_keys)]
    markers = model_markers(tokenizer)
    results, todo = cached_responses(keys, name or model.name, markers)
    missing = set(todo)
    chunks = (
        [b for b in fixed if missing.intersection(b)]
        if decoding.sampled
        else _length_batches(todo, prompts, decoding.batch_size)
    )
    check_generation_lengths(
        model, [items[i] for chunk in chunks for i in chunk], decoding, name=name, treatment=treatment
    )
    bar = tqdm(total=len(todo), desc=f"responses {model.name}", disable=not progress or not todo, unit="item")
    stop_strings = [FEWSHOT_STOP] if model.kind == "pre" else None
    pruned = not decoding.sampled and supports_greedy_pruning(model.hf_model)  # finished rows leave the batch
    for chunk in chunks:
        rebalance_threads()  # company that came or went since the last batch
        encoded = [_encode(tokenizer, prompts[i]) for i in chunk]
        batch = left_pad(encoded, tokenizer.pad_token_id)[0].to(model.device)
        with (
            torch.inference_mode(),
            attention_implementation(model.hf_model, "sdpa"),
            _batch_rng(model, decoding, [prompt_keys[i] for i in chunk]),
        ):
            out = _generate(model, batch, decoding, stop_strings, pruned)
        new_tokens = out[:, batch.input_ids.shape[1] :]
        for row, index in enumerate(chunk):
            if index in results:  # a sampled batch regenerated for an answer it lacked; keep the cached ones
                continue
            bar.update(1)
            ids = [t for t in new_tokens[row].tolist() if t != tokenizer.pad_token_id]
            text = tokenizer.decode(ids, skip_special_tokens=True)
            text, reasoning = final_answer(
                clean_generation(text, fewshot=model.kind == "pre"), decoding.max_words, markers
            )
            response = Response(items[index].id, name or model.name, text, len(ids), keys[index], reasoning)
            atomic_write_text(response_cache_path(keys[index]), json.dumps(asdict(response)))
            results[index] = response
    bar.close()
    return [results[i] for i in range(len(items))]


def _generate(model: LoadedModel, batch, decoding: Decoding, stop_strings: list[str] | None, pruned: bool):
    """One left-padded batch's generation: greedy with finished rows pruned where the model allows, else
    transformers' `generate` (sampled per `decoding`, stopped at `stop_strings`)."""
    from transformers import StoppingCriteriaList

    from interp.run.stop_text import StopText

    tokenizer = model.tokenizer
    sampling = (
        {"do_sample": True, "temperature": decoding.temperature, "top_k": 0, "top_p": 1.0}
        if decoding.sampled
        else {"do_sample": False}
    )
    if pruned:
        return greedy_generate(
            model.hf_model,
            batch.input_ids,
            batch.attention_mask,
            max_new_tokens=decoding.max_new_tokens,
            pad_token_id=tokenizer.pad_token_id,
            tokenizer=tokenizer,
            stop_strings=stop_strings or (),
        )
    return model.hf_model.generate(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        max_new_tokens=decoding.max_new_tokens,
        pad_token_id=tokenizer.pad_token_id,
        stopping_criteria=StoppingCriteriaList(
            [StopText(tokenizer, stop_strings, batch.input_ids.shape[1])] if stop_strings else []
        ),
        **sampling,
    )


@contextlib.contextmanager
def _batch_rng(model: LoadedModel, decoding: Decoding, keys: Sequence[str]):
    """Sampled decoding: torch's random stream seeded from the seed and the batch's prompt keys, restored on exit."""
    if not decoding.sampled:
        yield
        return
    devices = list(range(torch.cuda.device_count())) if model.device.type == "cuda" else []  # a sharded model's too
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(hashlib.sha256(json.dumps([decoding.seed, list(keys)]).encode()).hexdigest()[:15], 16))
        yield


def _length_batches(indices: Sequence[int], prompts: Sequence[Prompt], size: int) -> list[list[int]]:
    """`indices` in batches of `size`, similar prompt lengths together (less padding)."""
    pool = sorted(indices, key=lambda i: (len(prompts[i].text), i))
    return [pool[start : start + size] for start in range(0, len(pool), size)]
