"""One judgment of a run re-run token by token: one head's attention over every prompt token, as data and
HTML. The stored run is read by `interp.analysis.attention_store`, the pass is `interp.run.token_attention`,
the HTML `interp.report.token_attention`."""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass
from pathlib import Path

from jaxtyping import Float
from torch import Tensor

from interp.analysis.attention_store import ORDERS, check_tokenizer, load_attention, run_config
from interp.core.backends import make_backend
from interp.core.judge import label_tokens
from interp.core.models import load_model
from interp.core.spans import token_labels, tokenized_judge_prompt
from interp.errors import InterpError
from interp.report.token_attention import tokens_html
from interp.run.judging import judge_tasks
from interp.run.store import RunDir
from interp.run.token_attention import head_pass


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
        """The prompt's tokens shaded by this head's weights (`interp.report.token_attention.tokens_html`)."""
        return tokens_html(self.tokens, self.weights, spans=self.spans, **kwargs)


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
            f"the rebuilt prompt of {item_id} {order} ({len(prompt)} tokens) differs from the run's "
            f"({entry['n_tokens']}); "
            "was the run made with another model kind or prompt version?"
        )
    labels = label_tokens(loaded.tokenizer, ("A", "T", "B") if _ties(paths) else ("A", "B"))
    judgment, weights = head_pass(make_backend(loaded, backend), prompt, labels, layer, head, readout=run.readout)
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
