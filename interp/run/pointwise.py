"""SALIERI's pointwise judging (`mode = "pointwise"`): every judge scores every author's answer alone, 1-5, with the
thesis' rubric prompt (`interp.core.rubric`).

Per (judge, item, author): the judge writes its feedback (greedy, up to `max_rationale_tokens`, stopped at
"[RESULT]"); then the prompt, the feedback and "[RESULT]" (`result_cue`: with a space where the tokenizer writes
" 5" as a space and a digit) are read in one pass. `probs` are the next-token
probabilities of the score labels 1-5 (each label's single-token spellings, renormalised over the five, as
pairwise labels are), `expected_score = sum_k k P(k)`, and `parsed_score` is the score the judge writes after
"[RESULT]" under greedy decoding (its most likely next token, when that is a digit 1-5; else None). Span
attention is read at that position over the answer (`a`) and the feedback (`rationale`).

`pointwise.jsonl` holds one line per judgment, appended batch by batch (resumable); attention shards go to
`attention/<judge>.pointwise/` and are consolidated to `[item, author, layer, head, span]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from safetensors.torch import save
from tqdm.auto import tqdm

from interp.core.backends import Backend
from interp.core.judge import judge_batch, label_tokens
from interp.core.rubric import RESULT_MARK, SCORE_LABELS, pointwise_prompt, result_cue
from interp.core.spans import tokenize_prompt
from interp.data import Item
from interp.metrics.dbg import label_mass_reliability
from interp.results import codec
from interp.results.run_files import AttentionIndex
from interp.run.attention import index_header, read_shards, stack_shards, write_shard
from interp.run.rationale import RATIONALE_SLOT, generate_rationales, with_rationale
from interp.run.store import RunDir
from interp.storage import (
    atomic_write_bytes,
)

POINTWISE_SPANS = ("a", RATIONALE_SLOT)


@dataclass(frozen=True)
class PointwiseTask:
    """One answer to score: `author`'s `response` to `item`; keyed `item_id|author` (`pointwise_key`)."""

    item: Item
    author: str
    response: str


def pointwise_key(item_id: str, author: str) -> str:
    """The key of one pointwise judgment: item and author."""
    return f"{item_id}|{author}"


def pointwise_tasks(
    items: Sequence[Item], responses: dict[str, dict[str, str]], authors: Sequence[str]
) -> list[PointwiseTask]:
    """Every (item, author) answer of the run to score, items in order."""
    return [PointwiseTask(item, author, responses[author][item.id]) for item in items for author in authors]


def expected_score(probs: dict[str, float]) -> float:
    """sum_k k P(k) over the score labels."""
    return sum(int(label) * p for label, p in probs.items())


def read_pointwise(path: Path, judge: str | None = None) -> list[dict]:
    """The lines of a run's pointwise.jsonl (a judge's only, with `judge`)."""
    return [row for row in codec.read_records(path) if judge is None or row["judge"] == judge]


def run_pointwise_judging(
    backend: Backend,
    judge: str,
    tasks: Sequence[PointwiseTask],
    *,
    out: tuple[Path, Path | None],
    batch_size: int,
    max_rationale_tokens: int,
    readout: str | None = "final",
    progress: bool = True,
) -> None:
    """Judge every task not yet in pointwise.jsonl: feedback, then the score read after "[RESULT]". `out`: that
    file's path and the folder of the attention shards (None: no readout written)."""
    path, shard_dir = out
    model = backend.model
    labels = label_tokens(model.tokenizer, SCORE_LABELS)
    done = {pointwise_key(row["item_id"], row["author"]) for row in read_pointwise(path, judge)}
    todo = [t for t in tasks if pointwise_key(t.item.id, t.author) not in done]
    bar = tqdm(total=len(todo), desc=f"pointwise {judge}", unit="judgment", disable=not progress or not todo)
    for start in range(0, len(todo), batch_size):
        chunk = todo[start : start + batch_size]
        prompts = [
            pointwise_prompt(model.tokenizer, t.item.task, t.item.query, t.response, t.item.reference, kind=model.kind)
            for t in chunk
        ]
        rationales = generate_rationales(
            model, prompts, cue=RESULT_MARK, max_new_tokens=max_rationale_tokens, batch_size=batch_size
        )
        cue = result_cue(model.tokenizer)
        verdict = [
            tokenize_prompt(model.tokenizer, with_rationale(p, r, cue), max_length=model.context_length or None)
            for p, r in zip(prompts, rationales, strict=False)
        ]
        judgments = judge_batch(
            backend,
            verdict,
            labels,
            readout=readout if shard_dir else None,
            judge=judge,
            names=[f"item {t.item.id!r} ({t.author})" for t in chunk],
            span_names=POINTWISE_SPANS,
        )
        if shard_dir is not None:
            write_shard(shard_dir, [pointwise_key(t.item.id, t.author) for t in chunk], judgments)
        rows = []
        for task, rationale, judgment in zip(chunk, rationales, judgments, strict=False):
            written = model.tokenizer.decode([judgment.top_token]).strip()
            rows.append(
                {
                    "judge": judge,
                    "item_id": task.item.id,
                    "task": task.item.task,
                    "author": task.author,
                    "probs": judgment.probs,
                    "expected_score": expected_score(judgment.probs),
                    "parsed_score": int(written) if written in SCORE_LABELS else None,
                    "rationale": rationale,
                    "label_mass": judgment.label_mass,
                    "top_is_label": judgment.top_is_label,
                    "n_tokens": judgment.n_tokens,
                    "spans": {name: list(span) for name, span in judgment.spans.items()},
                }
            )
        codec.append_records(path, rows)
        bar.update(len(chunk))
    bar.close()


def consolidate_pointwise_attention(
    paths: RunDir, judge: str, model, items: Sequence[Item], authors: Sequence[str], readout: str
) -> None:
    """Shards -> `attention/<judge>.pointwise.safetensors` (`mass [item, author, layer, head, span]`, spans a and
    rationale; `span_tokens [item, author, span]`) with a JSON index."""
    by_key = read_shards(paths.pointwise_attention(judge, ""))
    keys = [[pointwise_key(item.id, author) for author in authors] for item in items]
    shape = (len(authors), model.n_layers, model.n_heads, len(POINTWISE_SPANS))
    mass, counts = stack_shards(
        by_key, keys, shape, f"pointwise attention for {judge} {{key}} is missing; resume the run"
    )
    index = index_header(judge, model, readout) | {
        "dims": ["item", "author", "layer", "head", "span"],
        "authors": list(authors),
        "spans": list(POINTWISE_SPANS),
        "items": [item.id for item in items],
    }
    atomic_write_bytes(paths.pointwise_attention(judge), save({"mass": mass, "span_tokens": counts}))
    codec.write_file(paths.pointwise_attention(judge, ".json"), AttentionIndex, index)


def pointwise_summary(rows: Sequence[dict], authors: Sequence[str]) -> dict:
    """Per judge: per author the mean expected score, the mean parsed score (over answers whose score parsed),
    how many parsed, and the mean probability on the score labels with the reliability flag it gives (under
    `MIN_LABEL_MASS`, as for pairwise labels: `unreliable_because` says so and `reliable` is False)."""
    out: dict = {}
    for judge in sorted({row["judge"] for row in rows}):
        mine = [row for row in rows if row["judge"] == judge]
        mass = sum(r["label_mass"] for r in mine) / len(mine)
        weak = label_mass_reliability(mass)
        out[judge] = {"mean_label_mass": mass, "unreliable_because": weak, "reliable": not weak, "authors": {}}
        for author in authors:
            scored = [r for r in mine if r["author"] == author]
            parsed = [r["parsed_score"] for r in scored if r["parsed_score"] is not None]
            out[judge]["authors"][author] = {
                "n": len(scored),
                "mean_expected_score": sum(r["expected_score"] for r in scored) / len(scored) if scored else None,
                "n_parsed": len(parsed),
                "mean_parsed_score": sum(parsed) / len(parsed) if parsed else None,
            }
    return out
