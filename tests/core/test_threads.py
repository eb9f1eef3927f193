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
    run = subprocess.run(
        [sys.executable, "-c", "from interp.cli import main; main(['models', '--help'])"],
        env=env | {ENV: "zero"},
        capture_output=True,
        text=True,
    )
    assert (
        run.returncode == 2
        and run.stderr.startswith(f"error: {ENV} must be a whole number")
        and "Traceback" not in run.stderr
    )
    probe = (
        "import torch; from interp.cli import main\ntry:\n    main(['models', '--help'])\n"
        "except SystemExit:\n    pass\nprint('threads', torch.get_num_threads())"
    )
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert run.stdout.strip().endswith("threads 2"), run.stdout + run.stderr


class FakeProc:
    """A /proc to read instead of the kernel's: the machine's state is set by the test (`at`), so every decision
    is made from known counters. Two cores (0 and 1); times in seconds."""

    def __init__(self):
        self.hz = os.sysconf("SC_CLK_TCK")
        self.at(uptime=100.0, busy=(0.0, 0.0), own=0.0, running=1)

    def at(self, *, uptime: float, busy: tuple[float, float], own: float, running: int) -> None:
        self.state = (uptime, busy, own, running)

    def __call__(self, path: str) -> str:
        uptime, busy, own, running = self.state
        tick = lambda seconds: int(round(seconds * self.hz))  # noqa: E731
        if path == "/proc/uptime":
            return f"{uptime:.2f} 0.00\n"
        if path == "/proc/stat":
            # user nice system idle iowait irq softirq steal guest guest_nice: busy split over user and system,
            # idle and iowait (not busy) large, so only the busy fields can move the estimate
            cores = [
                f"cpu{n} {tick(b / 2)} 0 {tick(b - b / 2)} {tick(uptime * 3)} 7 0 0 0 0 0" for n, b in enumerate(busy)
            ]
            total = sum(tick(b) for b in busy)
            return (
                "\n".join(
                    [
                        f"cpu {total} 0 0 0 0 0 0 0 0 0",
                        *cores,
                        "intr 5 1 2",
                        f"procs_running {running}",
                        "procs_blocked 0",
                    ]
                )
                + "\n"
            )
        if path == "/proc/self/stat":
            fields = ["S"] + ["0"] * 10 + [str(tick(own / 2)), str(tick(own - own / 2))] + ["0"] * 30
            return "4242 (python (x)) " + " ".join(fields) + "\n"
        raise OSError(f"no {path} in the fake /proc")


def test_the_count_follows_the_other_processes_read_from_a_fake_proc(monkeypatch):
    """Every decision from the kernel's counters, read through the reader the caller passes: at start the
    runnable threads now (procs_running, less this process), then, between batches, the cores the others kept
    busy since the last decision (all cores' busy time less this process's own), never the lagging load average."""
    import torch

    from interp.core import threads
    from interp.core.threads import rebalance_threads, threads_used

    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setattr(threads, "allowed_set", lambda: {0, 1})
    monkeypatch.setattr(threads, "system_load", lambda: 9.0)  # a stale 1-minute average that must not be read
    monkeypatch.setattr(threads, "_DECISION", threads._Decision())
    proc = FakeProc()
    before = torch.get_num_threads()
    try:
        proc.at(uptime=100.0, busy=(50.0, 40.0), own=3.0, running=2)  # one other thread runnable besides ours
        assert set_torch_threads(read=proc) == 1 and torch.get_num_threads() == 1
        proc.at(uptime=100.2, busy=(50.2, 40.0), own=3.2, running=1)
        assert rebalance_threads(read=proc) == 1  # 0.2 s: too short an interval to decide on, kept
        proc.at(uptime=102.0, busy=(51.0, 41.0), own=5.0, running=1)  # 2 core-s busy in 2 s, all of it ours
        assert rebalance_threads(read=proc) == 2 and torch.get_num_threads() == 2
        proc.at(uptime=104.0, busy=(53.0, 43.0), own=7.0, running=3)  # 4 core-s busy in 2 s, 2 of them ours
        assert rebalance_threads(read=proc) == 1
        assert threads_used() == [1, 2, 1]
        # a /proc that cannot be read: the count is kept as it is
        assert rebalance_threads(read=lambda path: (_ for _ in ()).throw(OSError(path))) == 1
    finally:
        torch.set_num_threads(before)


def test_a_busy_core_outside_the_affinity_mask_is_not_company(monkeypatch):
    """Another process busy on a core this process may not run on takes nothing from it."""
    from interp.core import threads
    from interp.core.threads import CpuSample, others_busy

    monkeypatch.setattr(threads, "allowed_set", lambda: {0})
    proc = FakeProc()
    proc.at(uptime=10.0, busy=(1.0, 1.0), own=0.0, running=1)
    first = CpuSample.now(read=proc)
    proc.at(uptime=12.0, busy=(1.0, 3.0), own=0.0, running=2)  # core 1 fully busy for 2 s
    assert others_busy(first, CpuSample.now(read=proc)) == 0.0
    monkeypatch.setattr(threads, "allowed_set", lambda: {0, 1})
    proc.at(uptime=10.0, busy=(1.0, 1.0), own=0.0, running=1)
    first = CpuSample.now(read=proc)
    proc.at(uptime=12.0, busy=(1.0, 3.0), own=0.0, running=2)
    assert others_busy(first, CpuSample.now(read=proc)) == 1.0
    assert others_busy(CpuSample(0.0, 0.0, 0.0), CpuSample(1.0, 1.5, 0.5)) == 1.0


def test_a_pinned_or_fixed_count_is_never_decided_again(monkeypatch):
    import torch

    from interp.core import threads
    from interp.core.threads import rebalance_threads

    monkeypatch.setattr(threads, "allowed_set", lambda: {0, 1})
    monkeypatch.setattr(threads, "_DECISION", threads._Decision())
    proc = FakeProc()
    before = torch.get_num_threads()
    try:
        proc.at(uptime=0.0, busy=(0.0, 0.0), own=0.0, running=9)
        monkeypatch.setenv(ENV, "2")
        assert set_torch_threads(read=proc) == 2
        proc.at(uptime=9.0, busy=(9.0, 9.0), own=0.0, running=9)
        assert rebalance_threads(read=proc) == 2  # the machine is full, but the user said 2
        monkeypatch.delenv(ENV)
        proc.at(uptime=0.0, busy=(0.0, 0.0), own=0.0, running=9)
        assert set_torch_threads(2, read=proc) == 2
        proc.at(uptime=9.0, busy=(9.0, 9.0), own=0.0, running=9)
        assert rebalance_threads(read=proc) == 2  # a training's fixed count
    finally:
        torch.set_num_threads(before)


def test_a_python_caller_that_never_decided_decides_at_its_first_batch(monkeypatch):
    """Only the CLI decides at its start: a notebook's first batch of judging decides the same way when torch's
    count is still its default (one per core), and a count someone set (a test worker's share, the user's own
    `torch.set_num_threads`, OMP_NUM_THREADS) is kept as it is."""
    import torch

    from interp.core import threads
    from interp.core.threads import rebalance_threads, threads_used

    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "allowed_set", lambda: {0, 1})
    monkeypatch.setattr(threads, "_DECISION", threads._Decision())
    proc = FakeProc()
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # torch's default on these two cores
        proc.at(uptime=100.0, busy=(50.0, 40.0), own=3.0, running=2)  # another process busy beside
        assert rebalance_threads(read=proc) == 1 and torch.get_num_threads() == 1
        proc.at(uptime=102.0, busy=(51.0, 41.0), own=5.0, running=1)  # then it leaves: followed from now on
        assert rebalance_threads(read=proc) == 2 and threads_used() == [1, 2]
        torch.set_num_threads(1)  # the user's own count, set since: kept from now on, the machine idle or not
        proc.at(uptime=104.0, busy=(52.0, 42.0), own=7.0, running=1)
        assert rebalance_threads(read=proc) == 1
        proc.at(uptime=106.0, busy=(53.0, 43.0), own=9.0, running=1)
        assert rebalance_threads(read=proc) == 1 and threads_used() == [1, 2, 1]

        for chosen, env in ((1, {}), (2, {"OMP_NUM_THREADS": "2"})):
            monkeypatch.setattr(threads, "_DECISION", threads._Decision())
            for name, value in env.items():
                monkeypatch.setenv(name, value)
            torch.set_num_threads(chosen)
            proc.at(uptime=200.0, busy=(50.0, 40.0), own=3.0, running=2)
            assert rebalance_threads(read=proc) == chosen
            proc.at(uptime=202.0, busy=(52.0, 42.0), own=3.0, running=3)
            assert rebalance_threads(read=proc) == chosen and threads_used() == [chosen]  # never decided again
    finally:
        torch.set_num_threads(before)


def test_work_whose_result_ignores_the_count_follows_the_free_cores_inside_a_fixed_count(monkeypatch):
    """An organism's training fixes its count (1) for its gradient steps; its answers, generated before, follow
    the free cores (2 on an idle machine, re-decided between batches), and the fixed count comes back after,
    never re-decided. INTERP_THREADS still pins the count inside."""
    import torch

    from interp.core import threads
    from interp.core.threads import following_free_cores, rebalance_threads, threads_used

    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setattr(threads, "allowed_set", lambda: {0, 1})
    monkeypatch.setattr(threads, "_DECISION", threads._Decision())
    proc = FakeProc()
    before = torch.get_num_threads()
    try:
        assert set_torch_threads(1, read=proc) == 1  # the training's fixed count
        proc.at(uptime=100.0, busy=(50.0, 40.0), own=3.0, running=1)  # nothing else runnable
        with following_free_cores(read=proc) as count:
            assert count == 2 and torch.get_num_threads() == 2
            proc.at(uptime=104.0, busy=(54.0, 44.0), own=6.0, running=2)  # company: 8 core-s busy in 4 s, 3 ours
            assert rebalance_threads(read=proc) == 1  # followed between batches
        assert torch.get_num_threads() == 1 and threads_used() == [1, 2, 1]
        proc.at(uptime=106.0, busy=(54.0, 44.0), own=6.0, running=1)  # the company leaves: the fixed count stays
        proc.at(uptime=108.0, busy=(56.0, 46.0), own=8.0, running=1)
        assert rebalance_threads(read=proc) == 1
        monkeypatch.setenv(ENV, "1")
        with following_free_cores(read=proc) as count:
            assert count == 1 and torch.get_num_threads() == 1  # pinned by the user, idle machine or not
    finally:
        torch.set_num_threads(before)
