"""What node interventions read besides the activation, made by extra passes of the same judge: the reference
means (`mean`), the donors' final positions (`resample`) and the counterfactual prompt's activations (`patch`).

Every pass records only the hook points the specs name (read-only site hooks), so a mean or a patch keeps one
tensor per asked-for point, never a whole cache. `node_edit_builder` puts it together into the `edit` builder
that `judge_batch` / `run_judging` take, the one entry every caller (`Judge.applying`, the engine) uses.
"""

from __future__ import annotations

import hashlib
from typing import Mapping, Sequence

import torch
from torch import Tensor

from interp.core.backends import Backend, Batch, Edits, left_pad
from interp.core.judge import EditsBuilder
from interp.core.models import own_slot
from interp.core.spans import TokenizedPrompt
from interp.errors import InterpError
from interp.hooks.base import EditContext, Intervention, SiteData, compile_edits
from interp.hooks.nodes import NodeIntervention, position_rows

Authors = Sequence[tuple[str, str]] | None


class _AllKept(Exception):
    """Raised by the last recorder: the layers above the last point asked for are not run."""


def record_sites(runner: Backend, batch: Batch, names: Sequence[str]) -> dict[str, Tensor]:
    """One forward pass that keeps the activation at each named point (nothing is edited). On the hf backend
    the pass stops once the last point is kept (a patch at layer 20 of 30 runs two thirds of a pass)."""
    kept: dict[str, Tensor] = {}
    wanted = set(names)
    stop = runner.name == "hf"  # an exception through nnsight's or TransformerLens' hooks is theirs to wrap

    def keep(name: str):
        def fn(activation: Tensor) -> None:
            kept[name] = activation.detach().clone()
            if stop and wanted <= set(kept):
                raise _AllKept

        return fn

    try:
        runner.forward(batch, edits=Edits(sites={name: keep(name) for name in names}))
    except _AllKept:
        pass
    return kept


def reference_means(
    runner: Backend,
    spec: NodeIntervention,
    prompts: Sequence[TokenizedPrompt],
    *,
    own: str | None,
    authors: Authors,
    batch_size: int = 8,
) -> dict[str, Tensor]:
    """Per hook point of `spec`, the mean activation over `prompts` at positions of the spec's kind (float32)."""
    if not prompts:
        raise InterpError("a mean ablation needs a reference set of at least one prompt")
    names = spec.hook_names(runner.model.n_layers)
    sums: dict[str, Tensor] = {}
    count = 0
    pad = runner.model.tokenizer.pad_token_id
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start : start + batch_size]
        batch, offsets = left_pad([p.input_ids for p in chunk], pad)
        rows = position_rows(
            spec, batch, offsets, chunk, own=own, authors=authors[start : start + batch_size] if authors else None
        )
        kept = record_sites(runner, batch, names)
        for name in names:
            total = kept[name][rows.to(kept[name].device)].double().sum(0)
            sums[name] = sums[name] + total if name in sums else total
        count += int(rows.sum())
    if count == 0:
        raise InterpError(f"the reference prompts hold no position of kind {spec.positions!r} to average over")
    return {name: (total / count).float() for name, total in sums.items()}


def _swap(prompt: TokenizedPrompt) -> list[int]:
    """The pair in the other order, token for token: responses A and B trade places (the part between them stays)."""
    (a0, a1), (b0, b1) = prompt.spans["a"], prompt.spans["b"]
    if a1 > b0:
        raise InterpError("counterfactual 'swap' needs response A before response B in the prompt")
    ids = prompt.input_ids
    return ids[:a0] + ids[b0:b1] + ids[a1:b0] + ids[a0:a1] + ids[b1:]


def _with_reference(prompt: TokenizedPrompt, slot: str, reference: list[int], kind: str = "reference") -> list[int]:
    """The own answer's tokens replaced by `reference`'s, cut, or repeated from its start, to the own answer's
    token length (so every position stays where it was)."""
    start, end = prompt.spans[slot]
    if not reference:
        raise InterpError(f"counterfactual {kind!r} needs a non-empty answer to put in the own answer's place")
    length = end - start
    filled = (reference * (length // len(reference) + 1))[:length]
    return prompt.input_ids[:start] + filled + prompt.input_ids[end:]


def counterfactual_ids(
    spec: NodeIntervention,
    prompts: Sequence[TokenizedPrompt],
    *,
    tokenizer,
    own: str | None,
    authors: Authors,
    references: Sequence[str | None] | None,
) -> list[list[int]]:
    """Each prompt's counterfactual (`spec.counterfactual`), as token ids of the same length."""
    kind = spec.counterfactual
    if kind == "same":
        return [list(p.input_ids) for p in prompts]
    if kind == "swap":
        return [_swap(p) for p in prompts]
    out = []
    for row, prompt in enumerate(prompts):
        author_a, author_b = authors[row] if authors is not None else (None, None)
        slot = own_slot(author_a, author_b, own)
        if slot is None:
            raise InterpError(
                f"counterfactual {kind!r} replaces the judge's own answer: it needs the authors of both "
                "answers and a judge that wrote one"
            )
        if kind == "other":  # the other author's answer, from the prompt itself, in the own answer's place
            start, end = prompt.spans["b" if slot == "a" else "a"]
            out.append(_with_reference(prompt, slot, list(prompt.input_ids[start:end]), kind))
            continue
        reference = references[row] if references is not None else None
        if not reference or not reference.strip():
            raise InterpError("counterfactual 'reference' needs each item's reference answer; this item has none")
        out.append(
            _with_reference(
                prompt, slot, tokenizer(reference, add_special_tokens=False, split_special_tokens=True)["input_ids"]
            )
        )
    return out


def counterfactual_donors(
    runner: Backend,
    spec: NodeIntervention,
    batch: Batch,
    prompts: Sequence[TokenizedPrompt],
    *,
    own: str | None,
    authors: Authors,
    references,
) -> dict[str, Tensor]:
    """The counterfactual prompts' activations at the spec's points, aligned position by position with `batch`."""
    ids = counterfactual_ids(
        spec, prompts, tokenizer=runner.model.tokenizer, own=own, authors=authors, references=references
    )
    counter, _ = left_pad(ids, runner.model.tokenizer.pad_token_id)
    if counter.input_ids.shape != batch.input_ids.shape:
        raise InterpError("the counterfactual prompts do not have the prompts' lengths; patching needs them aligned")
    return record_sites(runner, counter, spec.hook_names(runner.model.n_layers))


def donor_index(spec: NodeIntervention, prompt: TokenizedPrompt, pool: Sequence[TokenizedPrompt]) -> int:
    """The index in `pool` of a row's resample donor: drawn by a hash of the seed and the row's tokens, never the
    prompt itself."""
    key = hashlib.sha256(f"{spec.seed}|{','.join(map(str, prompt.input_ids))}".encode()).hexdigest()
    index = int(key[:12], 16) % len(pool)
    for step in range(len(pool)):  # never the prompt itself
        candidate = (index + step) % len(pool)
        if pool[candidate].input_ids != prompt.input_ids:
            return candidate
    raise InterpError("resample needs a reference set with a prompt other than the one judged")


def resample_donors(
    runner: Backend, spec: NodeIntervention, prompts: Sequence[TokenizedPrompt], pool: Sequence[TokenizedPrompt]
) -> dict[str, Tensor]:
    """Each row's donor (a prompt of the pool drawn by a hash of the seed and the row's tokens): its final
    position's activation at the spec's points, as [batch, 1, ...] (broadcast over positions)."""
    if not pool:
        raise InterpError("resample needs a reference set of prompts to draw donors from")
    donors = [pool[donor_index(spec, p, pool)] for p in prompts]
    batch, _ = left_pad([d.input_ids for d in donors], runner.model.tokenizer.pad_token_id)
    return {
        name: activation[:, -1:]
        for name, activation in record_sites(runner, batch, spec.hook_names(runner.model.n_layers)).items()
    }


def _site_data(
    intervention: Intervention,
    index: int,
    runner: Backend,
    batch: Batch,
    prompts: Sequence[TokenizedPrompt],
    context: dict,
) -> SiteData:
    """What intervention `index` needs made before the pass (`needs`): its reference means, its counterfactual's
    or its donors' activations; nothing for a kind that needs none."""
    means, own, authors = context["means"], context["own"], context["authors"]
    if intervention.needs == "mean":
        if not means or index not in means:
            raise InterpError(f"{intervention.label}: a mean ablation needs its reference means; give a reference set")
        return SiteData(means=means[index])
    if intervention.needs == "counterfactual":
        donors = counterfactual_donors(
            runner, intervention, batch, prompts, own=own, authors=authors, references=context["references"]
        )
        return SiteData(donors=donors)
    if intervention.needs == "donor":
        pools = context["pools"]
        pool = pools.get(index) if pools is not None and index in pools else context["pool"]
        return SiteData(donors=resample_donors(runner, intervention, prompts, pool or ()))
    return SiteData()


def interventions_builder(
    interventions: Sequence[Intervention],
    runner: Backend,
    *,
    own: str | None,
    authors: Authors = None,
    references: Sequence[str | None] | None = None,
    means: dict[int, dict[str, Tensor]] | None = None,
    pool: Sequence[TokenizedPrompt] | None = None,
    pools: Mapping[int, Sequence[TokenizedPrompt]] | None = None,
) -> EditsBuilder:
    """The edit builder of `interventions` (any registered kinds) for one batch of prompts: what `judge_batch(...,
    edits=)` takes (`authors`/`references`: per row). `means[i]`: intervention i's reference means
    (`reference_means`); `pool`: the reference prompts resample draws from, or `pools[i]`: intervention i's own
    (each nested `Judge.applying` block its reference)."""
    from interp.hooks.compile import model_dtype

    model = runner.model
    context = {"means": means, "own": own, "authors": authors, "references": references, "pool": pool, "pools": pools}

    def build(batch: Batch, offsets: list[int], prompts: Sequence[TokenizedPrompt]) -> Edits:
        edits = Edits()
        for index, intervention in enumerate(interventions):
            with torch.inference_mode():
                data = _site_data(intervention, index, runner, batch, prompts, context)
            here = EditContext(
                batch, offsets, prompts, model.n_layers, model.n_heads, model_dtype(model.hf_model), own, authors, data
            )
            edits = edits.merged(compile_edits([intervention], here))
        return edits

    return build


def node_edit_builder(specs: Sequence[NodeIntervention], runner: Backend, **keys) -> EditsBuilder:
    """`interventions_builder` of node specs (the name the node kinds were built with)."""
    return interventions_builder(specs, runner, **keys)
