"""Where a job's wall time goes: named steps, timed by `with timings.step(name):`, in the order first run.

`interp demo --timings`, `interp dbg --timings` and `interp intervene --timings` print them, the torch thread counts
used and the job's peak memory (the process's peak resident set, and a GPU's peak allocation where one was used);
the JSON form is `Timings.record()`.
"""

from __future__ import annotations

import contextlib
import resource
import sys
import time
from dataclasses import dataclass, field
from typing import Iterator


@dataclass
class Timings:
    """Seconds per named step; a step run several times adds up. `threads`: torch's intra-op thread count."""

    seconds: dict[str, float] = field(default_factory=dict)
    threads: int | None = None
    threads_used: list[int] = field(default_factory=list)  # every count the job ran on (`core.threads.threads_used`)
    peak_rss_bytes: int | None = None  # the process's peak resident set when the job ended
    peak_gpu_bytes: int | None = None  # torch's peak CUDA allocation, where the job used a GPU

    @classmethod
    def started(cls) -> "Timings":
        """A job's timings from now on, with torch's thread count now."""
        import torch

        return cls(threads=torch.get_num_threads())

    def ended(self) -> "Timings":
        """Record, at the job's end, what it ran on: the thread counts used and the peak memory."""
        from interp.core.threads import threads_used

        self.threads_used = threads_used()
        self.peak_rss_bytes = peak_rss_bytes()
        self.peak_gpu_bytes = peak_gpu_bytes()
        return self

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """A timed step: its seconds are added to `name`'s on exit."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    @property
    def total(self) -> float:
        """Seconds over every step."""
        return sum(self.seconds.values())

    def record(self) -> dict:
        """{"steps": {name: seconds}, "total_s": ..., "torch_threads": ..., "torch_threads_used": [...],
        "peak_rss_gb": ...} (seconds rounded to 0.1, GB of 2**30 bytes to 0.01), with "peak_gpu_gb" where a GPU was
        used; `torch_threads_used`: every count the job ran on, in order (`interp.core.threads`)."""
        used = self.threads_used or ([self.threads] if self.threads is not None else [])
        record = {
            "steps": {k: round(v, 1) for k, v in self.seconds.items()},
            "total_s": round(self.total, 1),
            "torch_threads": self.threads,
            "torch_threads_used": used,
            "peak_rss_gb": gb(self.peak_rss_bytes),
        }
        if self.peak_gpu_bytes is not None:
            record["peak_gpu_gb"] = gb(self.peak_gpu_bytes)
        return record


def gb(count: int | None) -> float | None:
    """Bytes in GB (2**30), rounded to 2 places; None stays None."""
    return round(count / 2**30, 2) if count is not None else None


def peak_rss_bytes() -> int:
    """This process's peak resident set so far (`getrusage`: kilobytes on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def peak_gpu_bytes() -> int | None:
    """torch's peak CUDA allocation on the current device, or None where CUDA was never started."""
    import torch

    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    return int(torch.cuda.max_memory_allocated())
