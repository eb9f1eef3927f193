"""Re-judging item-major over the clean pass's cached keys and values: verdict-position variants in one batch.

A study's variants whose edits sit only at the final (verdict) position (`interp.hooks.final_row`) need no full
pass each: for each (judge, item, order), one clean pass keeps the prompt's keys and values and its final
position's activations (`interp.core.backends.final_cached.clean_pass`, several prompts in one batch), then every
such variant of that prompt runs as one row of ONE final-token pass over that cache (`final_pass`, up to
`MAX_ROWS` rows a pass). A batch's cache is let go when its variants are done, so memory holds one batch's keys
and values at a time.

Each variant's judgments land where the full path puts them: the variant's key (`variant_key`) is unchanged, as
the results are the full pass's up to float rounding, so a study resumes from either path and shares its store
with every other study; the variant's file records `path = "final_cached"` (the full path writes "full").
`cached_problem` says why a (judge, variants) group cannot take this path (then `Judges.judged` runs the full one;
with `path = "cached"` forced it is one line instead).
"""

from __future__ import annotations

from typing import Sequence

from interp.core.backends import Backend, Batch, left_pad
from interp.core.backends.final_cached import cached_final_problem, clean_pass, final_pass
from interp.core.judge import judgments_from_logits, label_tokens
from interp.core.models import own_model
from interp.core.threads import rebalance_threads
from interp.data import Item
from interp.engine.variants import (
    Variant,
    check_rejudgeable,
    check_run_prompts,
    check_variants,
    reference_data,
    run_rationales,
    stored_variant,
    task_prompts,
    variant_key,
)
from interp.errors import InterpError
from interp.hooks.final_row import FinalActivations, RowInputs, final_row_edits, final_row_problem
from interp.results.codec import write_variant
from interp.run.judging import batches, judge_tasks, verdict_labels
from interp.run.records import JudgmentRecord, append_judgments, read_judgments
from interp.run.store import Run

PATH_OPTIONS = ("auto", "cached", "full")  # `--path`: the cached path where it can run, always, never
MAX_ROWS = 64  # rows of one final-token pass (variants of one prompt)
CLEAN_ROWS = 4  # prompts of one clean pass


def check_path_option(path: str) -> str:
    """`path` when it is one of `PATH_OPTIONS`, else one line."""
    if path not in PATH_OPTIONS:
        raise InterpError(f"unknown --path {path!r}; use one of {', '.join(PATH_OPTIONS)}")
    return path


def variant_problem(variant: Variant) -> str | None:
    """Why the variant cannot be judged over the cached final position (None: it can)."""
    if not variant.interventions:
        return "a variant without an intervention is the run's own judging"
    return final_row_problem(variant.interventions)


def cached_problem(run: Run, judge: str, backend: str, variants: Sequence[Variant]) -> str | None:
    """Why these variants of `judge` cannot take the cached path on this run (None: they can)."""
    if backend != "hf":
        return f"the cached path runs the hf backend, not {backend!r}"
    if run.config.cot != "none" and judge not in run.config.judge_specs:
        return "a judge from outside a chain-of-thought run writes its rationales first (the full path)"
    for variant in variants:
        problem = variant_problem(variant)
        if problem is not None:
            return f"variant {variant.name!r}: {problem}"
    return None


def refuse_forced(run: Run, judge: str, backend: str, variants: Sequence[Variant]) -> None:
    """With `--path cached`: one line when the cached path cannot represent a variant (checked before writing)."""
    problem = cached_problem(run, judge, backend, [v for v in variants if v.interventions])
    if problem is not None:
        raise InterpError(f"--path cached: the cached final-position path cannot represent this: {problem}")


def judge_cached(
    run: Run,
    judge: str,
    runner: Backend,
    variants: Sequence[Variant],
    *,
    items: Sequence[Item] | None = None,
    own: str | None = None,
    progress: bool = False,
) -> list[Variant]:
    """Judge `variants` (every one representable: `cached_problem`) item-major over the cached final position
    into the keyed store (module docstring); returns the variants it judged (those the prompts' lengths allow:
    the others are left to the full path)."""
    from tqdm import tqdm

    items = list(items) if items is not None else run.items
    own = own or own_model(judge)
    model = runner.model
    check_rejudgeable(run)
    check_run_prompts(run, judge, model)
    check_variants(model, variants)
    tasks = judge_tasks(items, run.responses, run.config.models)
    prompts = task_prompts(run, model, tasks, judge)
    if not tasks or cached_final_problem(model, max(len(p) for p in prompts)) is not None:
        return []
    # By the variant's place in the list, not its name: tests of one study name their controls' variants alike;
    # variants of one key (the same edit asked by two tests) are judged once.
    keyed: dict[str, Variant] = {}
    for variant in variants:  # a wrapped model: its weights enter the key
        keyed.setdefault(variant_key(run, judge, runner.name, variant, items, own, model), variant)
    judged, variants = list(variants), list(keyed.values())
    folders, done, data = {}, {}, {}
    activations = FinalActivations(runner)  # final-position activations by prompt: means, donors, shared by all
    for index, (key, variant) in enumerate(keyed.items()):
        folders[index] = folder = run.dir.variant(key)
        write_variant(
            folder,
            {"key": key, "judge": judge, "own": own, "backend": runner.name, "path": "final_cached"} | variant.record(),
        )
        done[index] = {r.key for r in read_judgments(folder / "judgments.jsonl", judge=judge)}
        needs = any(i.needs in ("mean", "donor") for i in variant.interventions)
        made = reference_data(run, runner, variant, own, folder, judge, activations.final_means) if needs else None
        data[index] = made or ({}, [])
    labels = label_tokens(model.tokenizer, verdict_labels(run.config.ties))
    rationales = run_rationales(run, judge)
    order = sorted(range(len(tasks)), key=lambda i: len(prompts[i]))  # similar lengths together: less padding
    bar = tqdm(total=len(tasks), desc=f"judging {judge} (final position, cached)", disable=not progress)
    for chunk in batches(order, CLEAN_ROWS):
        todo = [i for i in chunk if any(tasks[i].key not in done[v] for v in range(len(variants)))]
        if todo:
            _judge_chunk(
                run,
                judge,
                runner,
                variants,
                [tasks[i] for i in todo],
                [prompts[i] for i in todo],
                (folders, done, data, labels, rationales, activations, own),
            )
        bar.update(len(chunk))
    bar.close()
    return judged


def _judge_chunk(run: Run, judge: str, runner: Backend, variants, tasks, prompts, state) -> None:
    """One clean pass of the chunk's prompts, then each prompt's variants in final-token passes over its cache."""
    folders, done, data, labels, rationales, activations, own = state
    rebalance_threads()  # company that came or went since the last batch, as `judge_batch` does
    model = runner.model
    batch, offsets = left_pad([p.input_ids for p in prompts], model.tokenizer.pad_token_id)
    clean = clean_pass(model, batch, keep=activations.points())
    activations.add([p.input_ids for p in prompts], clean.sites)
    records: dict[int, list[JudgmentRecord]] = {index: [] for index in range(len(variants))}
    for row, (task, prompt) in enumerate(zip(tasks, prompts, strict=True)):
        wanted = [index for index in range(len(variants)) if task.key not in done[index]]
        padded = Batch(batch.input_ids[row : row + 1], batch.attention_mask[row : row + 1])
        for group in batches(wanted, MAX_ROWS):
            edits = []
            for index in group:
                means, pool = data[index]
                inputs = RowInputs(own, [(task.author_a, task.author_b)], [task.item.reference], means, pool)
                edits.append(
                    final_row_edits(
                        variants[index].interventions, activations, padded, offsets[row : row + 1], [prompt], inputs
                    )
                )
            logits = final_pass(model, clean.row(row), edits)
            for index, variant_logits in zip(group, logits, strict=True):
                (judgment,) = judgments_from_logits(
                    variant_logits,
                    [prompt],
                    labels,
                    judge=judge,
                    names=[f"item {task.item.id!r} (order {task.order})"],
                    intervention=variants[index].name,
                )
                records[index].append(
                    JudgmentRecord.of(
                        judge,
                        task.item.id,
                        task.item.task,
                        task.order,
                        task.author_a,
                        task.author_b,
                        judgment,
                        rationales.get(task.key),
                    )
                )
    for index in range(len(variants)):  # the chunk's judgments of each variant at once (a killed job loses one chunk)
        if records[index]:
            append_judgments(folders[index] / "judgments.jsonl", records[index])
            done[index] |= {t.key for t in tasks}


def prejudge(run: Run, judges, groups: Sequence[tuple[str, str | None, list | None, list[Variant]]]) -> None:
    """Before a job's (judge, variant) tasks run one by one: each group's (judge, own, items, variants) variants
    that the cached path can represent and the store does not hold yet, judged item-major over the cached final
    position (`judges.path` "full": none). A judge is let go after its last group (`Judges.release`)."""
    if judges.path == "full":
        return
    last = {judge: index for index, (judge, *_) in enumerate(groups)}
    if judges.path == "cached":  # every group checked before the first is judged: a refusal writes nothing
        for judge, _, _, variants in groups:
            refuse_forced(run, judge, judges.backend_of(run, judge), variants)
    left: set[str] = set()  # judges with a variant the full path still judges: kept for it
    for index, (judge, own, items, variants) in enumerate(groups):
        if judge in judges.held:  # a Judge the caller holds (its backend, open blocks): its tasks compose them
            left.add(judge)
            continue
        backend, model = judges.backend_of(run, judge), judges.models.models.get(judge)
        todo = [v for v in variants if v.interventions and variant_problem(v) is None]
        todo = [v for v in todo if stored_variant(run, judge, backend, v, items, own, model) is None]
        if todo and cached_problem(run, judge, backend, todo) is None:
            judge_cached(run, judge, judges.runner(judge, run), todo, items=items, own=own)
        model = judges.models.models.get(judge)
        if any(stored_variant(run, judge, backend, v, items, own, model) is None for v in variants):
            left.add(judge)
        if last[judge] == index and judge not in left:
            judges.release(judge)


def judge_one_cached(run: Run, judge: str, judges, variant: Variant, *, items=None, own=None):
    """P(own wins) per item under one variant through the cached path, or None where it cannot take it (then the
    caller runs the full path; with `judges.path` "cached" that is one line instead)."""
    from interp.engine.variants import own_probabilities

    backend = judges.backend_of(run, judge)
    if judges.path == "cached":
        refuse_forced(run, judge, backend, [variant])
    if judge in judges.held and judges.path != "cached":  # a held Judge runs on its own backend: the full path
        return None
    if cached_problem(run, judge, backend, [variant]) is not None:
        return None
    items = list(items) if items is not None else run.items
    if not judge_cached(run, judge, judges.runner(judge, run), [variant], items=items, own=own):
        if judges.path == "cached":
            raise InterpError("--path cached: a prompt of this run is too short or too long for the cached path")
        return None
    own = own or own_model(judge)
    model = judges.models.models.get(judge)
    path = run.dir.variant(variant_key(run, judge, backend, variant, items, own, model)) / "judgments.jsonl"
    return own_probabilities(run, judge, read_judgments(path, judge=judge), items, own)
