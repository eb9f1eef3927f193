"""The judges a job re-judges a run with, loaded once and shared by every evaluation in it.

`judge_pool` places the judge models in the precision the run was judged in; `Judges` holds them and their booted
backends, lets a control judge's model go once the models held pass a memory budget, and reads a variant from the
keyed store (`interp.engine.variants`) before it judges one. `evaluate` is what every study over a run calls:
behaviour before (the run's own judgments) and under each variant, and each variant's paired effect.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import torch

from interp.config import PlacementKeys, backend_placement_problem
from interp.core.backends import Backend, make_backend
from interp.core.models import LoadedModel, ModelCache, own_model
from interp.core.placement import resolve_placement
from interp.data import Item
from interp.engine.variants import (
    NO_INTERVENTION,
    Variant,
    check_rejudgeable,
    check_run_prompts,
    judge_variant,
    own_probabilities,
    stored_variant,
    variant_key,
)
from interp.errors import InterpError
from interp.hooks.base import Intervention
from interp.metrics.behaviour import behaviour, paired_effect
from interp.run.pipeline import check_adapters
from interp.run.store import Run

if TYPE_CHECKING:
    from interp.core.backends.shared_trunk import TrunkPool


def model_bytes(model: LoadedModel) -> int:
    """What a model's weights take: its parameters and buffers, in bytes."""
    tensors = [*model.hf_model.parameters(), *model.hf_model.buffers()]
    return sum(t.numel() * t.element_size() for t in {id(t): t for t in tensors}.values())


def memory_budget(model: LoadedModel) -> int:
    """Half the memory available now where the model lives: the GPU's free memory for a CUDA model, else the
    host's (MemAvailable)."""
    if model.device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(model.device)
        return free // 2
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 // 2
    except OSError:
        pass
    return 8 * 2**30


@dataclass(frozen=True)
class HeldJudge:
    """A judge the caller holds (a notebook's `interp.Judge`): its model, the backend it runs on, and its open
    blocks (`Judge.opened`: `applying` specs, `hooks` blocks), run before each variant's own interventions in
    every judgment the pool makes with it, and part of every key of what is judged."""

    model: LoadedModel
    backend: Backend | None = None  # None: the job's backend, made from the model
    edits: tuple[Intervention, ...] = ()


def baseline(
    run: Run,
    judge: str,
    items: Sequence[Item] | None = None,
    own: str | None = None,
    judges: Judges | None = None,
    progress: bool = True,
) -> np.ndarray:
    """P(own wins) per item without intervention: the run's own judgments, or, for a judge the run did not
    judge with (a control judge from outside the run) or one held with open blocks (`HeldJudge.edits`), its
    verdicts judged once as a keyed variant."""
    if judge in run.config.judge_specs and (judges is None or not judges.edits_of(judge)):
        return own_probabilities(run, judge, run.dir.read_judgments(judge), items, own)
    if judges is None:
        raise InterpError(f"judge {judge!r} did not judge this run; its baseline needs a model to judge with")
    return judges.judged(run, judge, NO_INTERVENTION, items=items, progress=progress, own=own)


@dataclass
class Judges:
    """Judge models and booted backends, loaded once per job and shared by every evaluation in it.

    `models` may be shared with the pipeline that made the run; `backend` None = the run's backend. Build it
    with `judge_pool`, which places the models in the precision the run was judged in.
    """

    models: ModelCache = field(default_factory=ModelCache)
    backend: str | None = None
    runners: dict = field(default_factory=dict)
    trunks: TrunkPool | None = None  # made at the first hf runner (its import loads transformers)
    keep: set[str] = field(default_factory=set)  # never released: the judges a command tests (and `models.held`)
    max_memory: int | None = None  # bytes of models held before controls are let go (None: see `release`)
    executor: str = "local"  # where (judge, variant) tasks run (`interp.engine.executor`)
    where: PlacementKeys | None = None  # the placement asked for (another executor's workers load with it)
    run: Run | None = None  # the run re-judged (`judge_pool`): each of its judges is checked when first loaded
    checked: set[str] = field(default_factory=set)
    path: str = "auto"  # verdict-position variants: "auto" / "cached" over the cached final position, "full" never
    held: dict[str, HeldJudge] = field(default_factory=dict)  # judges the caller holds (`judge_pool(held=)`)

    def edits_of(self, judge: str) -> tuple[Intervention, ...]:
        """The open blocks of a judge the caller holds (none for a judge loaded by name)."""
        held = self.held.get(judge)
        return held.edits if held is not None else ()

    def composed(self, judge: str, variant: Variant) -> Variant:
        """`variant` as `judge` runs it: the held judge's open blocks first, then the variant's interventions."""
        edits = self.edits_of(judge)
        if not edits:
            return variant
        return dataclasses.replace(variant, interventions=(*edits, *variant.interventions))

    def backend_of(self, run: Run, judge: str) -> str:
        """The name of the backend `judge` runs on: a held judge's own, else the job's (None: the run's)."""
        held = self.held.get(judge)
        if held is not None and held.backend is not None:
            return held.backend.name
        return self.backend_name(run)

    def key(self, run: Run, judge: str, variant: Variant, items: Sequence[Item], own: str | None = None) -> str:
        """The store key of `judge`'s judgments under `variant` (`variant_key`), its open blocks included."""
        held = self.models.models.get(judge)  # a wrapped model is keyed by its weights
        return variant_key(
            run, judge, self.backend_of(run, judge), self.composed(judge, variant), items, own, model=held
        )

    def stored(
        self, run: Run, judge: str, variant: Variant, items: Sequence[Item] | None = None, own: str | None = None
    ) -> np.ndarray | None:
        """`stored_variant` of `judge` under `variant` as it runs it (its open blocks included)."""
        held = self.models.models.get(judge)  # a wrapped model is keyed by its weights
        return stored_variant(run, judge, self.backend_of(run, judge), self.composed(judge, variant), items, own, held)

    def model(self, judge: str) -> LoadedModel:
        """The judge's model; a judge of the run is checked at its first load (`check_run_prompts`), so a run
        judged under other prompts is refused before a command writes anything."""
        model = self.models.get(judge)
        if self.run is not None and judge not in self.checked:
            check_run_prompts(self.run, judge, model)
            self.checked.add(judge)
        return model

    def held_bytes(self) -> int:
        """The bytes of every model held now (parameters and buffers)."""
        return sum(model_bytes(model) for model in self.models.models.values())

    def release(self, judge: str) -> None:
        """Let go of a judge's model and backends once its work is done (a control judge, judged one at a time)
        when the models held exceed the memory budget (`max_memory` bytes; None: half the memory available when
        the first release is asked, on the models' device), so a test with k controls holds about two models at
        a time, not k + 1; it is loaded again if asked for. Under the budget nothing is let go (no reload cost).
        A model the caller holds is kept, and so is one whose lower layers other judges share (a trunk)."""
        if judge in self.keep or judge in self.models.held or judge not in self.models.models:
            return
        if self.max_memory is None:
            self.max_memory = memory_budget(self.models.models[judge])
        if self.held_bytes() <= self.max_memory:
            return
        model = self.models.models[judge]
        if self.trunks is not None and any(trunk.model is model for trunk in self.trunks.trunks):
            return
        del self.models.models[judge]
        for key in [key for key in self.runners if key[0] == judge]:
            del self.runners[key]
        import gc

        gc.collect()

    def backend_name(self, run: Run) -> str:
        return run.config.backend if self.backend is None else self.backend

    def judged(
        self,
        run: Run,
        judge: str,
        variant: Variant,
        *,
        items: Sequence[Item] | None = None,
        own: str | None = None,
        progress: bool = True,
    ) -> np.ndarray:
        """P(own wins) per item under `variant`: read from the keyed store when every judgment is there (no model
        is loaded for it), else judged now with the judge's backend (`judge_variant`)."""
        variant = self.composed(judge, variant)
        stored = stored_variant(
            run, judge, self.backend_of(run, judge), variant, items, own, self.models.models.get(judge)
        )
        if stored is not None:
            return stored
        if self.path != "full" and variant.interventions:  # the verdict position over the cached keys and values
            from interp.engine.final_batch import judge_one_cached

            judged = judge_one_cached(run, judge, self, variant, items=items, own=own)
            if judged is not None:
                return judged
        return judge_variant(run, judge, self.runner(judge, run), variant, items=items, progress=progress, own=own)

    def runner(self, judge: str, run: Run) -> Backend:
        """The judge's backend; with hf, judges whose lower layers are another held model's (organisms of one
        base) share those layers' passes (`shared_trunk.TrunkPool`: equal to the plain pass up to rounding)."""
        name = self.backend_of(run, judge)
        held = self.held.get(judge)
        if held is not None and held.backend is not None:
            return held.backend  # the backend the caller's Judge runs on, never a second one
        if (judge, name) not in self.runners:
            model = self.model(judge)
            if name == "hf":
                from interp.core.backends.shared_trunk import TrunkPool

                self.trunks = self.trunks or TrunkPool()
                self.runners[judge, name] = self.trunks.backend(model, self.models.models.values())
            else:
                self.runners[judge, name] = make_backend(model, name)
        return self.runners[judge, name]


def judge_pool(
    run: Run,
    backend: str | None = None,
    *,
    where: PlacementKeys | None = None,
    models: ModelCache | None = None,
    held: Mapping[str, LoadedModel | HeldJudge] | None = None,
) -> Judges:
    """Judges to re-judge `run` with: in the dtype the run was judged in (its own judgments are every
    experiment's baseline, so another precision would compare two precisions); `where` (device, device_map)
    may differ from the run's. A shared `models` cache is used as it is. `held`: run judge name -> a model
    the caller already holds (a `Judge`'s), used instead of loading that name again. A run judged with other
    adapter weights than are installed now is refused (its judgments are the baseline of every comparison).
    A `HeldJudge` brings its backend and open blocks: every judgment of that judge runs them (`Judges.composed`);
    where they cannot run, one line before anything is written."""
    check_rejudgeable(run)
    check_adapters(run.config, run.dir)
    recorded = run.config.dtype or "float32"
    if models is None:
        where = where or PlacementKeys()
        problem = backend_placement_problem(run.config.backend if backend is None else backend, where.device_map)
        if problem:
            raise InterpError(problem)
        if where.dtype is not None and where.dtype != recorded:
            raise InterpError(
                f"this run was judged in {recorded}; re-judging it in {where.dtype} would compare two precisions; "
                f'use dtype {recorded} or make a new run with dtype = "{where.dtype}"'
            )
        models = ModelCache(resolve_placement(where.device, recorded, where.device_map))
    holding = {
        name: entry if isinstance(entry, HeldJudge) else HeldJudge(entry) for name, entry in (held or {}).items()
    }
    for name, entry in holding.items():
        check_held(run, name, entry, backend)
        model = entry.model
        if model.placement.dtype != recorded:
            raise InterpError(
                f"this run was judged in {recorded}; the judge {name} you hold runs in "
                f"{model.placement.dtype}, which would "
                f"compare two precisions; convert it (model.to(torch.{recorded})) or re-judge by name"
            )
        models.models[name] = model
        models.held.add(name)
    return Judges(models, backend, where=where, run=run, held=holding)


def check_held(run: Run, name: str, held: HeldJudge, backend: str | None) -> None:
    """A held judge the job can run as it is: on the backend asked for (None: its own), not a judge the run
    reads from an OpenAI-compatible server, and open blocks that read no reference set; else one line."""
    if held.backend is not None and backend is not None and held.backend.name != backend:
        raise InterpError(
            f"the judge {name} you hold runs on the {held.backend.name} backend, but backend={backend!r} was asked; "
            "leave backend out (the Judge's own is used) or wrap the model on that backend"
        )
    if not held.edits:
        return
    if run.config.server(name) is not None:
        raise InterpError(
            f"the judge {name} is judged by an OpenAI-compatible server in this run: its open applying/hooks "
            "blocks cannot reach the server's model; leave the block, or hold a local model under another name"
        )
    for edit in held.edits:
        if edit.needs in ("mean", "donor"):
            raise InterpError(
                f"the judge {name}'s open block {edit.label} reads its own reference set, which a study cannot "
                "carry; leave the block and give the spec to the study (it reads the run's items)"
            )


def evaluate(
    run: Run,
    judge: str,
    variants: dict[str, Variant],
    judges: Judges,
    *,
    items: Sequence[Item] | None = None,
    progress: bool = True,
    own: str | None = None,
) -> dict:
    """Behaviour before (the run's own judgments) and under each variant, and each variant's paired effect.

    Returns {"before": behaviour, "variants": {name: variant record + behaviour}, "effects": {name: effect},
    "own": the author read as own, "per_item": {"items", "before", "after": {name: [P(own)]}}}. `own`
    (default: the judge's own model): read another author's answer as own, as a control judge does.
    """
    items = list(items) if items is not None else run.items
    config = run.config
    own = own or own_model(judge)
    positions = [run.items.index(item) for item in items]
    gold_own = run.gold_own(own)[positions]
    before = baseline(run, judge, items, own, judges, progress)
    result = {
        "before": behaviour(before, gold_own, n_boot=config.n_boot, seed=config.seed),
        "variants": {},
        "effects": {},
        "own": own,
    }
    result["per_item"] = {"items": [item.id for item in items], "before": before.tolist(), "after": {}}
    for name, variant in variants.items():
        after = judges.judged(run, judge, variant, items=items, progress=progress, own=own)
        result["per_item"]["after"][name] = after.tolist()
        result["variants"][name] = variant.record() | behaviour(after, gold_own, n_boot=config.n_boot, seed=config.seed)
        result["effects"][name] = paired_effect(before, after, n_boot=config.n_boot, seed=config.seed)
    return result
