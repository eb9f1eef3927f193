"""The specificity check, simulated: a pure flattening is not called causal, a true removal still is.

    python experiments/bench_specificity.py [--sims 500] [--power-sims 300] [--seed 0]

Simulated judges (`interp.metrics.specificity_sim`): one tested judge 15 points of P(own) above its controls'
population, k = 6 and 12 controls, 90 test pairs, each read in both orders; the edit's between-control spread of
the mean change of P(own) set to 1.1, 1.3 and 2.0 points. For a pure flattening (every verdict's log-odds times
lambda = 0.4 and 0.6, no own-answer bias removed) it prints how often the decision calls the edit causal: the old
rule (gap gate, between-judge p, share above 0) and the new one (the same and the specificity check). For a true
removal of a share r of the judge's own-answer bias (no flattening, and with lambda 0.6 on top) it prints the
power of both rules. One `name: value` a line; rates are shares of the simulations.
"""

from __future__ import annotations

import argparse

from interp.metrics.specificity_sim import FlatteningModel, decision_rates

SPREADS = (0.011, 0.013, 0.020)
CONTROLS = (6, 12)
LAMBDAS = (0.4, 0.6)
REMOVALS = (0.1, 0.2, 0.3, 0.5)


def _tag(k: int, spread: float) -> str:
    return f"k{k}_spread{round(1000 * spread)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=500, help="simulations per flattening cell")
    parser.add_argument("--power-sims", type=int, default=300, help="simulations per removal cell")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"n_sims_flattening: {args.sims}")
    print(f"n_sims_removal: {args.power_sims}")
    for k in CONTROLS:
        for spread in SPREADS:
            tag = _tag(k, spread)
            for lam in LAMBDAS:
                rates = decision_rates(FlatteningModel(k=k, spread=spread, lam=lam), n_sims=args.sims, seed=args.seed)
                name = f"flatten_lambda{round(10 * lam)}_{tag}"
                print(f"{name}_spread_reached: {100 * rates.spread:.2f}")
                print(f"{name}_fpr_old: {rates.old:.3f}")
                print(f"{name}_fpr_new: {rates.new:.3f}")
                print(f"{name}_specific: {rates.specific:.3f}")
            for lam in (1.0, 0.6):
                for removal in REMOVALS:
                    model = FlatteningModel(k=k, spread=spread, lam=lam, removal=removal)
                    rates = decision_rates(model, n_sims=args.power_sims, seed=args.seed)
                    name = f"remove{round(100 * removal)}_lambda{round(10 * lam)}_{tag}"
                    print(f"{name}_power_old: {rates.old:.3f}")
                    print(f"{name}_power_new: {rates.new:.3f}")


if __name__ == "__main__":
    main()
