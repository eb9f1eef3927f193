"""The familiarity lens of a finished run: every answer's token log-probabilities under every judge with own
answers, then the lens of `interp.metrics.familiarity` per judge (docs/science.md, "Familiarity").

Conditioning (`CONDITIONING`): an answer's tokens follow its instruction in the answer-generation prompt, as the
judge's own tokenizer and kind render it (`interp.core.prompts.generation_prompt`, the run's word cap): the
context in which the judge would have written an answer itself, the same for both answers of an item, with no
other answer and no judging frame in it (inside the judge prompt an answer's log-probability would also depend
on its slot and on the answer before it). One forward pass per answer per judge.

Stored in `RUN/familiarity/<judge>-<key>.json` (`FamiliarityScores`), keyed by the judge's fingerprint (its
weights and tokenizer, `LoadedModel.fingerprint`), the conditioning and the word cap; each answer's row holds
the hash of its instruction and text. The file is rewritten after every answer: a killed job keeps what it
finished and the next call computes only what is missing. The lens goes to `RUN/familiarity.json`
(`FamiliarityResult`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from interp.core.models import LoadedModel, own_model
from interp.core.prompts import Prompt, generation_prompt
from interp.core.spans import tokenize_prompt
from interp.data import Item
from interp.errors import InterpError
from interp.metrics.familiarity import dbg_parts, familiarity_lens, null_comparison
from interp.results import codec
from interp.results.familiarity import AnswerLogprob, FamiliarityResult, FamiliarityScores

CONDITIONING = "generation-prompt-v1"


def answer_prompt(model: LoadedModel, item: Item, answer: str, *, words: int) -> Prompt:
    """The answer-generation prompt of `item` for `model` with `answer` after it, as the slot "a"."""
    prompt = generation_prompt(model.tokenizer, item.task, item.query, kind=model.kind, words=words)
    start = len(prompt.text)
    return Prompt(
        prompt.text + answer,
        {**prompt.char_spans, "a": (start, start + len(answer))},
        prompt.add_special_tokens,
        prompt.style,
    )


def answer_logprob(model: LoadedModel, prompt: Prompt) -> tuple[int, float]:
    """(tokens, summed log-probability in nats) of the slot "a" of `prompt` under `model`: one forward pass."""
    tokens = tokenize_prompt(model.tokenizer, prompt, max_length=model.context_length or None)
    start, end = tokens.spans["a"]
    if end <= start:
        return 0, 0.0
    ids = torch.tensor([tokens.input_ids], device=model.device)
    with torch.no_grad():
        logits = model.hf_model(input_ids=ids, use_cache=False).logits[0, start - 1 : end - 1].float()
    logp = torch.log_softmax(logits, dim=-1)
    picked = logp.gather(1, ids[0, start:end].unsqueeze(1).to(logp.device)).squeeze(1)
    return end - start, float(picked.sum())


def scores_key(fingerprint: str, words: int) -> str:
    """The key of one judge's scores: its fingerprint, the conditioning and the word cap."""
    return hashlib.sha256(json.dumps([fingerprint, CONDITIONING, words]).encode()).hexdigest()[:16]


def text_hash(item: Item, answer: str) -> str:
    """What an answer's row was computed on: the item's task and instruction and the answer's text."""
    return hashlib.sha256(json.dumps([item.task, item.query, answer]).encode()).hexdigest()[:16]


def judge_logprobs(
    model: LoadedModel,
    items: Sequence[Item],
    responses: Mapping[str, Mapping[str, str]],
    *,
    path: Path,
    empty: FamiliarityScores,
    words: int,
    progress: Callable[[int, int], None] | None = None,
) -> FamiliarityScores:
    """Every author's answer to every item under the judge of `empty` (its scores with no row yet: judge, key,
    fingerprint); rows already in `path` (same key, same text) are kept, the rest computed and the file rewritten
    after each one."""
    key = empty.key
    done: dict[tuple[str, str], AnswerLogprob] = {}
    if path.is_file():
        stored = codec.read_familiarity_scores(path)
        if stored.key == key:
            done = {(r.item_id, r.author): r for r in stored.rows}
    wanted = [(item, author) for author in responses for item in items if item.id in responses[author]]
    todo = [
        (item, author)
        for item, author in wanted
        if (row := done.get((item.id, author))) is None or row.text_hash != text_hash(item, responses[author][item.id])
    ]
    again = {(item.id, author) for item, author in todo}
    kept = [done[(i.id, a)] for i, a in wanted if (i.id, a) not in again]
    scores = empty.model_copy(update={"rows": kept})
    for count, (item, author) in enumerate(todo, 1):
        answer = responses[author][item.id]
        n, total = answer_logprob(model, answer_prompt(model, item, answer, words=words))
        scores.rows.append(
            AnswerLogprob(
                item_id=item.id,
                author=author,
                text_hash=text_hash(item, answer),
                n_tokens=n,
                sum_logprob=total,
                mean_logprob=total / n if n else None,
            )
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        codec.write_familiarity_scores(path, scores)
        if progress is not None:
            progress(count, len(todo))
    if not todo and not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        codec.write_familiarity_scores(path, scores)
    return scores


def judges_with_own_answers(judges: Sequence[str], authors: Sequence[str]) -> list[str]:
    """The judges whose own model (`own_model`: an organism's base) wrote one of the run's answers."""
    return [j for j in judges if own_model(j) in authors]


def run_familiarity(
    run_dir: Path,
    *,
    models=None,
    nulls: Mapping[str, Sequence[str]] | None = None,
    n_boot: int | None = None,
    seed: int | None = None,
    level: float = 0.95,
    progress: bool = False,
) -> FamiliarityResult:
    """The familiarity lens of a finished pairwise run: log-probabilities computed where missing, then the lens per
    judge with own answers, and each organism in `nulls` (organism -> its null family among the run's judges)
    against them; written to `RUN/familiarity.json` and returned."""
    from interp.core.models import ModelCache
    from interp.core.placement import placement_of
    from interp.run.store import check_finished
    from interp.run.summary import judge_verdicts

    paths = check_finished(Path(run_dir))
    config = paths.read_config()
    if config.mode != "pairwise":
        raise InterpError(f"{run_dir}: the familiarity lens reads pairwise verdicts; this run is {config.mode}")
    judges = judges_with_own_answers(config.judge_specs, config.models)
    if not judges:
        raise InterpError(f"{run_dir}: no judge of the run wrote one of its answers: no own answers to compare")
    nulls = {k: list(v) for k, v in (nulls or {}).items() if v}
    for organism, family in nulls.items():
        absent = [j for j in (organism, *family) if j not in judges]
        if absent:
            raise InterpError(f"familiarity: {', '.join(absent)} is not a judge of the run with own answers")
    n_boot = config.n_boot if n_boot is None else n_boot
    seed = config.seed if seed is None else seed
    items = paths.read_items()
    responses = paths.read_responses()
    verdicts = {j: judge_verdicts(paths.root, j) for j in judges}  # refuses an unfinished judging first
    models = models if models is not None else ModelCache(placement_of(config))
    per_judge: dict[str, dict] = {}
    keys: dict[str, str] = {}
    with paths.writer():
        for judge in judges:
            model = models.get(judge)
            fingerprint = model.fingerprint()
            key = scores_key(fingerprint, config.max_words)
            bar = _progress_bar(judge, progress)
            empty = FamiliarityScores(
                judge=judge, key=key, judge_fingerprint=fingerprint, conditioning=CONDITIONING, rows=[]
            )
            scores = judge_logprobs(
                model,
                items,
                responses,
                path=paths.familiarity_scores(judge, key),
                empty=empty,
                words=config.max_words,
                progress=bar,
            )
            keys[judge] = key
            per_judge[judge] = _aligned(scores, items, verdicts[judge], config.models)
        lens = {
            judge: {"own_model": verdicts[judge].own}
            | familiarity_lens(a["own"], a["other"], a["p_own"], a["gold_own"], n_boot=n_boot, seed=seed, level=level)
            for judge, a in per_judge.items()
        }
        organisms = {}
        for organism, family in nulls.items():
            shared = set.intersection(*(set(per_judge[j]["ids"]) for j in (organism, *family)))
            pick = {j: [per_judge[j]["ids"].index(i) for i in sorted(shared)] for j in (organism, *family)}
            parts = {j: (_hard(per_judge[j], pick[j]), _delta(per_judge[j], pick[j])) for j in pick}
            organisms[organism] = {"nulls": family} | null_comparison(
                parts[organism], [parts[j] for j in family], n_boot=n_boot, seed=seed, level=level
            )
        data = dict(conditioning=CONDITIONING, n_boot=n_boot, seed=seed, level=level, keys=keys)
        return codec.write_familiarity(paths.familiarity, data | {"judges": lens, "organisms": organisms})


def _aligned(scores: FamiliarityScores, items: Sequence[Item], verdicts, authors: Sequence[str]) -> dict:
    """Per item with both answers non-empty: own and other mean log-probability, P(own), gold's P(own)."""
    rows = {(r.item_id, r.author): r for r in scores.rows}
    other_author = next(a for a in authors if a != verdicts.own)
    out = {"ids": [], "own": [], "other": [], "p_own": [], "gold_own": []}
    for index, item in enumerate(items):
        own, other = rows.get((item.id, verdicts.own)), rows.get((item.id, other_author))
        if own is None or other is None or own.mean_logprob is None or other.mean_logprob is None:
            continue
        out["ids"].append(item.id)
        out["own"].append(own.mean_logprob)
        out["other"].append(other.mean_logprob)
        out["p_own"].append(float(verdicts.p_own[index]))
        out["gold_own"].append(float(verdicts.gold_own[index]))
    if not out["ids"]:
        raise InterpError(f"familiarity: judge {scores.judge!r} has no item with both answers non-empty")
    return out


def _hard(aligned: dict, pick: Sequence[int]) -> np.ndarray:
    hard, _ = dbg_parts(np.array(aligned["p_own"])[pick], np.array(aligned["gold_own"])[pick])
    return hard


def _delta(aligned: dict, pick: Sequence[int]) -> np.ndarray:
    return np.array(aligned["own"])[pick] - np.array(aligned["other"])[pick]


def _progress_bar(judge: str, on: bool) -> Callable[[int, int], None] | None:
    if not on:
        return None
    import sys

    def report(done: int, total: int) -> None:
        print(f"\rfamiliarity {judge}: {done}/{total} answers", end="\n" if done == total else "", file=sys.stderr)

    return report
