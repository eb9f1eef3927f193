"""Where (judge, variant) tasks run: one judge at a time under a memory budget, and as Ray tasks.

A tiny run of two 2-layer Llamas that judge each other: a sweep with a zero budget holds one judge at a time
(the first is let go before the second loads) and writes the same results as with every model kept; the causal
test against three control judges run as Ray tasks on a local Ray (2 CPUs) writes the same bytes as the serial
run on the same run directory; a Ray task whose worker dies is retried.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.causal.test_intervene import tiny_controls, tiny_pair_run


@pytest.fixture(scope="module")
def pair_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("executor")
    run = tiny_pair_run(root, tiny_llama_dir, smollm2_tokenizer, n=4, attention="none")
    return run, tiny_controls(root, smollm2_tokenizer)


def files_under(root: Path, folders=("variants", "interventions", "sweeps")) -> dict[str, bytes]:
    """Every file an experiment wrote into the run (its keyed store and results), by relative path."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for folder in folders
        for p in sorted((root / folder).rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_a_sweep_under_a_zero_budget_holds_one_judge_at_a_time_and_finds_the_same(pair_run, tmp_path, monkeypatch):
    from interp.config import SweepConfig
    from interp.core.models import ModelCache
    from interp.run.store import read_run
    from interp.studies.sweeps import run_sweep

    source, _ = pair_run
    kept_run, released_run = tmp_path / "kept", tmp_path / "released"
    shutil.copytree(source, kept_run)
    shutil.copytree(source, released_run)
    judges = list(read_run(kept_run).config.models)
    kept = run_sweep(SweepConfig(run=str(kept_run), all_layers=True, judges=judges), progress=False, max_memory=2**50)
    loads: list[tuple[str, list[str]]] = []  # (the model loaded, the models held when it was asked for)
    real = ModelCache.get

    def counting(self, spec):
        if spec not in self.models:
            loads.append((spec, sorted(self.models)))
        return real(self, spec)

    monkeypatch.setattr(ModelCache, "get", counting)
    released = run_sweep(
        SweepConfig(run=str(released_run), all_layers=True, judges=judges, max_memory=0.0), progress=False
    )
    second = [held for spec, held in loads if spec == judges[1]]
    assert second and all(held == [] for held in second)  # the first judge was let go before the second loaded
    assert max(len(held) for _, held in loads) == 0
    assert released.read_bytes() == kept.read_bytes()
    assert released.relative_to(released_run) == kept.relative_to(kept_run)  # the budget is not part of the key


def test_a_bad_executor_is_one_line(pair_run):
    from interp.config import SweepConfig, validate_config
    from interp.engine.executor import check_executor
    from interp.errors import InterpError

    source, _ = pair_run
    with pytest.raises(InterpError, match="executor"):
        validate_config(SweepConfig, {"run": str(source), "executor": "spark"}, "sweep config")
    with pytest.raises(InterpError, match="unknown executor 'spark'; use one of local, ray"):
        check_executor("spark")


def test_the_causal_test_on_ray_writes_the_serial_runs_bytes(pair_run, tmp_path, local_ray, one_thread, monkeypatch):
    """Serial (on one thread, as each Ray task of one CPU runs), then Ray on the same run directory (the serial
    run's outputs moved away first): every file of the keyed store and the result are the same bytes, and every
    judgment of the Ray run was made in a worker."""
    from interp.causal.design import TestDesign
    from interp.causal.intervene import intervene_run
    from interp.engine import judges
    from interp.engine.executor import Execution
    from interp.run.store import read_run

    source, controls = pair_run
    run = tmp_path / "run"
    shutil.copytree(source, run)
    judge = read_run(run).config.models[0]
    design = TestDesign(heads="all-layers", control_judges=tuple(controls))
    serial = intervene_run(run, design=design, judges=[judge], execution=Execution(progress=False))
    serial_files = files_under(run)
    assert (
        any(name.endswith("result.json") for name in serial_files)
        and sum(name.endswith("judgments.jsonl") for name in serial_files) >= 4
    )
    for folder in ("variants", "interventions"):
        shutil.rmtree(run / folder)

    def not_here(*args, **kwargs):
        raise AssertionError("the driver judged a variant that a Ray task should have")

    monkeypatch.setattr(judges, "judge_variant", not_here)  # this process only: Ray's workers import their own
    on_ray = intervene_run(run, design=design, judges=[judge], execution=Execution(progress=False, executor="ray"))
    assert files_under(run) == serial_files
    assert on_ray == serial


def test_a_ray_task_whose_worker_dies_is_retried(tmp_path, local_ray):
    from interp.engine.executor import ray_map

    def die_once(task):  # defined here, so Ray ships it by value (workers need not import the tests)
        """The first attempt kills its worker process outright (as a lost node or the OOM killer would)."""
        mark, value = task
        if not os.path.exists(mark):
            open(mark, "w").close()
            os._exit(1)
        return value * 10

    marks = [tmp_path / f"started-{n}" for n in range(2)]
    assert ray_map(die_once, [(str(mark), n) for n, mark in enumerate(marks)]) == [0, 10]
    assert all(mark.exists() for mark in marks)


def test_an_unknown_executor_on_the_command_line_is_one_line_with_nothing_written(pair_run, tmp_path, forked_cli):
    source, controls = pair_run
    run = tmp_path / "run"
    shutil.copytree(source, run)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    refused = forked_cli(
        "intervene", str(run), "--all-layers", "--control-judge", ",".join(controls), "--executor", "spark"
    )
    assert (
        refused.returncode == 2 and refused.stderr.strip() == "error: unknown executor 'spark'; use one of local, ray"
    )
    assert sorted(p.relative_to(run) for p in run.rglob("*") if p.name != ".lock") == [
        p for p in before if p.name != ".lock"
    ]


def test_timings_record_the_jobs_peak_memory():
    from interp.core.timings import Timings

    status = (
        dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
        if os.path.exists("/proc/self/status")
        else {}
    )
    resident_now = int(status["VmRSS"].split()[0]) * 1024 if "VmRSS" in status else 1
    record = Timings.started().ended().record()
    assert (
        record["peak_rss_gb"] is not None and record["peak_rss_gb"] * 2**30 >= 0.99 * resident_now - 2**23
    )  # rounded to 0.01 GB
    assert "peak_gpu_gb" not in record or record["peak_gpu_gb"] >= 0


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"executor": "spark"}, "unknown executor 'spark'"),
        ({"max_memory": -1}, "max_memory must be at least 0 GB"),
        ({"max_memory": "4"}, "max_memory must be a number"),
    ],
)
def test_the_python_api_refuses_a_bad_executor_or_budget_before_reading_the_run(tmp_path, keys, message):
    import interp
    from interp.errors import InterpError

    with pytest.raises(InterpError, match=message):
        interp.intervene(tmp_path / "no-run", all_layers=True, **keys)


def test_a_judge_held_in_this_process_is_refused_on_ray_before_anything_runs(tmp_path, monkeypatch):
    """A `Judge` object's model lives here: a Ray worker would load something else by its name."""
    from interp.core.models import ModelCache
    from interp.engine.executor import VariantTask, execute, per_task
    from interp.engine.judges import Judges
    from interp.engine.variants import NO_INTERVENTION
    from interp.errors import InterpError

    judges = Judges(ModelCache(models={"mine": object()}, held={"mine"}), executor="ray")
    with pytest.raises(InterpError, match="'mine' is a model held in this process"):
        execute(None, [VariantTask(str(tmp_path), "mine", NO_INTERVENTION)], judges)
    monkeypatch.setenv("INTERP_RAY_GPUS", "half")
    with pytest.raises(InterpError, match="INTERP_RAY_GPUS must be a whole number"):
        per_task("INTERP_RAY_GPUS", 1)
    monkeypatch.setenv("INTERP_RAY_GPUS", "4")
    assert per_task("INTERP_RAY_GPUS", 1) == 4 and per_task("INTERP_RAY_UNSET", 1) == 1
