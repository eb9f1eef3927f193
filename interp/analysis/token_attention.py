"""One judgment of a run re-run token by token: one head's attention over every prompt token, as data and HTML."""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from interp.analysis.attention_store import (
    ORDERS,
    check_tokenizer,
    load_attention,
    run_config,
)
from interp.core.backends import make_backend
from interp.core.judge import judge_batch, label_tokens
from interp.core.models import load_model
from interp.core.spans import token_labels, tokenized_judge_prompt
from interp.errors import InterpError
from interp.run.judging import judge_tasks
from interp.run.store import RunDir
from interp.templating import Markup, render
from jaxtyping import Float
from torch import Tensor


@dataclass
class TokenAttention:
    """One head's attention from the run's query set over every token of one judge prompt.

    `masses`: `[layer, head, span]` span masses recomputed in this very pass (the run's code path);
    `stored`: the same numbers as the run stored them.
    """

    judge: str
    item_id: str
    order: str
    layer: int
    head: int
    tokens: list[str]
    weights: Float[Tensor, " pos"]
    spans: dict[str, tuple[int, int]]
    authors: dict[str, str]  # slot ("a", "b") -> author
    masses: Float[Tensor, "layer head span"]
    stored: Float[Tensor, "layer head span"]
    probs: dict[str, float]

    @property
    def max_abs_diff(self) -> float:
        """Largest difference between the recomputed and the stored span masses."""
        return float((self.masses - self.stored).abs().max())

    def html(self, **kwargs) -> str:
        return tokens_html(self.tokens, self.weights, spans=self.spans, **kwargs)


class _CaptureHead:
    """Wraps a backend so one head's full pattern is kept while `judge_batch` runs its own reducer."""

    def __init__(self, backend, layer: int, head: int):
        self.backend, self.layer, self.head = backend, layer, head
        self.model, self.name = backend.model, backend.name
        self.shares_prefix = False  # one prompt: there is no prefix to share
        self.pattern: Tensor | None = None

    def forward(self, batch, *, on_pattern=None, **kwargs):
        def hook(layer: int, pattern: Tensor) -> None:
            if layer == self.layer:
                self.pattern = pattern[0, self.head].detach().float().clone()
            if on_pattern is not None:
                on_pattern(layer, pattern)

        return self.backend.forward(batch, on_pattern=hook, **kwargs)


def _run_items(paths: RunDir) -> list:
    if not paths.items.is_file():
        raise InterpError(f"run directory {paths.root} has no items.jsonl")
    return paths.read_items()


def prompt_token_attention(
    run_dir, judge: str, item_id: str, order: str, layer: int, head: int, backend: str = "hf", *, model=None
) -> TokenAttention:
    """Re-run one judgment of the run with the judge model and return one head's attention per prompt token.

    The prompt is built as the run built it (responses.jsonl, `tokenized_judge_prompt`) and
    judged by `judge_batch` (the run's code path) with the run's query set; `model` (a LoadedModel) avoids
    reloading the judge. The token weights are that head's row at the final position ("final" runs) or the
    mean over every position after both responses ("after" runs).
    """
    for value, what in ((judge, "judge"), (item_id, "item_id"), (order, "order"), (backend, "backend")):
        if not isinstance(value, str):
            raise InterpError(f"{what} must be a string, not {type(value).__name__} {value!r:.60}")
    for value, what in ((layer, "layer"), (head, "head")):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise InterpError(f"{what} must be an int ({what} number), not {type(value).__name__} {value!r:.60}")
    if not isinstance(run_dir, (str, os.PathLike)):
        raise InterpError(f"run_dir must be a run directory (str or Path), not {type(run_dir).__name__}")
    layer, head = int(layer), int(head)
    run = load_attention(run_dir, judge)
    if order not in ORDERS:
        raise InterpError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    if item_id not in run.item_ids:
        raise InterpError(f"item {item_id!r} is not in this run (items: {', '.join(run.item_ids[:5])}...)")
    if not (0 <= layer < run.n_layers and 0 <= head < run.n_heads):
        raise InterpError(
            f"layer {layer}, head {head} out of range: {judge} has {run.n_layers} layers x {run.n_heads} heads"
        )
    paths = RunDir(Path(run_dir))
    items = [item for item in _run_items(paths) if item.id == item_id]
    responses = paths.read_responses()
    if not items:
        raise InterpError(f"item {item_id!r} is not in {paths.items}")
    tasks = {t.order: t for t in judge_tasks(items, responses, run.models)}
    task = tasks[order]
    loaded = model if model is not None else load_model(judge)
    check_tokenizer(run, loaded.tokenizer)
    prompt = tokenized_judge_prompt(loaded, task.item.task, task.item.query, task.response_a, task.response_b)
    i, o = run.item_ids.index(item_id), ORDERS.index(order)
    entry = run.index["items"][i]["orders"][order]
    if len(prompt) != entry["n_tokens"] or {k: list(v) for k, v in prompt.spans.items()} != entry["spans"]:
        raise InterpError(
            f"the rebuilt prompt of {item_id} {order} ({len(prompt)} tokens) differs from the run's ({entry['n_tokens']}); "
            "was the run made with another model kind or prompt version?"
        )
    capture = _CaptureHead(make_backend(loaded, backend), layer, head)
    (judgment,) = judge_batch(
        capture,
        [prompt],
        label_tokens(loaded.tokenizer, ("A", "T", "B") if _ties(paths) else ("A", "B")),
        readout=run.readout,
    )
    pattern = capture.pattern
    if run.readout == "final":
        weights = pattern[-1]
    else:
        first = max(prompt.spans["a"][1], prompt.spans["b"][1])
        weights = pattern[first:].mean(0)
    tokens = token_labels(loaded.tokenizer, prompt.input_ids)
    return TokenAttention(
        judge=judge,
        item_id=item_id,
        order=order,
        layer=layer,
        head=head,
        tokens=tokens,
        weights=weights,
        spans=dict(prompt.spans),
        authors={"a": task.author_a, "b": task.author_b},
        masses=judgment.mass,
        stored=run.mass[i, o],
        probs=dict(judgment.probs),
    )


def _ties(paths: RunDir) -> bool:
    config = run_config(paths)
    return config is not None and config.ties


_OUTLINES = {"a": "box-shadow:inset 0 -2px 0 #1f77b4;", "b": "box-shadow:inset 0 -2px 0 #2ca02c;"}


def tokens_html(
    tokens: Sequence[str],
    weights,
    *,
    spans: dict[str, tuple[int, int]] | None = None,
    skip_first: bool = True,
    color: tuple[int, int, int] = (214, 39, 40),
) -> Markup:
    """Prompt tokens as HTML spans, background alpha proportional to the weight.

    The scale is the largest weight, ignoring the first token when `skip_first` (it usually soaks up most of
    the attention, an "attention sink"). Response spans get an outline; hover shows each token's weight.
    """
    w = torch.as_tensor(weights, dtype=torch.float64).numpy()
    body = w[1:] if skip_first and w.size > 1 else w
    finite = body[np.isfinite(body)]
    scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    in_span = {}
    for name, (start, end) in (spans or {}).items():
        if name in ("a", "b"):
            for position in range(start, end):
                in_span[position] = name
    cells = []
    for position, (token, weight) in enumerate(zip(tokens, w)):
        alpha = min(max(weight / scale, 0.0), 1.0) if np.isfinite(weight) else 0.0
        style = (
            f"background:rgba({color[0]},{color[1]},{color[2]},{alpha:.3f});{_OUTLINES.get(in_span.get(position), '')}"
        )
        cells.append((f"{position}: {weight:.4g}", style, token.split("\n")))
    return render(_TOKENS, outlines=_OUTLINES, scale=f"{scale:.4g}", cells=cells)


# A newline inside a token shows as "\u21b5" and a line break; every token's text is escaped.
_TOKENS = (
    "<div style='font-size:90%;color:#555;margin-bottom:4px'>underline: "
    "<span style='{{ outlines.a }}'>response A</span>, <span style='{{ outlines.b }}'>response B</span>; "
    "colour scale max = {{ scale }}</div><div style='font-family:monospace;white-space:pre-wrap;line-height:1.6'>"
    "{% for title, style, lines in cells %}<span title='{{ title }}' style='{{ style }}'>"
    "{% for line in lines %}{% if not loop.first %}\u21b5<br>{% endif %}{{ line }}{% endfor %}</span>{% endfor %}</div>"
)
