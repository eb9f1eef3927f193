"""One judgment looked at from the inside: verdict probabilities and per-layer, per-head span attention."""

from __future__ import annotations

import math

from interp.attention import QuerySet, per_token_mean
from interp.backends import Backend
from interp.errors import InterpError
from interp.judge import BiasBuilder, Judgment, judge_batch, label_tokens
from interp.prompts import judge_prompt
from interp.spans import TokenizedPrompt, tokenize_prompt


def tokenized_judge_prompt(model, task: str, query: str, response_a: str, response_b: str) -> TokenizedPrompt:
    """The judge prompt for this model's kind, tokenized, with token spans; checks it fits the context.

    The one way every judging path (runs, gold model judges, attention maps, steering) builds a prompt, so
    their token positions agree. Empty responses are allowed (they give empty spans).
    """
    prompt = judge_prompt(model.tokenizer, task, query, response_a, response_b, kind=model.kind)
    return tokenize_prompt(model.tokenizer, prompt, max_length=model.context_length or None)


def build_judge_prompt(model, task: str, query: str, response_a: str, response_b: str) -> TokenizedPrompt:
    """`tokenized_judge_prompt` for text typed by a user: every part must be non-empty."""
    for slot, text in (("query", query), ("response A", response_a), ("response B", response_b)):
        if not text.strip():
            raise InterpError(f"{slot} is empty; pass non-empty text")
    return tokenized_judge_prompt(model, task, query, response_a, response_b)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def judgment_record(judgment: Judgment) -> dict:
    """The JSON shape of `interp inspect` (and of every judged item in a run)."""
    record = {
        "p_a": judgment.probs["A"],
        "p_b": judgment.probs["B"],
        "label_mass": judgment.label_mass,
        "top_is_label": judgment.top_is_label,
        "spans": {name: list(judgment.spans[name]) for name in ("a", "b")},
        "n_tokens": judgment.n_tokens,
    }
    if judgment.mass is None:
        return record
    mean = per_token_mean(judgment.mass[None], judgment.counts[None])[0]
    record["span_tokens"] = {"a": int(judgment.counts[0]), "b": int(judgment.counts[1])}
    record["layers"] = [
        {
            "layer": layer,
            "mass_a": float(judgment.mass[layer, :, 0].mean()),
            "mass_b": float(judgment.mass[layer, :, 1].mean()),
            "mean_a": _finite(float(mean[layer, :, 0].mean())),
            "mean_b": _finite(float(mean[layer, :, 1].mean())),
            "heads_mass_a": judgment.mass[layer, :, 0].tolist(),
            "heads_mass_b": judgment.mass[layer, :, 1].tolist(),
        }
        for layer in range(judgment.mass.shape[0])
    ]
    return record


def inspect_judgment(
    backend: Backend,
    query: str,
    response_a: str,
    response_b: str,
    *,
    task: str = "helpfulness",
    queries: QuerySet = "final",
    bias: BiasBuilder | None = None,
) -> dict:
    model = backend.model
    prompt = build_judge_prompt(model, task, query, response_a, response_b)
    (judgment,) = judge_batch(backend, [prompt], label_tokens(model.tokenizer), queries=queries, bias=bias)
    return {"model": model.name, "backend": backend.name, "kind": model.kind, "task": task, "queries": queries} | judgment_record(judgment)
