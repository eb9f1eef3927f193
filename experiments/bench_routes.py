"""The route test's calibration and the whole decision's power, by simulation (issue 81, items 2, 3 and 6).

    python experiments/bench_routes.py [--draws 2000] [--old-draws 400] [--power-draws 400] [--only routes|power]

1. Routes (`interp.metrics.route_test`): equal pattern and content shares (0.4 of a 15-point gap each, the total
   0.8 and taken as causal), 6 and 12 controls, between-control spreads of the route parts of 1, 2 and 4 points,
   90 items, the tested judge's item noise 20 points an item (its parts move it) against its controls' 5 (they
   hardly move). How often each route is named by the new rule (`route_call`), by the same contrast test without
   the judge's own variance, and by the old rule (`interp.studies.routes.difference_interval`: the paired
   multi-bootstrap interval clear of 0, the judge held fixed). Then the same with the judge's item noise equal
   to its controls' (5 points), where the judge's variance adds least.
2. The whole decision (`interp.metrics.decision_power`: gap gate, share, specificity check, multiplicity plan,
   routes), 6 and 12 controls, candidates' between-control spreads of 0.4, 2 and 4 points (the range
   docs/explain.md measured), the planted effect in units of that spread (0 to 12) and in points: the new rule's
   power (the planted candidate causal), the same without the specificity check, its check's pass rate, its
   power with the right route, the old rule's power, and each rule's false positives (a candidate without an
   effect called causal); then a null judge (no gap, no effect): the whole decision's false-positive rate.

One `name: value` a line (spreads and effects in points, `s2` = a 2-point spread, `e4` = 4 spreads).
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from interp.metrics.decision_power import DecisionModel, decision_rates, null_judge
from interp.metrics.route_test import RouteModel, route_between_judges, route_call, simulate_route_judges
from interp.metrics.student_t import student_t_cdf
from interp.studies.routes import difference_interval

SPREADS = (1, 2, 4)  # points, the route parts' between-control spread
CANDIDATE_SPREADS = (0.4, 2, 4)  # points, the candidates'
EFFECTS = (0, 2, 4, 6, 8, 12)  # units of the candidates' spread


def route_rates(k: int, model: RouteModel, draws: int, old_draws: int, seed: int) -> dict[str, float]:
    """Each rule's rates of naming pattern and content on `draws` simulated judges (the old rule on the first
    `old_draws`)."""
    rng = np.random.default_rng(seed)
    counts = {f"{rule}_{route}": 0 for rule in ("new", "no_judge_variance", "old") for route in ("pattern", "content")}
    for d in range(draws):
        judge, controls = simulate_route_judges(rng, k, model)
        test = route_between_judges(judge, controls)
        route, _, _ = route_call(model.total, 0.5 * model.total, 0.0, test, test.p_route)
        if route != "neither":
            counts[f"new_{route}"] += 1
        xs = np.asarray(test.contrast_controls)
        t = (test.contrast_judge - xs.mean()) / (xs.std(ddof=1) * np.sqrt((k + 1) / k))
        p_content = float(student_t_cdf(t, k - 1))
        plain = dataclasses.replace(test, t=t, p_content=p_content, p_pattern=1 - p_content)
        plain = dataclasses.replace(plain, p_route=min(1.0, 2 * min(p_content, 1 - p_content)))
        route, _, _ = route_call(model.total, 0.5 * model.total, 0.0, plain, plain.p_route)
        if route != "neither":
            counts[f"no_judge_variance_{route}"] += 1
        if d < old_draws:
            _, (low, high) = difference_interval(judge[None], controls, n_boot=500, seed=d)
            if low > 0:
                counts["old_pattern"] += 1
            elif high < 0:
                counts["old_content"] += 1
    return {key: value / max(old_draws if key.startswith("old") else draws, 1) for key, value in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000, help="simulated judges per route cell (new rule)")
    parser.add_argument("--old-draws", type=int, default=400, help="of those, judged by the old rule too")
    parser.add_argument("--power-draws", type=int, default=400, help="simulated explanations per power cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("routes", "power"), default=None, help="one half of the bench")
    args = parser.parse_args()
    if args.only != "power":
        routes(args)
    if args.only != "routes":
        power(args)


def routes(args) -> None:
    """Part 1: the route rules' rates under equal shares."""
    print(f"route_draws: {args.draws}")
    print(f"route_old_draws: {args.old_draws}")
    for k in (6, 12):
        for spread in SPREADS:
            model = dataclasses.replace(RouteModel(), spread=spread / 100)
            rates = route_rates(k, model, args.draws, args.old_draws if k == 6 else 0, args.seed + spread)
            for key, value in rates.items():
                if not (key.startswith("old") and k != 6):
                    print(f"route_{key}_k{k}_s{spread}: {value:.4f}")
            equal = dataclasses.replace(model, judge_noise=model.control_noise)
            rates = route_rates(k, equal, args.draws, 0, args.seed + 10 + spread)
            print(f"route_new_pattern_equal_noise_k{k}_s{spread}: {rates['new_pattern']:.4f}")
            print(f"route_new_content_equal_noise_k{k}_s{spread}: {rates['new_content']:.4f}")


def power(args) -> None:
    """Part 2: the whole decision's power and false positives."""
    print(f"power_draws: {args.power_draws}")
    for k in (6, 12):
        for spread in CANDIDATE_SPREADS:
            name = f"k{k}_s{spread:g}"
            found = {"new": None, "new_no_specificity": None, "old": None}
            for effect in EFFECTS:
                model = DecisionModel(effect=effect * spread / 100, spread=spread / 100)
                r = decision_rates(k, model, n_draws=args.power_draws, seed=args.seed + effect)
                for key, value in r.rates.items():
                    print(f"decision_{key}_{name}_e{effect}: {value:.3f}")
                for rule in found:
                    if found[rule] is None and r.rates[rule] >= 0.8:
                        found[rule] = effect
            for rule, effect in found.items():
                shown = "none" if effect is None else f"{effect} ({effect * spread:g} pts)"
                print(f"effect80_{rule}_{name}: {shown}")
            null = decision_rates(k, null_judge(DecisionModel(spread=spread / 100)), n_draws=args.power_draws, seed=99)
            print(f"decision_null_judge_fpr_new_{name}: {null.rates['new_false']:.3f}")
            print(f"decision_null_judge_fpr_new_no_specificity_{name}: {null.rates['new_no_specificity_false']:.3f}")
            print(f"decision_null_judge_fpr_old_{name}: {null.rates['old_false']:.3f}")


if __name__ == "__main__":
    main()
