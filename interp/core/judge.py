"""Judging: verdict label probabilities and span attention from the same forward pass, batched or for one pair.

Label tokens: a label such as "A" can be emitted as several single tokens ("A", " A", and for
SentencePiece vocabularies "▁A"). P(label) is the sum of the next-token probabilities of every distinct
single-token spelling of the label with or without a leading space; multi-token spellings are ignored.
The label probabilities are then renormalised over the labels (A/B, or A/T/B). `label_mass`, the
probability on all label tokens before renormalisation, and `top_is_label`, whether the single most likely
next token is a label, say how much the judge was actually answering with a label.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import torch
from jaxtyping import Float
from torch import Tensor

from interp.core.attention import (
    SPAN_NAMES,
    Readout,
    per_token_mean,
    span_reducer,
    span_token_counts,
)
from interp.core.backends.protocol import Backend, Batch, Edits, ResidEdit, ScoreBias, SiteEdit, left_pad
from interp.core.placement import check_weights_placed
from interp.core.spans import TokenizedPrompt, build_judge_prompt
from interp.core.threads import rebalance_threads
from interp.errors import InterpError


@dataclass(frozen=True)
class LabelTokens:
    """The verdict labels and, per label, the token ids of its single-token spellings (`label_tokens`)."""

    labels: tuple[str, ...]
    ids: tuple[tuple[int, ...], ...]  # per label, its single-token spellings


def label_tokens(tokenizer, labels: Sequence[str] = ("A", "B")) -> LabelTokens:
    """The token ids that spell each verdict label in this tokenizer (with and without a leading space).

    >>> labels = interp.label_tokens(model.tokenizer)
    >>> labels.labels
    ('A', 'B')
    """
    ids = []
    for label in labels:
        spellings = {label, " " + label}
        found = sorted(
            {t[0] for t in (tokenizer.encode(s, add_special_tokens=False) for s in spellings) if len(t) == 1}
        )
        if not found:
            raise InterpError(f"label {label!r} is not a single token in this tokenizer; cannot read its probability")
        ids.append(tuple(found))
    flat = [i for group in ids for i in group]
    if len(flat) != len(set(flat)):
        raise InterpError(f"labels {labels} share a token in this tokenizer")
    return LabelTokens(tuple(labels), tuple(ids))


@dataclass
class Judgment:
    """One prompt's verdict: the label probabilities (renormalised over the labels), the probability on label tokens,
    the most likely next token and whether it is a label, the spans, and with a readout the attention mass of each
    layer and head on each span with the spans' token counts (else None)."""

    probs: dict[str, float]  # renormalised over the labels
    label_mass: float
    top_is_label: bool
    top_token: int
    spans: dict[str, tuple[int, int]]  # unpadded token indices, end exclusive
    n_tokens: int
    mass: Float[Tensor, "layer head span"] | None  # span order: `judge_batch`'s span_names (a, b by default)
    counts: Float[Tensor, " span"] | None


BiasBuilder = Callable[[Batch, list[int], Sequence[TokenizedPrompt]], ScoreBias | None]
EditBuilder = Callable[[Batch, list[int], Sequence[TokenizedPrompt]], "ResidEdit | SiteEdit | None"]
EditsBuilder = Callable[[Batch, list[int], Sequence[TokenizedPrompt]], "Edits | None"]


def as_edits(score_bias: ScoreBias | None = None, edit: "ResidEdit | SiteEdit | Edits | None" = None) -> Edits:
    """The one edit set of a pass from a score bias and an edit dict (layer (int) -> residual function, hook name
    (str) -> site function) or a ready `Edits`."""
    if isinstance(edit, Edits):
        return Edits(score_bias=dict(score_bias or {})).merged(edit)
    resid = {key: fn for key, fn in (edit or {}).items() if isinstance(key, int)}
    sites = {key: fn for key, fn in (edit or {}).items() if isinstance(key, str)}
    return Edits(dict(score_bias or {}), resid, sites)


MIN_SHARED_PREFIX = 16  # below this, a separate prefix pass costs more than it saves


def shared_prefix_length(prompts: Sequence[TokenizedPrompt]) -> int:
    """Tokens every prompt of the batch starts with, up to the first response span (0 if not worth sharing).

    Prompts of one task share the judge's instructions (and both orders of a pair share the query too);
    a backend that `shares_prefix` computes those keys and values once for the whole batch.
    """
    if len(prompts) < 2:
        return 0
    first, *rest = (p.input_ids for p in prompts)
    limit = min(min((p.spans[s][0] for s in SPAN_NAMES if s in p.spans), default=len(p)) for p in prompts)
    limit = min(limit, min(len(p) for p in prompts) - 1)
    length = 0
    while length < limit and all(ids[length] == first[length] for ids in rest):
        length += 1
    return length if length >= MIN_SHARED_PREFIX else 0


def label_probabilities(
    logits: Float[Tensor, "batch vocab"], labels: LabelTokens
) -> tuple[Float[Tensor, "batch vocab"], Float[Tensor, "batch label"], Float[Tensor, " batch"]]:
    """Next-token probabilities (float64), each label's share renormalised over the labels, and the label mass
    (probability on label tokens before renormalising)."""
    probs = torch.softmax(logits.double(), dim=-1)
    per_label = torch.stack([probs[:, list(group)].sum(-1) for group in labels.ids], dim=-1)
    label_mass = per_label.sum(-1)
    return probs, per_label / label_mass.clamp_min(torch.finfo(torch.float64).tiny)[:, None], label_mass


def judge_batch(
    backend: Backend,
    prompts: Sequence[TokenizedPrompt],
    labels: LabelTokens,
    *,
    readout: Readout | None = "final",
    bias: BiasBuilder | None = None,
    edit: EditBuilder | None = None,
    judge: str | None = None,
    names: Sequence[str] | None = None,
    span_names: Sequence[str] = SPAN_NAMES,
    intervention: str | None = None,
    edits: EditsBuilder | None = None,
) -> list[Judgment]:
    """Judge a batch of tokenized prompts in one forward pass (left-padded; padding does not change results).

    >>> backend = interp.make_backend(model, "hf")
    >>> prompt = interp.build_judge_prompt(model, "helpfulness", "What is 2 + 2?", "4", "5")
    >>> (judgment,) = interp.judge_batch(backend, [prompt], interp.label_tokens(model.tokenizer))
    >>> round(judgment.probs["A"] + judgment.probs["B"], 6)
    1.0

    `bias(batch, offsets, prompts)` -> pre-softmax score biases, `edit(batch, offsets, prompts)` -> edits: a layer
    (int) -> function of that layer's residual output (steering), and a hook point name (str, `interp.hooks.sites`)
    -> function of that activation (node interventions); either may return None for "no change". `edits(batch,
    offsets, prompts)` -> an `Edits` (what `interp.hooks.base.compile_edits` makes of a list of interventions);
    all three are merged into the one edit set the backend's `forward` takes.
    `span_names`: the spans whose attention is read, in order (default a, b; a rationale adds "rationale",
    a pointwise prompt has "a" only).
    A label probability that is not a finite number (NaN weights: a corrupt model or adapter) is an
    `InterpError` naming `judge` (default: the model's name) and the prompt (`names[i]`, e.g. the item);
    `intervention`: the name of what `bias` / `edit` apply, which that error then blames instead of the weights.
    """
    rebalance_threads()  # company that came or went since the last batch (the Python API's first one decides)
    check_weights_placed(backend.model)
    tokenizer = backend.model.tokenizer
    batch, offsets = left_pad([p.input_ids for p in prompts], tokenizer.pad_token_id)
    padded_spans = [
        {k: (s + off, e + off) for k, (s, e) in p.spans.items()} for p, off in zip(prompts, offsets, strict=False)
    ]
    model = backend.model
    reducer = (
        span_reducer(
            padded_spans,
            batch.input_ids.shape[1],
            model.n_layers,
            model.n_heads,
            readout=readout,
            span_names=span_names,
        )
        if readout
        else None
    )
    compiled = as_edits(
        bias(batch, offsets, prompts) if bias is not None else None,
        edit(batch, offsets, prompts) if edit is not None else None,
    ).merged(edits(batch, offsets, prompts) if edits is not None else None)
    shared = shared_prefix_length(prompts) if backend.shares_prefix else 0
    scale = compiled.logit_scale  # the verdict logits' temperature: after the pass, on every backend alike
    compiled = replace(compiled, logit_scale=None) if scale is not None else compiled
    logits = backend.forward(batch, edits=compiled or None, on_pattern=reducer, shared_prefix=shared)
    logits = logits.double() * scale if scale is not None else logits
    masses = reducer.stacked() if reducer is not None else None
    counts = span_token_counts(padded_spans, span_names) if reducer is not None else None
    return judgments_from_logits(
        logits,
        prompts,
        labels,
        judge=judge or model.name,
        names=names,
        intervention=intervention,
        masses=masses,
        counts=counts,
    )


def judgments_from_logits(
    logits: Float[Tensor, "batch vocab"],
    prompts: Sequence[TokenizedPrompt],
    labels: LabelTokens,
    *,
    judge: str,
    names: Sequence[str] | None = None,
    intervention: str | None = None,
    masses: Tensor | None = None,
    counts: Tensor | None = None,
) -> list[Judgment]:
    """Each prompt's `Judgment` from its final-position logits (and span attention where read): the label
    probabilities checked finite (`check_finite`, naming `judge`, the prompt and the intervention)."""
    probs, normalised, label_mass = label_probabilities(logits, labels)
    check_finite(normalised, label_mass, judge, names, intervention)
    top = probs.argmax(-1)
    label_ids = {i for group in labels.ids for i in group}
    return [
        Judgment(
            probs={label: float(normalised[row, i]) for i, label in enumerate(labels.labels)},
            label_mass=float(label_mass[row]),
            top_is_label=int(top[row]) in label_ids,
            top_token=int(top[row]),
            spans=dict(prompt.spans),
            n_tokens=len(prompt),
            mass=masses[row] if masses is not None else None,
            counts=counts[row] if counts is not None else None,
        )
        for row, prompt in enumerate(prompts)
    ]


def check_finite(
    normalised: Tensor, label_mass: Tensor, judge: str, names: Sequence[str] | None, intervention: str | None = None
) -> None:
    """Every row's label probabilities are finite numbers, else one line naming the judge and the first bad row:
    under an intervention (`intervention`, its name) the line blames it, otherwise the model's weights."""
    bad = (~torch.isfinite(normalised).all(-1)) | (~torch.isfinite(label_mass))
    if bool(bad.any()):
        row = int(bad.nonzero()[0, 0])
        what = names[row] if names is not None else f"prompt {row + 1} of the batch"
        if intervention is not None:
            raise InterpError(
                f"judge {judge}: P(label) is not a finite number for {what} under the intervention "
                f"{intervention!r}: the intervention made the model compute NaN or infinity (try a smaller "
                "coefficient or another intervention)"
            )
        raise InterpError(
            f"judge {judge}: P(label) is not a finite number for {what} (the model computes NaN or infinity: "
            "are its weights, or its adapter's, corrupt?)"
        )


# ---- one judgment from the inside ---------------------------------------------------------------


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
    readout: Readout = "final",
    bias: BiasBuilder | None = None,
) -> dict:
    """One pair judged, as a record: the model, backend, kind, task and readout, then the judgment's fields
    (P(A), P(B), the label mass, the span attention, ...) as `interp inspect` prints them.

    >>> backend = interp.make_backend(model, "hf")
    >>> record = interp.inspect_judgment(backend, "What is 2 + 2?", "4", "5")
    >>> record["backend"], record["task"]
    ('hf', 'helpfulness')
    """
    model = backend.model
    prompt = build_judge_prompt(model, task, query, response_a, response_b)
    (judgment,) = judge_batch(
        backend, [prompt], label_tokens(model.tokenizer), readout=readout, bias=bias, names=["the given pair"]
    )
    return {
        "model": model.name,
        "backend": backend.name,
        "kind": model.kind,
        "task": task,
        "readout": readout,
    } | judgment_record(judgment)
