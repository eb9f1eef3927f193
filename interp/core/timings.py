"""Where a job's wall time goes: named steps, timed by `with timings.step(name):`, in the order first run.

`interp demo --timings` and `interp dbg --timings` print them (and the torch thread counts used); the JSON form is
`Timings.record()`.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Iterator


@dataclass
class Timings:
    """Seconds per named step; a step run several times adds up. `threads`: torch's intra-op thread count."""

    seconds: dict[str, float] = field(default_factory=dict)
    threads: int | None = None
    threads_used: list[int] = field(default_factory=list)  # every count the job ran on (`core.threads.threads_used`)

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def record(self) -> dict:
        """{"steps": {name: seconds}, "total_s": ..., "torch_threads": ..., "torch_threads_used": [...]} (seconds
        rounded to 0.1); `torch_threads_used`: every count the job ran on, in order (`interp.core.threads`)."""
        used = self.threads_used or ([self.threads] if self.threads is not None else [])
        return {
            "steps": {k: round(v, 1) for k, v in self.seconds.items()},
            "total_s": round(self.total, 1),
            "torch_threads": self.threads,
            "torch_threads_used": used,
        }
