"""Judging a run: every item in both orders, batched, resumable, with span attention shards on the way."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from tqdm.auto import tqdm

from interp.core.threads import rebalance_threads
from interp.core.backends import Backend
from interp.core.judge import BiasBuilder, EditBuilder, judge_batch, label_tokens
from interp.core.prompts import judge_prompt
from interp.core.spans import tokenized_judge_prompt
from interp.data import Item
from interp.run.attention import write_shard
from interp.run.records import JudgmentRecord, append_judgments, read_judgments


@dataclass(frozen=True)
class JudgeTask:
    item: Item
    order: str
    response_a: str
    response_b: str
    author_a: str
    author_b: str

    @property
    def key(self) -> str:
        return f"{self.item.id}|{self.order}"


def judge_tasks(items: Sequence[Item], responses: dict[str, dict[str, str]], models: Sequence[str]) -> list[JudgeTask]:
    """Every item in both orders; responses[model][item_id] is that model's answer."""
    first, second = models
    tasks = []
    for item in items:
        x, y = responses[first][item.id], responses[second][item.id]
        tasks.append(JudgeTask(item, "ab", x, y, first, second))
        tasks.append(JudgeTask(item, "ba", y, x, second, first))
    return tasks


PLACEHOLDERS = ("{query}", "{response_a}", "{response_b}")


def verdict_labels(ties: bool) -> tuple[str, ...]:
    """The labels a judge's verdict is read over: A/T/B with ties (Chen et al.), else A/B."""
    return ("A", "T", "B") if ties else ("A", "B")


def judge_prompt_record(model, tasks: Sequence[str], *, ties: bool) -> dict:
    """What this judge reads, as it reads it: its prompt per task with `{query}`, `{response_a}` and
    `{response_b}` where the texts go (the chat template applied), its style and the labels read."""
    prompts = {task: judge_prompt(model.tokenizer, task, *PLACEHOLDERS, kind=model.kind, ties=ties) for task in sorted(set(tasks))}
    styles = {prompt.style for prompt in prompts.values()}
    return {"labels": list(verdict_labels(ties)), "style": styles.pop() if len(styles) == 1 else sorted(styles), "prompts": {task: prompt.text for task, prompt in prompts.items()}}


def batches(tasks: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(tasks), size):
        yield tasks[start : start + size]


def run_judging(
    backend: Backend,
    judge: str,
    tasks: Sequence[JudgeTask],
    *,
    judgments_path: Path,
    shard_dir: Path | None,
    batch_size: int,
    ties: bool = False,
    queries: str | None = "final",
    bias_for: Callable[[Sequence[JudgeTask]], BiasBuilder | None] | None = None,
    progress: bool = True,
    edit_for: Callable[[Sequence[JudgeTask]], EditBuilder | None] | None = None,
) -> None:
    """Judge every task not yet on disk; each batch's attention shard is written before its judgment lines.

    `bias_for(chunk)` / `edit_for(chunk)` give the score-bias / residual-edit builder for one batch of tasks.
    """
    model = backend.model
    labels = label_tokens(model.tokenizer, verdict_labels(ties))
    done = {record.key for record in read_judgments(judgments_path, judge=judge)}
    todo = [t for t in tasks if t.key not in done]
    prompts = {
        t.key: tokenized_judge_prompt(model, t.item.task, t.item.query, t.response_a, t.response_b, ties=ties) for t in todo
    }
    # One task's prompts together (their judge instructions are a prefix the backend can share), and similar
    # lengths together within a task (less padding).
    todo.sort(key=lambda t: (t.item.task, len(prompts[t.key])))
    bar = tqdm(total=len(todo), desc=f"judging {judge}", unit="judgment", disable=not progress or not todo)
    for chunk in batches(todo, batch_size):
        rebalance_threads()  # company that came or went since the last batch
        chunk_prompts = [prompts[t.key] for t in chunk]
        bias = bias_for(chunk) if bias_for is not None else None
        edit = edit_for(chunk) if edit_for is not None else None
        judgments = judge_batch(
            backend, chunk_prompts, labels, queries=queries if shard_dir else None, bias=bias, edit=edit,
            judge=judge, names=[f"item {t.item.id!r} (order {t.order})" for t in chunk],
        )  # non-finite label probabilities fail here, before the batch's shard or lines are written
        if shard_dir is not None:
            write_shard(shard_dir, [t.key for t in chunk], judgments)
        append_judgments(
            judgments_path,
            [JudgmentRecord.of(judge, t.item.id, t.item.task, t.order, t.author_a, t.author_b, j) for t, j in zip(chunk, judgments)],
        )
        bar.update(len(chunk))
    bar.close()
