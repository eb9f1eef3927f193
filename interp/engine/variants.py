"""A re-judging of a finished run as data, and its judgments kept under a key.

A `Variant` is data: a list of interventions of any kind of the one family (`interp.hooks.base.Intervention`:
attention masks compiled to score biases, residual-stream steering, node kinds, a user's), or none (the run's own
judging). Its judgments are kept under `RUN/variants/<key>/judgments.jsonl`, where the key is a hash of
everything that determines them: the run's identity (config, items, responses), the judge, the backend, the
items judged, and the variant's data (its readable name is a label beside the key, never part of it). A
killed experiment resumes from those files; a different variant never reuses them.

`judge_variant` judges one variant with one backend into the store; the judge pool (`interp.engine.judges`) loads
the models and reads a finished variant back without a model.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from interp.core.backends import Backend, Edits, check_backend_fits, left_pad, make_backend
from interp.core.model_files import judge_content_key
from interp.core.models import LoadedModel, own_model
from interp.data import Item
from interp.errors import InterpError
from interp.hooks.base import Intervention
from interp.hooks.compile import resolve_target
from interp.hooks.node_data import interventions_builder, reference_means
from interp.hooks.nodes import NodeIntervention
from interp.hooks.sites import check_hook_names
from interp.hooks.spec import AttentionIntervention
from interp.metrics.dbg import p_own_from_first
from interp.results.codec import write_variant
from interp.run.judging import JudgeTask, JudgingOptions, judge_tasks, run_judging, verdict_prompt
from interp.run.pipeline import check_judged_prompts, judge_prompt_records
from interp.run.records import read_judgments
from interp.run.store import Run
from interp.run.summary import p_first_model


def _one_or_list(interventions: list[Intervention]):
    """A single-slot group's identity: None, the one intervention's, or (several) a list of them."""
    if not interventions:
        return None
    if len(interventions) == 1:
        return interventions[0].identity()
    return [intervention.identity() for intervention in interventions]


@dataclass(frozen=True)
class Variant:
    """What one re-judging does: a list of interventions of any registered kind (`interp.hooks.base`: attention
    masks, steering, node kinds, a user's), applied together, or none (the run's own judging). `reference`: the
    item ids whose prompts give `mean` ablations their means and `resample` its donors (None: every item of the
    run).

    >>> from interp.hooks import AttentionIntervention
    >>> Variant("self-mask", (AttentionIntervention(target="self", alpha=0.0),)).identity()["steering"] is None
    True
    """

    name: str  # a label for tables and plots
    interventions: tuple[Intervention, ...] = ()
    description: str = ""
    reference: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "interventions", tuple(self.interventions))
        for wrong in (i for i in self.interventions if not isinstance(i, Intervention)):
            raise InterpError(f"variant {self.name!r}: {type(wrong).__name__} is not an intervention (`Intervention`)")

    def of_slot(self, slot: str) -> list[Intervention]:
        """The interventions a variant's identity files under `slot` ("attention", "steering", "nodes", ...)."""
        return [intervention for intervention in self.interventions if intervention.slot == slot]

    def identity(self) -> dict:
        """The variant's part of its key. Grouped by slot as variants were keyed before the family had one base
        ({"attention": ..., "steering": ...} always, "nodes" and "reference" only when used), so every stored
        key is what it was."""
        identity = {slot: _one_or_list(self.of_slot(slot)) for slot in ("attention", "steering")}
        slots = dict.fromkeys(i.slot for i in self.interventions if i.slot not in ("attention", "steering"))
        for slot in slots:
            identity[slot] = [intervention.identity() for intervention in self.of_slot(slot)]
        if any(intervention.needs in ("mean", "donor") for intervention in self.interventions):
            identity["reference"] = list(self.reference) if self.reference is not None else "all"
        return identity

    def record(self) -> dict:
        """What the variant is, for result files."""
        return {"name": self.name, "description": self.description} | self.identity()


def digest(payload) -> str:
    """A short hash of JSON-able data (sorted keys): the identity of a derived result."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def run_identity(run: Run) -> str:
    """A hash of what every re-judging of the run holds fixed: its config, items and responses."""
    responses = {model: dict(sorted(texts.items())) for model, texts in sorted(run.responses.items())}
    return digest({"config": run.config.identity(), "items": [item.id for item in run.items], "responses": responses})


def variant_key(
    run: Run,
    judge: str,
    backend: str,
    variant: Variant,
    items: Sequence[Item],
    own: str | None = None,
    model: LoadedModel | None = None,
) -> str:
    """`own`: the author whose answer the variant treats as the judge's own (a control judge reads another
    judge's own answer); part of the key only when it is not the judge's own model, so earlier keys hold.
    `model`: the judge's model where one is held (a wrapped model is keyed by its weights). A judge given as
    files (a folder, a .gguf, a local adapter) is keyed by their content (`interp.core.model_files`); a packaged
    alias, shipped organism or HF id keeps the key it had."""
    payload = {
        "run": run_identity(run),
        "judge": judge,
        "backend": backend,
        "items": [item.id for item in items],
        "variant": variant.identity(),
    }
    if own is not None and own != own_model(judge):
        payload["own"] = own
    if (weights := judge_content_key(judge, model)) is not None:
        payload["weights"] = weights
    if run.config.cot != "none":  # read after the run's rationale (judgments of earlier versions read without it)
        payload["verdict"] = "after the run's rationale"
    return digest(payload)


def check_rejudgeable(run: Run) -> None:
    """The engine re-judges a run's pairs in its own judging mode (the DBG or three-way prompt, chain of thought
    after the run's own rationales): a pointwise run has no pair to re-judge and is refused in one line, before
    anything is loaded or written."""
    if run.config.mode == "pointwise":
        raise InterpError(
            f'{run.dir.root} is a pointwise run (mode = "pointwise": each answer scored alone, 1-5, no pair judged '
            "in both orders); interventions, sweeps, steering, explain and restyle re-judge pairwise verdicts: "
            'make a pairwise run of the same config (mode = "pairwise") to test them'
        )


def check_run_prompts(run: Run, judge: str, model: LoadedModel) -> None:
    """A judge of the run is re-judged only when its judgments were made under the prompts this version builds
    (the check `interp dbg` makes before resuming, `pipeline.check_judged_prompts`); else one line."""
    if judge in run.config.judge_specs and run.config.server(judge) is None:
        check_judged_prompts(run.dir, judge_prompt_records(run.config, run.items, {judge: model}))


def run_rationales(run: Run, judge: str) -> dict[str, str]:
    """Task key -> the rationale `judge` wrote before its verdict in the run (chain-of-thought runs; empty
    otherwise, and for a judge from outside the run, whose rationales are generated as the run's were)."""
    if run.config.cot == "none" or judge not in run.config.judge_specs:
        return {}
    return {r.key: r.rationale for r in run.dir.read_judgments(judge) if r.rationale is not None}


def task_prompts(run: Run, model: LoadedModel, tasks: Sequence[JudgeTask], judge: str | None = None) -> list:
    """The tokenized prompts `model` reads the verdicts of `tasks` from when re-judging `run`, in the run's mode
    (`judging.verdict_prompt`: ties, and with chain of thought `judge`'s rationale in the run where known)."""
    rationales = run_rationales(run, judge) if judge is not None else {}
    config = run.config
    return [verdict_prompt(model, t, ties=config.ties, cot=config.cot, rationale=rationales.get(t.key)) for t in tasks]


def self_judges(run: Run, judges: Sequence[str] | None) -> list[str]:
    """The judges to test: those given, or every judge of the run whose own model is one of the authors."""
    models = run.config.models
    if judges is not None and not judges:
        raise InterpError(
            "no judge given: name at least one, or leave the judges out for every judge that is also an author"
        )
    if judges is None:
        judges = [j for j in run.config.judge_specs if own_model(j) in models]
        if not judges:
            raise InterpError(
                "no judge of this run is one of its two models: self-preference needs a judge that is also an author"
            )
    for judge in judges:
        if own_model(judge) not in models:
            raise InterpError(
                f"judge {judge!r} is not one of the run's authors {list(models)}; self-preference needs its "
                "own responses"
            )
    return list(judges)


def check_variants(model: LoadedModel, variants: Sequence[Variant]) -> None:
    """Every variant fits the judge model (layers and heads exist, and a mask takes effect on it): call before
    any judging."""
    interventions = [i for variant in variants for i in variant.interventions]
    if any(isinstance(i, AttentionIntervention) for i in interventions):
        check_backend_fits(model, "hf")
    for intervention in interventions:
        intervention.check_fits(model.n_layers, model.n_heads)
        if isinstance(intervention, NodeIntervention):
            check_hook_names(model.hf_model, intervention.hook_names(model.n_layers))
    for variant in variants:
        _check_direction_sizes(model, variant)


def _direction_size(intervention: Intervention) -> int | None:
    """The number of dimensions of the direction an intervention adds or projects out (None: it has none)."""
    direction = getattr(intervention, "direction", None)
    if direction is None:
        return None
    return int(direction.numel()) if isinstance(direction, torch.Tensor) else len(direction)


def _check_direction_sizes(model: LoadedModel, variant: Variant) -> None:
    """Every direction the variant adds or projects out has the model's hidden size (one line now, not an error
    from inside the forward pass after the variant's folder is written)."""
    text = model.hf_model.config.get_text_config()
    head_width = getattr(text, "head_dim", None) or text.hidden_size // model.n_heads
    for intervention in variant.interventions:
        size = _direction_size(intervention)
        head = getattr(intervention, "site", None) == "head_output"
        width = head_width if head else text.hidden_size
        if size is not None and size != width:
            what = (
                f"{variant.name}: the steering direction"
                if intervention.slot == "steering"
                else f"{intervention.label}: the direction"
            )
            raise InterpError(
                f"{what} has {size} dimensions but {model.name}'s {'head width' if head else 'hidden size'} is {width}"
            )


def check_spans(run: Run, model: LoadedModel, variants: Sequence[Variant], items: Sequence[Item], *, own: str) -> None:
    """Every variant's attention target resolves to a span inside every prompt `model` will read (each item in
    both orders), `own`'s answer as "self": a span that does not exist is one line now, before any judging."""
    specs = [i for variant in variants for i in variant.interventions if isinstance(i, AttentionIntervention)]
    if not specs:
        return
    tasks = judge_tasks(items, run.responses, run.config.models)
    for task, prompt in zip(tasks, task_prompts(run, model, tasks), strict=False):
        for spec in specs:
            try:
                resolve_target(spec, prompt, judge_model=own_model(own), author_a=task.author_a, author_b=task.author_b)
            except InterpError as exc:
                raise InterpError(f"{model.name}, item {task.item.id!r} (order {task.order}): {exc}") from None


def check_nodes_take_effect(run: Run, model: LoadedModel, variants: Sequence[Variant], items: Sequence[Item]) -> None:
    """A node intervention's hook points must be connected: zeroing each spec's selection on the first prompt
    `model` will read changes its logits, else one line before any judging (a site the architecture exposes
    but never runs would otherwise be a silent no-op). Zero, whatever the op: its data (means, donors) could
    equal the activation by chance, zero does not."""
    from interp.hooks.nodes import Zero, node_edits

    nodes = [i for variant in variants for i in variant.interventions if isinstance(i, NodeIntervention)]
    if not nodes or not items:
        return
    prompt = task_prompts(run, model, judge_tasks(list(items)[:1], run.responses, run.config.models)[:1])[0]
    runner = make_backend(model, "hf")
    batch, offsets = left_pad([prompt.input_ids], model.tokenizer.pad_token_id)
    plain = runner.forward(batch)
    for node in nodes:
        probe = Zero(site=node.site, layers=node.layers, heads=node.heads, positions="all")
        edits = node_edits([probe], model.n_layers, batch, offsets, [prompt])
        if torch.equal(runner.forward(batch, edits=Edits(sites=edits)), plain):
            raise InterpError(
                f"{node.label}: zeroing its selection does not change {model.name}'s logits; its hook "
                "points are not connected in this model"
            )


def own_probabilities(
    run: Run, judge: str, records, items: Sequence[Item] | None = None, own: str | None = None
) -> np.ndarray:
    """Per item, the judge's P(its own model's response wins) (or `own`'s response), mean over both orders."""
    first = p_first_model(records, items if items is not None else run.items, run.config.models[0])
    return p_own_from_first(first, own or own_model(judge), run.config.models[0])


def judge_variant(
    run: Run,
    judge: str,
    runner: Backend,
    variant: Variant,
    *,
    items: Sequence[Item] | None = None,
    progress: bool = True,
    own: str | None = None,
) -> np.ndarray:
    """P(own wins) per item under `variant` (resumable, keyed as described in the module docstring).

    `own` (default: the judge's own model) is the author whose answer "self" masks and whose P(win) is read:
    a control judge is given the tested judge's own model.
    """
    items = list(items) if items is not None else run.items
    own = own or own_model(judge)
    check_rejudgeable(run)
    check_run_prompts(run, judge, runner.model)
    check_variants(runner.model, [variant])
    key = variant_key(run, judge, runner.name, variant, items, own, runner.model)
    folder = run.dir.variant(key)
    record = {"key": key, "judge": judge, "own": own, "backend": runner.name, "path": "full"} | variant.record()
    write_variant(folder, record)
    run_judging(
        runner,
        judge,
        judge_tasks(items, run.responses, run.config.models),
        judgments_path=folder / "judgments.jsonl",
        shard_dir=None,
        options=JudgingOptions(
            batch_size=run.config.batch_size,
            ties=run.config.ties,
            readout=None,
            progress=progress,
            cot=run.config.cot,
            rationale_tokens=run.config.rationale_tokens,
            intervention=variant.name if variant.interventions else None,
        ),
        edits_for=_edits_for(run, runner, variant, own, folder, judge) if variant.interventions else None,
        rationales=run_rationales(run, judge),
    )
    return own_probabilities(run, judge, read_judgments(folder / "judgments.jsonl", judge=judge), items, own)


def stored_variant(
    run: Run,
    judge: str,
    backend: str,
    variant: Variant,
    items: Sequence[Item] | None = None,
    own: str | None = None,
    model: LoadedModel | None = None,
) -> np.ndarray | None:
    """P(own wins) per item under `variant` when the keyed store already holds every judgment of it (judged by
    this process earlier, or by another executor's task), else None: no model is needed to read it (`model`: the
    judge's model where one is held, as `variant_key` takes it)."""
    items = list(items) if items is not None else run.items
    own = own or own_model(judge)
    path = run.dir.variant(variant_key(run, judge, backend, variant, items, own, model)) / "judgments.jsonl"
    if not path.is_file():
        return None
    records = read_judgments(path, judge=judge)
    if {record.key for record in records} < {task.key for task in judge_tasks(items, run.responses, run.config.models)}:
        return None
    return own_probabilities(run, judge, records, items, own)


def _edits_for(run: Run, runner: Backend, variant: Variant, own: str, folder, judge: str):
    """The per-batch edit builder of a variant's interventions (`interventions_builder`: one `Edits` for every
    kind). Means are made on the first batch that needs them, once, and kept in the variant's folder
    (`means.safetensors`), so a resumed variant reads them back."""
    state: dict = {}

    def made():
        if "means" not in state:
            state["means"], state["pool"] = reference_data(run, runner, variant, own, folder, judge)
        return state["means"], state["pool"]

    def edits_for(chunk):
        needs = any(i.needs in ("mean", "donor") for i in variant.interventions)
        means, pool = made() if needs else ({}, [])
        return interventions_builder(
            variant.interventions,
            runner,
            own=own,
            authors=[(t.author_a, t.author_b) for t in chunk],
            references=[t.item.reference for t in chunk],
            means=means,
            pool=pool,
        )

    return edits_for


def reference_data(run: Run, runner: Backend, variant: Variant, own: str, folder, judge: str, means_of=None):
    """Spec index -> {hook point: mean} for every `mean` node, and the reference prompts (resample's donors).
    `means_of(node, prompts)`: how a node's means are made when not stored (default: `reference_means`)."""
    from safetensors.torch import load_file, save_file

    ids = set(variant.reference) if variant.reference is not None else None
    items = [item for item in run.items if ids is None or item.id in ids]
    tasks = judge_tasks(items, run.responses, run.config.models)
    model = runner.model
    prompts = task_prompts(run, model, tasks, judge)
    authors = [(t.author_a, t.author_b) for t in tasks]
    path = folder / "means.safetensors"
    stored = load_file(str(path)) if path.is_file() else {}
    means: dict[int, dict] = {}
    # Stored under each mean node's place among the variant's node interventions (as before the family had one
    # base, so a resumed variant finds its means), returned under its place in the variant's list.
    nodes = [index for index, intervention in enumerate(variant.interventions) if intervention.slot == "nodes"]
    for place, index in enumerate(nodes):
        node = variant.interventions[index]
        if node.needs != "mean":
            continue
        names = node.hook_names(model.n_layers)
        if all(f"{place}|{name}" in stored for name in names):
            means[index] = {name: stored[f"{place}|{name}"] for name in names}
        else:
            means[index] = (
                means_of(node, prompts)
                if means_of is not None
                else reference_means(runner, node, prompts, own=own, authors=authors, batch_size=run.config.batch_size)
            )
            stored |= {f"{place}|{name}": tensor.cpu().contiguous() for name, tensor in means[index].items()}
    if stored and not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file(stored, str(path.with_suffix(".tmp")))
        path.with_suffix(".tmp").replace(path)
    return means, prompts


NO_INTERVENTION = Variant("none", description="no intervention: the judge's plain verdicts")
