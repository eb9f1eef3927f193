"""Fixtures the causal tests share: a local Ray instance of 2 CPUs (skipped where Ray is not installed)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
