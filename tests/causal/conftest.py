"""Fixtures the causal tests share: a local Ray instance of 2 CPUs (skipped where Ray is not installed), and
torch on one thread (the serial run a Ray run is compared with)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def one_thread():
    """torch on one thread for the test, as a Ray task of one CPU runs: on the CPU, float32 judgments made on 1
    and on 2 threads differ in about the 7th digit, so a serial run is the Ray run's bytes at the same count."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
