"""Compile intervention specs to the one mechanism: an additive pre-softmax score bias per layer.

Every backend's `forward(batch, score_bias=...)` adds `score_bias[layer]` to that layer's attention scores
before the softmax (hf and nnsight through the registered attention function `interp_eager`,
transformer_lens through `blocks.{l}.attn.hook_attn_scores`). The scores are biased *before* the pattern
is multiplied into the values, so the edit always reaches the output (unlike a pattern hook that fires
after the attention output was computed).

Coordinates: specs and targets are in unpadded token indices of each prompt, end exclusive; batches are
left-padded, `offsets[row]` is the padding added to that row. Padding rows and columns are never biased.
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import Sequence

import torch
from jaxtyping import Bool, Float
from torch import Tensor

from interp.core.backends import Batch, ScoreBias
from interp.core.judge import BiasBuilder
from interp.core.models import LoadedModel, own_model, own_slot
from interp.core.spans import TokenizedPrompt
from interp.errors import InterpError
from interp.hooks.spec import AttentionIntervention, Target, validate_against

# ---- the definition -----------------------------------------------------------------------------


def scale_and_renormalise(
    pattern: Float[Tensor, "... query key"], key_mask: Bool[Tensor, "... query key"], alpha: float
) -> Float[Tensor, "... query key"]:
    """The reference definition: multiply the weights on masked keys by alpha, renormalise every row.

    `key_mask` broadcasts against `pattern` (for instance [query, key]); rows with no masked key are
    returned unchanged. Used by the tests as the ground truth the compiled bias must match.
    """
    scaled = torch.where(key_mask, pattern * alpha, pattern)
    return scaled / scaled.sum(-1, keepdim=True)


# ---- targets ------------------------------------------------------------------------------------


def _self_slot(judge_model: str | None, author_a: str | None, author_b: str | None, target: str) -> str:
    if author_a is None or author_b is None:
        raise InterpError(
            f"target '{target}' needs the authors of both responses (none were given, e.g. in `inspect`); "
            "use target 'a', 'b' or [start, end] instead"
        )
    if judge_model is None:
        raise InterpError(f"target '{target}' needs the judge model's name to find its own response")
    slot = own_slot(author_a, author_b, judge_model)
    if slot is None and author_a == author_b == judge_model:
        raise InterpError(f"both responses were written by {judge_model!r}; target '{target}' is ambiguous")
    if slot is None:
        raise InterpError(
            f"neither response was written by the judge {judge_model!r} (authors {author_a!r}, {author_b!r}); "
            f"target '{target}' needs one of them to be"
        )
    return slot


def _prompt_hash(input_ids: Sequence[int]) -> str:
    return hashlib.sha256(",".join(map(str, input_ids)).encode()).hexdigest()


def _random_span(spec: AttentionIntervention, prompt: TokenizedPrompt, length: int) -> tuple[int, int]:
    """A span of `length` tokens, uniform over the admissible starts, seeded by (spec.seed, prompt ids).

    Admissible: inside the prompt, overlapping neither response span, excluding the final position (the
    query that reads the verdict) and the first token (the attention sink: hiding it wrecks any model and
    would make the control meaninglessly strong).
    """
    n = len(prompt)
    if length == 0:
        return (1, 1) if n > 1 else (0, 0)
    responses = [prompt.spans[slot] for slot in ("a", "b") if slot in prompt.spans]
    starts = [
        s
        for s in range(1, n - length)  # s + length <= n - 1: the final position stays outside
        if all(s + length <= rs or s >= re for rs, re in responses if re > rs)
    ]
    if not starts:
        raise InterpError(
            f"no room for a random span of {length} tokens outside both responses in a prompt of {n} tokens"
        )
    rng = random.Random(f"{spec.seed}:{_prompt_hash(prompt.input_ids)}")
    start = rng.choice(starts)
    return start, start + length


def _check_span(span: tuple[int, int], n: int, spec: AttentionIntervention) -> tuple[int, int]:
    start, end = span
    if not 0 <= start <= end <= n:
        raise InterpError(f"span [{start}, {end}) does not exist in a prompt of {n} tokens")
    if spec.queries == "final" and start == 0 and end == n and end > start:
        raise InterpError(f"span [{start}, {end}) covers the whole prompt; the final position would see no key")
    return start, end


def resolve_target(
    spec: AttentionIntervention,
    prompt: TokenizedPrompt,
    *,
    judge_model: str | None,
    author_a: str | None,
    author_b: str | None,
) -> tuple[int, int]:
    """The target's token span in unpadded coordinates of `prompt` (end exclusive).

    "a"/"b": that slot's span. "both": from the start of the first span to the end of the second. "self": the slot whose
    author == judge_model; "other": the other slot (InterpError if neither or both match, or authors are unknown).
    "random": a span as long as the self
    span (as span "a" when the self slot is unknown) placed uniformly at random elsewhere (see
    `_random_span`), reproducible from spec.seed and the prompt's token ids. (start, end): checked to lie
    within the prompt.
    """
    target: Target = spec.target
    n = len(prompt)
    if isinstance(target, tuple):
        return _check_span(target, n, spec)
    if target in ("a", "b"):
        return _check_span(prompt.spans[target], n, spec)
    if target == "both":
        (a_start, a_end), (b_start, b_end) = prompt.spans["a"], prompt.spans["b"]
        return _check_span((min(a_start, b_start), max(a_end, b_end)), n, spec)
    if target in ("self", "other"):
        own = _self_slot(judge_model, author_a, author_b, target)
        slot = own if target == "self" else ("b" if own == "a" else "a")
        return _check_span(prompt.spans[slot], n, spec)
    if target == "random":
        slot = "a"
        if (
            author_a is not None
            and author_b is not None
            and judge_model in (author_a, author_b)
            and author_a != author_b
        ):
            slot = _self_slot(judge_model, author_a, author_b, "random")
        start, end = prompt.spans[slot]
        return _check_span(_random_span(spec, prompt, end - start), n, spec)
    raise InterpError(f"unknown target {target!r}")  # unreachable: specs are validated


# ---- compiling ----------------------------------------------------------------------------------


def _log_alpha(alpha: float) -> float:
    # math.log(1.0) == 0.0 exactly, so alpha = 1 adds +0.0 and leaves the scores bit-identical.
    return float("-inf") if alpha == 0 else math.log(alpha)


def compile_bias(
    spec: AttentionIntervention,
    batch: Batch,
    offsets: Sequence[int],
    prompts: Sequence[TokenizedPrompt] | None,
    n_layers: int,
    n_heads: int,
    targets: Sequence[tuple[int, int]],
    *,
    dtype: torch.dtype = torch.float32,
) -> ScoreBias:
    """The additive pre-softmax bias that applies `spec` to a left-padded batch.

    Why a bias equals the intervention: a query row's pattern is p_k = exp(s_k) / sum_j exp(s_j). Adding
    log(alpha) to the scores of the target keys T multiplies exp(s_k) by alpha for k in T, so the new row is

        p'_k = alpha^[k in T] exp(s_k) / (alpha sum_{j in T} exp(s_j) + sum_{j not in T} exp(s_j))
             = alpha^[k in T] p_k / (alpha sum_{j in T} p_j + sum_{j not in T} p_j)

    (divide numerator and denominator by sum_j exp(s_j)): exactly the post-softmax weights scaled by alpha
    on T and renormalised (`scale_and_renormalise`). alpha = 0 gives -inf, i.e. masking; alpha = 1 gives
    exactly 0.0, so the scores, patterns and logits are bit-identical to the unhooked run.

    Returns layer -> tensor [batch, n_heads, query, key] when the spec picks heads, [batch, 1, query, key]
    when it takes every head (broadcast over heads); layers with the same head set share one tensor (so
    memory is one [batch, 1, T, T] tensor for all-heads specs, plus one [batch, n_heads, T, T] tensor per
    distinct head set otherwise). The
    bias is log(alpha) on the target keys for the chosen query rows and 0 elsewhere: "outside" = every
    position after the span (positions before it cannot see it: the causal mask already hides those keys;
    positions inside it are left alone), "final" = the last position. Padding rows and columns stay 0.
    """
    rows, width = batch.input_ids.shape
    if not (len(offsets) == len(targets) == rows) or (prompts is not None and len(prompts) != rows):
        raise ValueError(f"batch has {rows} rows but got {len(offsets)} offsets and {len(targets)} targets")
    value = _log_alpha(spec.alpha)
    base = torch.zeros(rows, 1, width, width, dtype=dtype)
    for row, ((start, end), offset) in enumerate(zip(targets, offsets, strict=False)):
        n = len(prompts[row]) if prompts is not None else width - offset
        if offset + n != width:
            raise ValueError(f"row {row}: offset {offset} + {n} tokens != batch width {width}")
        _check_span((start, end), n, spec)
        if end <= start:
            continue
        keys = slice(offset + start, offset + end)
        if spec.queries == "final":
            base[row, 0, width - 1, keys] = value
        else:
            base[row, 0, offset + end :, keys] = value
    bias: ScoreBias = {}
    by_heads: dict[tuple[int, ...] | None, Tensor] = {}
    for layer, heads in spec.selection(n_layers).items():
        if heads not in by_heads:
            if heads is None:
                by_heads[heads] = base
            else:
                tensor = torch.zeros(rows, n_heads, width, width, dtype=dtype)
                tensor[:, list(heads)] = base
                by_heads[heads] = tensor
        bias[layer] = by_heads[heads]
    return bias


def spec_bias_builder(
    spec: AttentionIntervention,
    n_layers: int,
    n_heads: int,
    dtype: torch.dtype,
    *,
    judge_model: str | None,
    authors: Sequence[tuple[str, str]] | None,
) -> BiasBuilder:
    """`bias_builder` for a model of this shape and dtype: the spec checked against the shape now, each batch's
    targets resolved per prompt (from `authors` and `judge_model` for "self" / "other") when the builder runs."""
    validate_against(spec, n_layers, n_heads)
    if spec.target in ("self", "other") and authors is None:
        _self_slot(judge_model, None, None, spec.target)  # raises the one-line error now, before any forward

    def build(batch: Batch, offsets: list[int], prompts: Sequence[TokenizedPrompt] | None) -> ScoreBias:
        rows = batch.input_ids.shape[0]
        if authors is not None and len(authors) != rows:
            raise InterpError(
                f"got authors for {len(authors)} prompts but the batch has {rows}; pass one (author A, "
                "author B) per prompt"
            )
        if prompts is None:
            if not isinstance(spec.target, tuple):
                raise InterpError(
                    f"target '{spec.target}' needs the tokenized prompts (their response spans); pass prompts="
                )
            lengths = [batch.input_ids.shape[1] - off for off in offsets]
            targets = [_check_span(spec.target, n, spec) for n in lengths]
        else:
            targets = [
                resolve_target(
                    spec,
                    prompt,
                    judge_model=judge_model,
                    author_a=authors[row][0] if authors is not None else None,
                    author_b=authors[row][1] if authors is not None else None,
                )
                for row, prompt in enumerate(prompts)
            ]
        return compile_bias(spec, batch, offsets, prompts, n_layers, n_heads, targets, dtype=dtype)

    return build


def model_dtype(hf_model: torch.nn.Module) -> torch.dtype:
    """The dtype of the model's first parameter: the dtype its score biases are made in."""
    return next(hf_model.parameters()).dtype


def bias_builder(
    spec: AttentionIntervention,
    model: LoadedModel,
    *,
    judge_model: str | None = None,
    authors: Sequence[tuple[str, str]] | None = None,
) -> BiasBuilder:
    """A `judge_batch(..., bias=...)` builder applying `spec` to every batch.

    `authors[row]` = (author of slot A, author of slot B) for each prompt of the batch the builder is
    called with (one builder per `judge_batch` call). "self"/"other" need them, and the own model of
    `judge_model` (default: the model's name; `own_model`: an organism's is its base) equal to exactly one
    author; `inspect` has no authors, so there use "a", "b" or an
    explicit [start, end] span ("self"/"other" raise InterpError here, before any forward pass). The
    spec's layers and heads are checked against the model now; spans are checked per prompt before the
    forward pass.
    """
    return spec_bias_builder(
        spec,
        model.n_layers,
        model.n_heads,
        model_dtype(model.hf_model),
        judge_model=own_model(judge_model if judge_model is not None else model.name),
        authors=authors,
    )
