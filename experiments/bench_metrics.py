"""Benchmark: read, validate and score Chen et al. 2025's MATH500 release (38,500 rows).

Prints `name: value` lines. The headline figure, math500_read_score_seconds, is the wall time of
read_chen2025 + the judge table (SPR, JA, LSPR, HSPP, SPR_diff, SPR_same for all 11 judges) in one
process on one core; target < 3 s. Usage: python experiments/bench_metrics.py [FILE] [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interp import metrics  # noqa: E402

DEFAULT_DATA = next(
    (
        path
        for path in (
            REPO.parent / "shared" / "data" / "chen2025_math500.jsonl.gz",
            Path("/work/shared/data/chen2025_math500.jsonl.gz"),
        )
        if path.exists()
    ),
    REPO.parent / "shared" / "data" / "chen2025_math500.jsonl.gz",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=3, help="Runs; the best time is reported.")
    args = parser.parse_args()
    if not args.file.exists():
        print(f"error: {args.file} not found", file=sys.stderr)
        return 2

    read_times, score_times = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        records = metrics.read_chen2025(args.file)
        read_done = time.perf_counter()
        table = metrics.chen2025_judge_table(records, "paper")
        score_done = time.perf_counter()
        read_times.append(read_done - start)
        score_times.append(score_done - read_done)
    totals = [r + s for r, s in zip(read_times, score_times, strict=False)]

    start = time.perf_counter()
    metrics.chen2025_bootstrap(records, "paper", n_boot=1000, seed=0)
    bootstrap_seconds = time.perf_counter() - start

    print(f"math500_rows: {len(records)}")
    print(f"math500_judges: {len(table)}")
    print(f"math500_read_seconds: {min(read_times):.3f}")
    print(f"math500_score_seconds: {min(score_times):.3f}")
    print(f"math500_read_score_seconds: {min(totals):.3f}")
    print(f"math500_read_score_seconds_worst: {max(totals):.3f}")
    print(f"math500_bootstrap_1000_seconds: {bootstrap_seconds:.3f}")
    for judge in ("qwen-2.5-72b", "llama-3.3-70b", "llama-3.2-3b"):
        if judge in table:
            for metric in ("SPR", "JA", "LSPR", "HSPP"):
                print(f"{judge}_{metric}: {100 * table[judge][metric]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
