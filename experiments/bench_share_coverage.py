"""The share's interval, covered: how often the share-removed interval holds the true share, by simulation.

    python experiments/bench_share_coverage.py [--sims 5000] [--seed 0]

Simulated judges (`interp.metrics.share.simulate_share_judges`): one tested judge and k control judges
on 90 test items, the variance between seeds dominant (judge SD 0.10, drop SD 0.05, item noise SD 0.05); the
judge sits 0.30 above its controls' population and the intervention removes half of that gap (true share 0.5).
For k = 3, 6 and 12 controls, it prints the coverage of Fieller's interval (`share_fieller`, the toolkit's
share interval) at a nominal 95 %, over every simulation and over those where the one-sided gap gate passes
(where a share is reported), beside the old percentile multi-bootstrap's (fewer simulations: it resamples).
Then the tight-controls case, where a gate that passes can still leave the share unbounded (a gap of 0.6 points,
controls 0.1 points apart, item noise 5 points): how often the gate passes and how often Fieller's interval is
then unbounded. One `name: value` a line.
"""

from __future__ import annotations

import argparse

import numpy as np

from interp.metrics.share_coverage import share_interval_coverage

TIGHT = dict(gap=0.006, share=0.5, judge_sd=0.001, drop_sd=0.001, item_sd=0.0, noise_sd=0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=5000, help="simulations per k (Fieller)")
    parser.add_argument("--percentile-sims", type=int, default=500, help="simulations per k (old percentile)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"n_sims: {args.sims}")
    print(f"n_sims_percentile: {args.percentile_sims}")
    for k in (3, 6, 12):
        new = share_interval_coverage(k, n_sims=args.sims, seed=args.seed + k)
        old = share_interval_coverage(k, method="percentile", n_sims=args.percentile_sims, seed=args.seed + k)
        print(f"coverage_k{k}: {new.coverage:.3f}")
        print(f"coverage_k{k}_ci: [{new.ci[0]:.3f}, {new.ci[1]:.3f}]")
        print(f"coverage_gated_k{k}: {new.coverage_gated:.3f}")
        print(f"gated_k{k}: {new.gated / new.n_sims:.3f}")
        print(f"unbounded_k{k}: {new.unbounded / new.n_sims:.3f}")
        print(f"coverage_percentile_k{k}: {old.coverage:.3f}")
        print(f"coverage_gated_percentile_k{k}: {old.coverage_gated:.3f}")
        print(f"dropped_percentile_k{k}: {old.dropped}")
    tight = share_interval_coverage(6, n_sims=args.sims, seed=args.seed, **TIGHT)
    print(f"tight_gated_k6: {tight.gated / tight.n_sims:.3f}")
    print(f"tight_unbounded_k6: {tight.unbounded / tight.n_sims:.3f}")
    print(f"tight_unbounded_when_gated_k6: {tight.unbounded_gated / max(tight.gated, 1):.3f}")
    print(f"tight_coverage_k6: {tight.coverage:.3f}")
    print(f"tight_coverage_gated_k6: {np.nan if tight.coverage_gated is None else tight.coverage_gated:.3f}")


if __name__ == "__main__":
    main()
