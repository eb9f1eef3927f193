"""How many CPU threads torch runs on: the cores that are really free, decided in one place.

torch's default is one thread per core of the machine. Beside another busy process that is too many: a
parallel region (every matmul of every layer) ends in a barrier that waits for its slowest thread, and a
thread whose core is taken waits a whole scheduler time slice; OpenMP's threads also spin while they wait,
taking CPU from the process beside them. Measured on 2 cores with one of them busy (an organism training):
2 threads ran a SmolLM2-sized forward pass (6 layers, 8 x 300 tokens) 1.6x slower than 1 thread (6.9 s vs
4.4 s) and used 1.6x its CPU (`experiments/bench_pipeline.py --threads-only` repeats it). Generation, token by
token, is many small parallel regions, each a barrier: it suffers most.

The count is decided once, when a command starts; company that arrives later is not seen.

`torch_threads()` is the count: `INTERP_THREADS` when set, else the cores this process may run on (its
affinity mask) less the other processes' load (the 1-minute load average, rounded), at least 1.
`set_torch_threads()` applies it; the CLI calls it once at start, and anything that sets torch's threads
goes through it.
"""

from __future__ import annotations

import os
from typing import Mapping

from interp.errors import InterpError

ENV = "INTERP_THREADS"


def allowed_cores() -> int:
    """Cores this process may run on: its affinity mask (a container or `taskset` may allow fewer than exist)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def system_load() -> float:
    """Runnable processes, averaged over the last minute (0 where the platform does not say)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def free_cores(cores: int, load: float) -> int:
    """Of `cores`, those the load leaves free (at least 1): a load of 1.4 on 2 cores leaves 1."""
    return max(1, cores - round(load))


def torch_threads(env: Mapping[str, str] | None = None, *, cores: int | None = None, load: float | None = None) -> int:
    """The thread count for torch: `INTERP_THREADS` (a whole number >= 1) when set, else the free cores.

    `cores` and `load` default to this process's affinity mask and the system's 1-minute load average.
    """
    env = os.environ if env is None else env
    value = env.get(ENV, "").strip()
    if value:
        try:
            count = int(value)
        except ValueError:
            count = 0
        if count < 1:
            raise InterpError(f"{ENV} must be a whole number of threads, at least 1, not {value!r}")
        return count
    cores = allowed_cores() if cores is None else cores
    return free_cores(cores, system_load() if load is None else load)


def set_torch_threads(count: int | None = None) -> int:
    """Set torch's intra-op threads to `count` (a fixed count, e.g. a training's, for reproducible reductions),
    or to `torch_threads()` when None; returns the count set."""
    import torch

    count = torch_threads() if count is None else count
    if count < 1:
        raise InterpError(f"thread count must be at least 1, not {count}")
    torch.set_num_threads(count)
    return count
