"""torch's thread count: the cores really free (affinity mask less the load), or INTERP_THREADS."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from interp.core.threads import ENV, free_cores, set_torch_threads, torch_threads
from interp.errors import InterpError


def test_free_cores_leave_the_busy_ones_to_the_processes_beside():
    assert free_cores(2, 0.1) == 2
    assert free_cores(2, 1.4) == 1  # a training on one of two cores: one thread, no barrier waiting on a taken core
    assert free_cores(2, 5.0) == 1  # never below one
    assert free_cores(16, 3.6) == 12


def test_the_count_reads_the_affinity_mask_and_the_load_unless_overridden():
    assert torch_threads({}, cores=4, load=1.0) == 3
    assert torch_threads({ENV: "3"}, cores=1, load=9.0) == 3  # the override wins
    if hasattr(os, "sched_getaffinity"):
        mask = len(os.sched_getaffinity(0))
        assert 1 <= torch_threads({}) <= mask
    for bad in ("0", "two", "-1", "1.5"):
        with pytest.raises(InterpError, match=ENV):
            torch_threads({ENV: bad})


def test_set_torch_threads_sets_torch():
    import torch

    before = torch.get_num_threads()
    try:
        assert set_torch_threads(1) == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_the_cli_sizes_its_threads_and_refuses_a_bad_override():
    env = dict(os.environ, OMP_NUM_THREADS="1", INTERP_THREADS="2")  # torch would start on 1
    run = subprocess.run([sys.executable, "-c", "from interp.cli import main; main(['models', '--help'])"], env=env | {ENV: "zero"}, capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr.startswith(f"error: {ENV} must be a whole number") and "Traceback" not in run.stderr
    probe = "import torch; from interp.cli import main\ntry:\n    main(['models', '--help'])\nexcept SystemExit:\n    pass\nprint('threads', torch.get_num_threads())"
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert run.stdout.strip().endswith("threads 2"), run.stdout + run.stderr


def _scripted(monkeypatch, samples):
    """CpuSample.now returns these in turn (wall, busy, own seconds); 2 cores allowed; no real sleep."""
    from interp.core import threads

    queue = [threads.CpuSample(*values) for values in samples]
    monkeypatch.setattr(threads.CpuSample, "now", classmethod(lambda cls: queue.pop(0)))
    monkeypatch.setattr(threads, "allowed_cores", lambda: 2)
    monkeypatch.setattr(threads, "_DECISION", threads._Decision())
    return queue


def test_the_count_follows_the_other_processes_and_is_decided_again_between_batches(monkeypatch):
    """Not the lagging load average: at start another process's runnable thread on one of two cores gives 1
    thread; once it has left, the next decision (a batch later, from the kernel's busy counters) gives 2; this
    process's own use never counts as company."""
    import torch
    from interp.core import threads
    from interp.core.threads import others_busy, rebalance_threads, threads_used

    monkeypatch.delenv(ENV, raising=False)
    before = torch.get_num_threads()
    try:
        # start: one other process runnable now -> 1 thread; the decision measures from this sample on
        _scripted(monkeypatch, [(0.2, 10.2, 1.0), (0.4, 10.3, 1.1), (2.2, 12.2, 3.0), (5.0, 17.6, 5.6)])
        monkeypatch.setattr(threads, "runnable_others", lambda: 1.0)
        assert set_torch_threads() == 1 and torch.get_num_threads() == 1
        assert rebalance_threads() == 1  # 0.2 s later: too short an interval to decide on, kept
        # 2.0 s later: 2.0 core-s busy, 2.0 of them ours (our two threads) -> nobody else -> 2 threads
        assert rebalance_threads() == 2 and torch.get_num_threads() == 2
        # 2.8 s later: 5.4 core-s busy, 2.6 ours -> another process on one core -> 1 thread again
        assert rebalance_threads() == 1
        assert threads_used() == [1, 2, 1]
    finally:
        torch.set_num_threads(before)
    from interp.core.threads import CpuSample

    assert others_busy(CpuSample(0.0, 0.0, 0.0), CpuSample(1.0, 1.5, 0.5)) == 1.0


def test_a_pinned_or_fixed_count_is_never_decided_again(monkeypatch):
    import torch
    from interp.core.threads import rebalance_threads

    before = torch.get_num_threads()
    try:
        _scripted(monkeypatch, [(0.0, 0.0, 0.0), (9.0, 18.0, 0.0)] * 3)
        monkeypatch.setenv(ENV, "2")
        assert set_torch_threads() == 2 and rebalance_threads() == 2  # the machine is full, but the user said 2
        monkeypatch.delenv(ENV)
        assert set_torch_threads(2) == 2 and rebalance_threads() == 2  # a training's fixed count
    finally:
        torch.set_num_threads(before)
