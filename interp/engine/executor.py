"""Where an experiment's (judge, variant) tasks run: in this process (`local`, the default) or as Ray tasks on a
cluster (`ray`: `pip install .[ray]`, `--executor ray` or `executor = "ray"` in a sweep config).

The causal test, sweeps and the mechanism ladder re-judge a run with many judges under many variants; each
(judge, variant) pair is independent of the others and its judgments land in the run's keyed store
(`RUN/variants/<key>/`, `interp.engine.variants`). A task is that pair as data (`VariantTask`), and
`run_task` is the one definition of its work: judge the variant with the judge into the store
(`Judges.judged`: a finished task costs a read). Both executors call `run_task`; neither has a second copy of
the judging:

- `local`: the tasks in order, grouped by judge, with the job's own models (`Judges`), so a judge's model is
  loaded once and let go after its last task when the models held pass the memory budget (`Judges.release`);
- `ray`: one Ray task per (judge, variant) whose judgments are not all in the store yet, one GPU each where the
  cluster has GPUs; each task loads its judge in its worker in the run's precision. A worker that dies (a
  killed task, a lost node) is retried (`MAX_RETRIES`); the retry resumes from the judgments already on disk
  (whole batches are appended at once, so the batches it judges are the ones a serial run would have).

After the tasks, the experiment reads every judgment back from the store and computes its statistics in this
process, as a serial run does: the result files are the same bytes. On a cluster the run directory must be on
a filesystem every node sees at the same path, and the package installed on every node.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from interp.config import PlacementKeys
from interp.core.models import ModelCache
from interp.engine.judges import HeldJudge, Judges, judge_pool
from interp.engine.variants import Variant, digest
from interp.errors import InterpError
from interp.run.store import Run, read_run

EXECUTORS = ("local", "ray")
MAX_RETRIES = 3  # a Ray worker that dies is started again this many times before the job fails


@dataclass(frozen=True)
class VariantTask:
    """One judge under one variant over some of a run's items (None: all), reading `own`'s answer as its own
    (None: the judge's own model)."""

    run_dir: str
    judge: str
    variant: Variant
    items: tuple[str, ...] | None = None
    own: str | None = None


@dataclass(frozen=True)
class TaskSetup:
    """How a task that starts from nothing loads its judge: the job's backend (None: the run's) and placement."""

    backend: str | None = None
    where: PlacementKeys | None = None


def run_task(task: VariantTask, setup: TaskSetup, judges: Judges | None = None, run: Run | None = None) -> str:
    """Judge one task into the run's keyed store; returns the judge's name. `judges` / `run`: the job's own (the
    local executor), or None to load them here (a Ray worker)."""
    run = run if run is not None else read_run(Path(task.run_dir))
    judges = judges if judges is not None else judge_pool(run, setup.backend, where=setup.where)
    judges.judged(run, task.judge, task.variant, items=task_items(run, task), own=task.own, progress=False)
    return task.judge


def task_items(run: Run, task: VariantTask) -> list | None:
    """The run's items a task judges, in the run's order (None: all)."""
    wanted = set(task.items) if task.items is not None else None
    return [item for item in run.items if item.id in wanted] if wanted is not None else None


def finished(run: Run, task: VariantTask, judges: Judges) -> bool:
    """Whether the store holds every judgment of the task already (read here, with no model loaded)."""
    return judges.stored(run, task.judge, task.variant, task_items(run, task), task.own) is not None


def check_executor(name: str) -> str:
    """The executor's name, refused in one line when unknown (or Ray when it is not installed)."""
    if name not in EXECUTORS:
        raise InterpError(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")
    if name == "ray":
        ray_module()
    return name


def ray_module():
    """The `ray` module, or a one-line error that says how to install it."""
    try:
        import ray
    except ImportError:
        raise InterpError(
            "the ray executor needs Ray: pip install 'interp-selfpref[ray]' (or pip install ray)"
        ) from None
    return ray


def unique(tasks: Sequence[VariantTask]) -> list[VariantTask]:
    """The tasks without repeats (two tested judges can share a control's task), in their first order."""
    seen: dict[tuple, VariantTask] = {}
    for task in tasks:
        seen.setdefault((task.run_dir, task.judge, task.own, task.items, digest(task.variant.identity())), task)
    return list(seen.values())


def execute(run: Run, tasks: Sequence[VariantTask], judges: Judges) -> None:
    """Run every task with the job's executor (`judges.executor`); afterwards every task's judgments are in the
    store. The local executor keeps the judges' models between tasks and lets each go after its last task
    (under the budget, `Judges.release`)."""
    tasks = unique(tasks)
    if not tasks:
        return
    setup = TaskSetup(judges.backend, worker_placement(judges))
    if judges.executor == "ray":
        held = sorted({task.judge for task in tasks} & judges.models.held)
        if held:
            raise InterpError(
                f"judge {held[0]!r} is a model held in this process; a Ray task cannot load it: pass the "
                "judge by name or folder, or use the local executor"
            )
        todo = [task for task in tasks if not finished(run, task, judges)]  # a resumed job ships only what is left
        if todo:
            ray_map(functools.partial(run_task, setup=setup), todo)
        return
    from interp.engine.final_batch import prejudge

    prejudge(run, judges, task_groups(run, tasks))  # verdict-position variants item-major over cached keys/values
    last = {task.judge: index for index, task in enumerate(tasks)}
    for index, task in enumerate(tasks):
        run_task(task, setup, judges, run)
        if last[task.judge] == index:
            judges.release(task.judge)


def task_groups(run: Run, tasks: Sequence[VariantTask]) -> list[tuple[str, str | None, list | None, list[Variant]]]:
    """The tasks as (judge, own, items, variants) groups, in their first order: the variants of one group share
    every prompt, so the cached path judges them item-major (`interp.engine.final_batch.prejudge`)."""
    groups: dict[tuple, tuple[str, str | None, list | None, list[Variant]]] = {}
    for task in tasks:
        key = (task.judge, task.own, task.items)
        if key not in groups:
            groups[key] = (task.judge, task.own, task_items(run, task), [])
        groups[key][3].append(task.variant)
    return list(groups.values())


def worker_placement(judges: Judges) -> PlacementKeys:
    """Where a worker loads a judge: the device asked for (default: auto, a GPU where the worker has one), in
    the precision this job's models use (the run's: its judgments are the baseline)."""
    placement = judges.models.placement
    device = judges.where.device if judges.where is not None else "auto"
    return PlacementKeys(device=device, dtype=placement.dtype, device_map=placement.device_map)


def ray_map(work: Callable, tasks: Sequence, *, max_retries: int = MAX_RETRIES) -> list:
    """`work(task)` for every task as Ray tasks, in the task order; a worker that dies is retried. Connects to the
    cluster `RAY_ADDRESS` names (or one `ray start` made on this node), else starts Ray on this machine; a job
    already connected (`ray.init` in the caller) keeps its connection. One GPU per task where the cluster has
    GPUs, else one CPU (`INTERP_RAY_GPUS` / `INTERP_RAY_CPUS` per task to give each more: a judge sharded over
    several GPUs with device_map = "auto")."""
    ray = ray_module()
    if not ray.is_initialized():
        ray.init(
            log_to_driver=False, include_dashboard=False
        )  # RAY_ADDRESS, else the node's `ray start`, else a new one
    gpus = per_task("INTERP_RAY_GPUS", 1) if ray.cluster_resources().get("GPU", 0) >= 1 else 0
    cpus = per_task("INTERP_RAY_CPUS", 1)
    remote = ray.remote(num_cpus=cpus, num_gpus=gpus, max_retries=max_retries)(_call)
    return ray.get([remote.remote(work, task) for task in tasks])


def per_task(name: str, default: int) -> int:
    """A whole number >= 1 from the environment (`default` when unset); anything else is one line."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if not value.isdigit() or int(value) < 1:
        raise InterpError(f"{name} must be a whole number, at least 1, not {value!r}")
    return int(value)


def _call(work: Callable, task):
    """A Ray task's body: `work(task)` with torch on the CPUs Ray gave it (its OMP_NUM_THREADS)."""
    import torch

    threads = os.environ.get("OMP_NUM_THREADS")
    if threads and threads.isdigit() and int(threads) >= 1:
        torch.set_num_threads(int(threads))
    return work(task)


@dataclass(frozen=True)
class Execution:
    """Where and how an experiment's judgments run, apart from what it tests: the `backend` (None: the run's),
    the placement (`where`: device, device_map), a shared `models` cache, the memory budget in bytes
    (`max_memory`; None: half the memory available, `Judges.release`), the `executor` (`local` or `ray`; None:
    in this process) and whether progress bars show.

    >>> Execution(executor="local", max_memory=0).progress
    True
    """

    backend: str | None = None
    where: PlacementKeys | None = None
    models: ModelCache | None = None
    max_memory: int | None = None
    executor: str | None = None
    progress: bool = True
    held: Mapping[str, HeldJudge] | None = None
    path: str | None = None  # verdict-position variants: "auto", "cached" (forced) or "full" (None: the pool's, auto)

    def pool(self, run: Run) -> Judges:
        """The judges to re-judge `run` with, on this backend and placement, with the executor and memory budget
        set where given (None keeps the pool's own: local, half the memory available)."""
        if self.executor == "ray" and self.held:
            raise InterpError(
                f"judge {sorted(self.held)[0]!r} is a Judge held in this process (its model, backend and open "
                "blocks); a Ray task cannot carry it: pass the judge by name or folder, or use the local executor"
            )
        judges = judge_pool(run, self.backend, where=self.where, models=self.models, held=self.held)
        if self.executor is not None:
            judges.executor = check_executor(self.executor)
        if self.max_memory is not None:
            judges.max_memory = self.max_memory
        if self.path is not None:
            from interp.engine.final_batch import check_path_option

            judges.path = check_path_option(self.path)
        return judges
