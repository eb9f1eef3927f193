"""What a `Judge`'s open blocks do to one pass: the edits of its `applying` blocks (every kind of intervention,
compiled into one edit set) and the functions of its `hooks` blocks, chained at each hook point, and the
reference prompts and means that a mean or resample spec reads.

`interp.api.judge` holds the blocks; this module turns them into what `interp.core.judge.judge_batch` runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch

from interp.api.arguments import Authors
from interp.core.backends import Backend, Edits
from interp.core.spans import TokenizedPrompt
from interp.errors import InterpError
from interp.hooks.base import Intervention
from interp.hooks.node_data import interventions_builder, reference_means
from interp.hooks.nodes import NodeIntervention


def known_authors(authors: Sequence[Authors | None]) -> list[tuple] | None:
    """Every pair's (author of A, author of B), or None when any pair's authors are not given."""
    return None if any(a is None for a in authors) else [tuple(a) for a in authors]


def pass_edit(
    backend: Backend,
    active: Sequence[Intervention],
    hooks: Sequence[Mapping[str, Any]],
    *,
    own: str,
    authors: Sequence[Authors | None],
    means: Mapping[int, dict],
    pools: Mapping[int, list],
) -> Callable | None:
    """The edit builder of one pass (`judge_batch(..., edits=)`): every open intervention, of whatever kind,
    compiled for the pass's prompts (`interp.hooks.node_data.interventions_builder`; reference means and donors
    keyed by each spec's place in `active`, so nested blocks, of one spec object too, each read their own), then the
    user's hook functions at the same points; None when nothing is open."""
    if not active and not hooks:
        return None
    known = known_authors(authors)
    build = interventions_builder(active, backend, own=own, authors=known, means=dict(means), pools=dict(pools))
    tables = [Edits(sites=dict(h)) for h in hooks]

    def edits(batch, offsets, chunk) -> Edits:
        compiled = build(batch, offsets, chunk)
        for table in tables:  # the user's functions run after the interventions at the same point
            compiled = compiled.merged(table)
        return compiled

    return edits


def reference_prompts(
    reference: Any, prompt: Callable[..., TokenizedPrompt]
) -> tuple[list[TokenizedPrompt], list | None]:
    """The reference prompts of a mean or resample spec, built by `prompt(query, response_a, response_b, task=)`:
    a run (every item, both orders, as `interp intervene` uses when no selection split is given) or a list
    of (query, response_a, response_b[, authors]); with each prompt's authors where all are known."""
    from interp.run.judging import judge_tasks
    from interp.run.store import read_run

    root = getattr(reference, "path", reference)
    if isinstance(root, (str, Path)):
        run = read_run(Path(root))
        tasks = judge_tasks(run.items, run.responses, run.config.models)
        return [prompt(t.item.query, t.response_a, t.response_b, task=t.item.task) for t in tasks], [
            (t.author_a, t.author_b) for t in tasks
        ]
    if isinstance(reference, (bytes, Mapping)) or not hasattr(reference, "__iter__"):
        raise InterpError(
            "reference must be a run or a list of (query, response_a, response_b[, authors]), not "
            f"{type(reference).__name__}"
        )
    prompts, authors = [], []
    for entry in reference:
        if not isinstance(entry, (tuple, list)) or len(entry) not in (3, 4):
            raise InterpError(
                "each reference entry is (query, response_a, response_b) or (query, response_a, response_b, authors)"
            )
        prompts.append(prompt(*entry[:3]))
        authors.append(tuple(entry[3]) if len(entry) == 4 else None)
    return prompts, (None if any(a is None for a in authors) else authors)


def reference_data(
    backend: Backend,
    spec: NodeIntervention,
    reference: Any,
    prompt: Callable[..., TokenizedPrompt],
    *,
    own: str,
    batch_size: int,
) -> tuple[dict | None, list[TokenizedPrompt]]:
    """What a mean or resample spec reads: (the reference means, for `mean`; else None) and the reference
    prompts (resample's donors), from a run or a list of pairs (`reference_prompts`)."""
    if reference is None:
        raise InterpError(
            f"a {spec.op} intervention needs reference=: a run (its items) or a list of "
            "(query, response_a, response_b[, authors]) pairs"
        )
    prompts, authors = reference_prompts(reference, prompt)
    if spec.needs != "mean":
        return None, prompts
    with torch.inference_mode():
        return reference_means(backend, spec, prompts, own=own, authors=authors, batch_size=batch_size), prompts
