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
