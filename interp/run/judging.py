"""Judging a run: every item in both orders, batched, resumable, with span attention shards on the way."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from tqdm.auto import tqdm

from interp.core.backends import Backend
from interp.core.judge import EditsBuilder, judge_batch, label_tokens
from interp.core.prompts import COT_CUE, Prompt, judge_prompt
from interp.core.rubric import SCORE_LABELS, pointwise_prompt, result_cue
from interp.core.spans import TokenizedPrompt, tokenize_prompt, tokenized_judge_prompt
from interp.data import Item
from interp.run.attention import write_shard
from interp.run.rationale import RATIONALE_SLOT, generate_rationales, with_rationale
from interp.run.records import JudgmentRecord, append_judgments, read_judgments


@dataclass(frozen=True)
class JudgeTask:
    """One prompt to judge: an item in one order ("ab" or "ba"), its two responses as shown and who wrote each."""

    item: Item
    order: str
    response_a: str
    response_b: str
    author_a: str
    author_b: str

    @property
    def key(self) -> str:
        """`<item id>|<order>`: the task's key in the judgments, the prompts and the attention shards."""
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


def judge_prompt_record(model, tasks: Sequence[str], *, ties: bool, cot: str = "none", mode: str = "pairwise") -> dict:
    """What this judge reads, as it reads it: its prompt per task with `{query}`, `{response_a}` and
    `{response_b}` where the texts go (the chat template applied), its style and the labels read. With a
    rationale (`cot`, pointwise feedback), the cue after which the verdict is read; pointwise prompts have
    `{response}` and `{reference}`."""
    if mode == "pointwise":
        prompts = {
            task: pointwise_prompt(model.tokenizer, task, "{query}", "{response}", "{reference}", kind=model.kind)
            for task in sorted(set(tasks))
        }
        labels, cue = SCORE_LABELS, result_cue(model.tokenizer)
    else:
        prompts = {
            task: judge_prompt(model.tokenizer, task, *PLACEHOLDERS, kind=model.kind, ties=ties, cot=cot)
            for task in sorted(set(tasks))
        }
        labels, cue = verdict_labels(ties), (COT_CUE if cot != "none" else None)
    styles = {prompt.style for prompt in prompts.values()}
    record = {
        "labels": list(labels),
        "style": styles.pop() if len(styles) == 1 else sorted(styles),
        "prompts": {task: prompt.text for task, prompt in prompts.items()},
    }
    return record | ({"mode": mode, "cot": cot, "verdict_cue": cue} if cue else {})


def batches(tasks: Sequence, size: int) -> Iterator[Sequence]:
    """`tasks` in consecutive slices of `size` (the last one may be shorter)."""
    for start in range(0, len(tasks), size):
        yield tasks[start : start + size]


@dataclass(frozen=True)
class JudgingOptions:
    """How `run_judging` judges: `batch_size` prompts a batch, with a tie label or not, the attention `readout` its
    shards hold, a progress bar or not, chain of thought (`cot`: "none", "standard", "long") with rationales of up to
    `rationale_tokens`, and `intervention`: the name of what its `edits_for` applies, for the error when it makes
    the model's output non-finite."""

    batch_size: int
    ties: bool = False
    readout: str | None = "final"
    progress: bool = True
    cot: str = "none"
    rationale_tokens: int = 256
    intervention: str | None = None


def run_judging(
    backend: Backend,
    judge: str,
    tasks: Sequence[JudgeTask],
    *,
    judgments_path: Path,
    shard_dir: Path | None,
    options: JudgingOptions,
    edits_for: Callable[[Sequence[JudgeTask]], EditsBuilder | None] | None = None,
    rationales: Mapping[str, str] | None = None,
) -> None:
    """Judge every task not yet on disk; each batch's attention shard is written before its judgment lines.

    `edits_for(chunk)` gives the edit builder (`Edits` for a batch: every intervention of a variant, compiled
    by `interp.hooks.base.compile_edits`) for one batch of tasks.
    With `options.cot` ("standard", "long"), the judge first writes a rationale (up to `options.rationale_tokens`,
    greedy, `interp.run.rationale`); the labels are read after it and "My final verdict is", and span attention
    there over a, b and the rationale. `rationales` (task key -> text): rationales already written (a re-judging
    reads the run's own, so its verdict is read from the very prompt the run's was); the others are generated.
    """
    ties, readout, cot, intervention = options.ties, options.readout, options.cot, options.intervention
    model = backend.model
    labels = label_tokens(model.tokenizer, verdict_labels(ties))
    done = {record.key for record in read_judgments(judgments_path, judge=judge)}
    todo = [t for t in tasks if t.key not in done]
    if cot != "none":
        prompts = {t.key: task_judge_prompt(model, t, ties=ties, cot=cot) for t in todo}
    else:
        prompts = {t.key: verdict_prompt(model, t, ties=ties) for t in todo}
    length = (lambda t: len(prompts[t.key].text)) if cot != "none" else (lambda t: len(prompts[t.key]))
    # One task's prompts together (their judge instructions are a prefix the backend can share), and similar
    # lengths together within a task (less padding).
    todo.sort(key=lambda t: (t.item.task, length(t)))
    bar = tqdm(total=len(todo), desc=f"judging {judge}", unit="judgment", disable=not options.progress or not todo)
    for chunk in batches(todo, options.batch_size):
        chunk_prompts = [prompts[t.key] for t in chunk]
        chunk_rationales: list[str | None] = [None] * len(chunk)
        if cot != "none":
            chunk_rationales = _chunk_rationales(
                model, chunk, chunk_prompts, rationales or {}, options.rationale_tokens
            )
            chunk_prompts = [
                cot_verdict_prompt(model, p, r) for p, r in zip(chunk_prompts, chunk_rationales, strict=False)
            ]
        edits = edits_for(chunk) if edits_for is not None else None
        judgments = judge_batch(
            backend,
            chunk_prompts,
            labels,
            readout=readout if shard_dir else None,
            edits=edits,
            judge=judge,
            names=[f"item {t.item.id!r} (order {t.order})" for t in chunk],
            span_names=("a", "b", RATIONALE_SLOT) if cot != "none" else ("a", "b"),
            intervention=intervention,
        )  # non-finite label probabilities fail here, before the batch's shard or lines are written
        if shard_dir is not None:
            write_shard(shard_dir, [t.key for t in chunk], judgments)
        append_judgments(
            judgments_path,
            [
                JudgmentRecord.of(judge, t.item.id, t.item.task, t.order, t.author_a, t.author_b, j, rationale)
                for t, j, rationale in zip(chunk, judgments, chunk_rationales, strict=False)
            ],
        )
        bar.update(len(chunk))
    bar.close()


def _chunk_rationales(
    model, chunk: Sequence[JudgeTask], prompts: Sequence[Prompt], given: Mapping[str, str], max_new_tokens: int
) -> list[str]:
    """Each task's rationale: the one given for its key, else generated now (greedy, stopped at the cue)."""
    missing = [index for index, task in enumerate(chunk) if task.key not in given]
    generated = (
        generate_rationales(
            model, [prompts[i] for i in missing], cue=COT_CUE, max_new_tokens=max_new_tokens, batch_size=len(chunk)
        )
        if missing
        else []
    )
    out = [given.get(task.key, "") for task in chunk]
    for index, text in zip(missing, generated, strict=False):
        out[index] = text
    return out


def cot_verdict_prompt(model, prompt: Prompt, rationale: str) -> TokenizedPrompt:
    """The prompt a chain-of-thought verdict is read from: the judge prompt, its rationale and "My final verdict
    is" (`with_rationale`), tokenized."""
    return tokenize_prompt(
        model.tokenizer, with_rationale(prompt, rationale, COT_CUE, "\n\n"), max_length=model.context_length or None
    )


def verdict_prompt(model, task: JudgeTask, *, ties: bool, cot: str = "none", rationale: str | None = None):
    """The tokenized prompt one task's verdict is read from, as `run_judging` builds it: the judge prompt (with
    `ties`), and with `cot` the rationale and the cue after it (without a rationale: the judge prompt that asks
    for one, its answer spans where the verdict prompt has them)."""
    if cot == "none":
        item = task.item
        return tokenized_judge_prompt(model, item.task, item.query, task.response_a, task.response_b, ties=ties)
    prompt = task_judge_prompt(model, task, ties=ties, cot=cot)
    if rationale is None:
        return tokenize_prompt(model.tokenizer, prompt, max_length=model.context_length or None)
    return cot_verdict_prompt(model, prompt, rationale)


def task_judge_prompt(model, task: JudgeTask, *, ties: bool, cot: str) -> Prompt:
    """The judge prompt of one task for this model's kind (untokenized: a rationale is generated from it)."""
    item = task.item
    return judge_prompt(
        model.tokenizer, item.task, item.query, task.response_a, task.response_b, kind=model.kind, ties=ties, cot=cot
    )
