"""How many CPU threads torch runs on: the cores that are really free, decided in one place and re-decided as
company comes and goes.

torch's default is one thread per core of the machine. Beside another busy process that is too many: a
parallel region (every matmul of every layer) ends in a barrier that waits for its slowest thread, and a
thread whose core is taken waits a whole scheduler time slice; OpenMP's threads also spin while they wait,
taking CPU from the process beside them. Measured on 2 cores with one of them busy (an organism training):
2 threads ran a SmolLM2-sized forward pass (6 layers, 8 x 300 tokens) 1.6x slower than 1 thread (6.9 s vs
4.4 s) and used 1.6x its CPU (`experiments/bench_pipeline.py --threads-only` repeats it). Generation, token by
token, is many small parallel regions, each a barrier: it suffers most.

What "free" means: the cores this process may run on (its affinity mask) less the cores the *other* processes
kept busy over a recent interval, read from the kernel's counters (`/proc/stat`: every core's busy time;
`/proc/self/stat`: this process's own), never the 1-minute load average. That average lags: right after
`setup.sh` (pip, for a minute) it still said 1.5 on an idle 2-core machine, and the README's demo ran its
whole life on one thread (12.4 min against 7). `rebalance_threads()`
(called between batches of judging and generation) measures the interval since its last call, so company that
arrives or leaves is seen within one batch. At start there is no interval yet, and a command must not wait for
one: the estimate is the other processes' threads runnable now (`procs_running`), corrected at the first batch.
Where /proc is missing, the load average is the fallback.

The CLI decides at its start; the Python API (a notebook, `interp.dbg`) at its first batch of judging or
generation (`rebalance_threads`), unless someone set torch's count. `INTERP_THREADS` pins the count (never
re-decided), and so does a fixed count given to `set_torch_threads` (organism training, for reproducible
reductions). torch's thread count is itself process-wide, so the record of what was decided (`threads_used`,
printed by `--timings`) lives here, beside it.

Work whose bits must not depend on the load (an organism's training, at a fixed count of one) can still use the free
cores: `side_by_side` runs independent pieces of it in `one_thread_workers()` threads, each op on one thread, so
each piece comes out as it would alone.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Sequence, TypeVar

from interp.errors import InterpError

ENV = "INTERP_THREADS"
MIN_INTERVAL_S = 0.5  # shorter intervals between batches are too noisy to decide on
THREADS_PER_CORE = 4  # the most INTERP_THREADS may pin per core (`pinned_threads`): more only slows, far more crashes

Reader = Callable[[str], str]  # a /proc file's path -> its text (tests pass a fake one)


def read_proc(path: str) -> str:
    """The text of a /proc file: the `Reader` used outside tests."""
    with open(path) as handle:
        return handle.read()


def allowed_set() -> set[int] | None:
    """The core numbers this process may run on (its affinity mask), or None where the platform does not say."""
    return set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def allowed_cores() -> int:
    """Cores this process may run on: its affinity mask (a container or `taskset` may allow fewer than exist)."""
    allowed = allowed_set()
    return max(1, len(allowed) if allowed is not None else os.cpu_count() or 1)


def system_load() -> float:
    """Runnable processes, averaged over the last minute (0 where the platform does not say): the fallback."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def free_cores(cores: int, load: float) -> int:
    """Of `cores`, those the others' load leaves free (at least 1): a load of 1.4 on 2 cores leaves 1."""
    return max(1, cores - round(load))


@dataclass(frozen=True)
class CpuSample:
    """Cumulative CPU seconds at one moment: every core's busy time, and this process's own (all its threads)."""

    wall: float
    busy: float
    own: float

    @classmethod
    def now(cls, read: Reader = read_proc) -> "CpuSample | None":
        """The counters now, over the cores this process may run on (`/proc/stat`'s per-core lines), with the
        kernel's clock (`/proc/uptime`), or None where they cannot be read. `read`: how a /proc file is read."""
        allowed = allowed_set()
        try:
            wall = float(read("/proc/uptime").split()[0])
            busy = 0
            for line in read("/proc/stat").splitlines():
                name, *fields = line.split() or [""]
                if not name.startswith("cpu") or name == "cpu":
                    continue
                if not name[3:].isdigit():
                    break
                if allowed is not None and int(name[3:]) not in allowed:
                    continue
                ticks = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
                busy += sum(ticks) - ticks[3] - ticks[4]
            own = read("/proc/self/stat").rsplit(")", 1)[1].split()
        except (OSError, ValueError, IndexError):
            return None
        hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        return cls(wall, busy / hz, (int(own[11]) + int(own[12])) / hz)  # utime + stime


def others_busy(before: CpuSample, after: CpuSample) -> float:
    """Cores the other processes kept busy between two samples (every core's busy time less this process's)."""
    elapsed = after.wall - before.wall
    if elapsed <= 0:
        return 0.0
    return max(0.0, ((after.busy - before.busy) - (after.own - before.own)) / elapsed)


def max_threads() -> int:
    """The most threads `INTERP_THREADS` may pin: `THREADS_PER_CORE` per core of the machine."""
    return THREADS_PER_CORE * max(1, os.cpu_count() or 1, allowed_cores())


def pinned_threads(env: Mapping[str, str] | None = None) -> int | None:
    """`INTERP_THREADS` as a whole number from 1 to `max_threads()`, or None when unset; anything else is one line.

    The bound is refused, never clamped: torch asked for tens of thousands of OpenMP threads crashes the process
    (`INTERP_THREADS=99999`: every command died of a segmentation fault, exit 139), and a count silently lowered
    would not be the count the user pinned."""
    env = os.environ if env is None else env
    value = env.get(ENV, "").strip()
    if not value:
        return None
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise InterpError(f"{ENV} must be a whole number of threads, at least 1, not {value!r}")
    if count > max_threads():
        raise InterpError(
            f"{ENV}={value} is more threads than this machine can run ({os.cpu_count()} cores); "
            f"use at most {max_threads()} ({THREADS_PER_CORE} per core), or unset it to use the free cores"
        )
    return count


def torch_threads(env: Mapping[str, str] | None = None, *, cores: int | None = None, load: float | None = None) -> int:
    """The thread count for torch: `INTERP_THREADS` when set, else the free cores.

    `load`: the other processes' busy cores (default: `runnable_others`, their runnable threads now); `cores`:
    this process's affinity mask.
    """
    pinned = pinned_threads(env)
    if pinned is not None:
        return pinned
    cores = allowed_cores() if cores is None else cores
    if load is None:
        load = runnable_others()
    return free_cores(cores, load)


def runnable_others(read: Reader = read_proc) -> float:
    """Threads of other processes runnable now (`/proc/stat`'s procs_running, less this one's main thread): an
    instant estimate for the start, with no wait; `rebalance_threads` measures properly from the first batch on.
    The 1-minute load average where there is no /proc."""
    try:
        for line in read("/proc/stat").splitlines():
            if line.startswith("procs_running"):
                return max(0.0, float(line.split()[1]) - 1)
    except (OSError, ValueError, IndexError):
        pass
    return system_load()


@dataclass
class _Decision:
    """What `set_torch_threads` decided last: whether the count follows the free cores, the sample the next
    decision measures from, and every count used (in order, without repeats)."""

    automatic: bool = False
    since: CpuSample | None = None
    used: list[int] = field(default_factory=list)


_DECISION = _Decision()


def _record(count: int) -> None:
    if not _DECISION.used or _DECISION.used[-1] != count:
        _DECISION.used.append(count)


def set_torch_threads(count: int | None = None, *, read: Reader = read_proc) -> int:
    """Set torch's intra-op threads to `count` (a fixed count, e.g. a training's, for reproducible reductions:
    never re-decided), or to `torch_threads()` when None (re-decided by `rebalance_threads` unless
    `INTERP_THREADS` pins it); returns the count set. `read`: how /proc files are read (tests pass a fake)."""
    import torch

    automatic = count is None and pinned_threads() is None
    count = torch_threads(load=runnable_others(read)) if count is None else count
    if count < 1:
        raise InterpError(f"thread count must be at least 1, not {count}")
    torch.set_num_threads(count)
    _DECISION.automatic, _DECISION.since = automatic, CpuSample.now(read) if automatic else None
    _record(count)
    return count


def _torch_default(count: int) -> bool:
    """Whether torch's count is still its own default (one thread per core, no OMP_NUM_THREADS/MKL_NUM_THREADS)
    rather than a count someone chose (`torch.set_num_threads`, a test worker's share)."""
    if any(os.environ.get(name, "").strip() for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")):
        return False
    return count in {allowed_cores(), os.cpu_count()}


def rebalance_threads(read: Reader = read_proc) -> int:
    """Between batches: when the count follows the free cores, decide it again from the other processes' use
    since the last decision (at least `MIN_INTERVAL_S` ago) and set it; returns torch's count.

    A process that never decided (the Python API: a notebook, `interp.dbg`, `validate`; only the CLI decides
    at its start) decides at its first batch, as the CLI does, when torch's count is still its default: torch's
    one thread per core beside a busy process halved the validation notebook's speed (two side by side: 405 s
    each at torch's 2 threads, 215 s each at 1). A count someone set, before or since, is kept and never
    re-decided."""
    import torch

    if not _DECISION.used:
        if _torch_default(torch.get_num_threads()):
            return set_torch_threads(read=read)
        _record(torch.get_num_threads())
        return torch.get_num_threads()
    if not _DECISION.automatic or _DECISION.since is None:
        return torch.get_num_threads()
    if torch.get_num_threads() != _DECISION.used[-1]:  # someone set torch's count since: theirs from now on
        _DECISION.automatic = False
        _record(torch.get_num_threads())
        return torch.get_num_threads()
    now = CpuSample.now(read)
    if now is None or now.wall - _DECISION.since.wall < MIN_INTERVAL_S:
        return torch.get_num_threads()
    count = free_cores(allowed_cores(), others_busy(_DECISION.since, now))
    _DECISION.since = now
    if count != torch.get_num_threads():
        torch.set_num_threads(count)
    _record(count)
    return count


@contextmanager
def following_free_cores(read: Reader = read_proc) -> Iterator[int]:
    """Within: torch's count follows the free cores (decided now, re-decided by `rebalance_threads`; pinned by
    `INTERP_THREADS`), whatever fixed count was set before; on exit that count and its decision come back.

    For work whose result does not depend on the count, inside a process that fixed one for work whose result
    does: an organism's training answers (greedy; their cache key never held the count) before its gradient
    steps (docs/organisms.md, "Training time on a fresh machine")."""
    import torch

    before, automatic, since = torch.get_num_threads(), _DECISION.automatic, _DECISION.since
    try:
        yield set_torch_threads(read=read)
    finally:
        torch.set_num_threads(before)
        _DECISION.automatic, _DECISION.since = automatic, since
        _record(before)


def threads_used() -> list[int]:
    """The counts torch ran on since the process started deciding, in order (e.g. [1, 2]: company left)."""
    return list(_DECISION.used)


T = TypeVar("T")
R = TypeVar("R")


def one_thread_workers(device=None) -> int:
    """How many pieces of work may run side by side in threads: the free cores (`torch_threads`; `INTERP_THREADS`
    pins them) where the work runs on the CPU (`device`; None: the CPU) and torch runs one thread per op (a
    training's fixed count), else 1. Each piece is then computed by the same one-thread kernels as alone, so its
    bits do not depend on how many run beside it, where more threads per op may split a reduction differently
    (docs/organisms.md, "Training time on a fresh machine")."""
    import torch

    if device is not None and torch.device(device).type != "cpu":
        return 1
    return torch_threads() if torch.get_num_threads() == 1 else 1


def side_by_side(work: Callable[[T], R], pieces: Sequence[T], workers: int | None = None) -> Iterator[R]:
    """`work(p)` for each of `pieces`, yielded in order, run in `workers` threads (default `one_thread_workers()`).
    `work` must not change shared state (a model's modules, hooks or config): enter such contexts around it."""
    from concurrent.futures import ThreadPoolExecutor

    workers = one_thread_workers() if workers is None else workers
    if workers <= 1 or len(pieces) < 2:
        yield from map(work, pieces)
        return
    with ThreadPoolExecutor(min(workers, len(pieces))) as pool:
        yield from pool.map(work, pieces)
