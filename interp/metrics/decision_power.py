"""Power and false-positive rate of the whole decision of `interp explain`, by simulation: the gap gate, the share
of the gap removed (Fieller, its interval above 0), the specificity check, the multiplicity plan
(`interp.metrics.power_budget`) and the route (`interp.metrics.route_test`), on simulated judges whose spreads are
calibrated to the runs measured in docs/explain.md (`DecisionModel`; `python experiments/bench_routes.py` prints
the table in docs/causal-test.md).

Each draw: a tested judge J and k control judges on n test items. Per-item DBG before any edit (J `gap` above
its controls' population, seed SD `dbg_spread`, item noise `dbg_noise`); `n_methods` primary candidates, each a
drop of DBG per judge (seed SD `spread`), J's first candidate carrying the planted `effect` (points of DBG
removed beyond its controls), the others none; for the first candidate, a head set, its route parts (the total
removes `effect`, the pattern part `pattern` of it, the content part the rest). A judge's item noise under an
edit grows with what the edit moves in it (`control_noise` + `noise_per_effect` x its drop: measured, J's change
of -18 points on 90 items had an SE of 3.3 points while its controls, which hardly moved, agreed to 0.1).

Two rules are read on the same draws:

- `new`: the one-sided removal test (Crawford-Howell, "less" on the change of P(own)), Holm across the methods'
  primaries with each head set's route total and contrast gate-kept behind its primary, random sets outside, the
  share's interval at 1 - test_alpha, and the specificity check (`interp.metrics.specificity.specificity_test`,
  the margin-adjusted intercept test at test_alpha); the route by `route_call` (between judges, at least half of
  the total). `new_no_specificity` is the same without the check: what the check costs.
- `old`: the two-sided test, Holm over every candidate (the primaries and `n_random` random sets), the share's
  95 % interval, no specificity check (the route is not read: the old route rule's calibration is its own table).

The specificity check reads per-pair P(own), not DBG: each item's value x (a DBG contribution, gold's P(own) taken
as 0.5 on every item, which cancels in every gap) is read as P(own) = sigmoid(`logit_scale` x), the identity to
first order at a margin of 0 (the slope of the logistic there is 1/4). An edit's drop of DBG is then a shift of the
own-answer log-odds (no flattening), the removal the check is built to pass; a flattening, the check's negative
control, is simulated in `interp.metrics.specificity_sim`. The check runs only where it can change a call (the
rest of the decision passed), which leaves every call as if it ran everywhere.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from interp.errors import InterpError
from interp.metrics.causal_test import ALPHA, holm
from interp.metrics.judge_level import MIN_CONTROLS, crawford_howell
from interp.metrics.power_budget import multiplicity_plan
from interp.metrics.route_test import route_between_judges, route_call
from interp.metrics.share import causal_call, share_fieller
from interp.metrics.specificity import specificity_test
from interp.metrics.stats import clopper_pearson


@dataclass(frozen=True)
class DecisionModel:
    """The simulated judges of one cell (DBG units: 0.01 is one point). Defaults from docs/explain.md's runs: 90
    test items, a 15-point gap (the attention-routed members), the controls' mean DBG about 1.5 points apart (the
    nulls: -4.7 to -0.7; seed SD 1 point and item noise 10 points an item beyond the items all judges share), five
    methods and three random sets (plan 5's ladder)."""

    n_items: int = 90
    gap: float = 0.15
    dbg_spread: float = 0.01
    dbg_noise: float = 0.1
    effect: float = 0.0
    spread: float = 0.02
    control_noise: float = 0.05
    noise_per_effect: float = 1.5
    pattern: float = 1.0
    n_methods: int = 5
    n_random: int = 3
    test_alpha: float = ALPHA
    logit_scale: float = 4.0  # P(own) = sigmoid(logit_scale x) for the specificity check (module docstring)
    specificity_boot: int = 200  # the check's bootstrap draws of each judge's intercept


def _drops(rng: np.random.Generator, k: int, model: DecisionModel, effect: float) -> np.ndarray:
    """Per-item drops of DBG [judge, item] under one edit: seed draws N(0, spread), J's planted `effect` on top,
    item noise that grows with each judge's drop."""
    n = model.n_items
    seeds = rng.normal(0, model.spread, k + 1)
    seeds[0] += effect
    noise = model.control_noise + model.noise_per_effect * np.abs(seeds)
    return seeds[:, None] + noise[:, None] * rng.standard_normal((k + 1, n))


def _removal_p(before: np.ndarray, after: np.ndarray, alternative: str) -> float | None:
    """Crawford-Howell on the change of DBG (after - before), J row 0 against the rest."""
    change = (after - before).mean(axis=1)
    return crawford_howell(float(change[0]), change[1:], alternative).p_value


def _share_low(before: np.ndarray, after: np.ndarray, level: float) -> tuple[float | None, float | None]:
    """The share removed and the low end of its Fieller interval (None where unbounded)."""
    share = share_fieller(before[0], after[0], before[1:], after[1:], level=level)
    low = share.low if share.kind == "bounded" else None
    return share.estimate, low


def _specific(before: np.ndarray, after: np.ndarray, model: DecisionModel) -> bool:
    """The specificity check of J (row 0) against the rest on P(own) = sigmoid(logit_scale x): passed?"""
    p_before, p_after = (1.0 / (1.0 + np.exp(-model.logit_scale * x)) for x in (before, after))
    names = [f"c{c}" for c in range(before.shape[0] - 1)]
    check = specificity_test(
        p_before[0],
        p_after[0],
        dict(zip(names, p_before[1:], strict=True)),
        dict(zip(names, p_after[1:], strict=True)),
        test_alpha=model.test_alpha,
        n_boot=model.specificity_boot,
        seed=0,
    )
    return check.passed


def decision_draw(rng: np.random.Generator, k: int, model: DecisionModel) -> dict[str, bool]:
    """One simulated explanation: whether the planted candidate is called causal under each rule, whether the new
    rule names its route right (`pattern` where the pattern part carries more of the effect, `content` where
    less), and whether any candidate without an effect is called causal (a false positive) under each rule."""
    n, alpha = model.n_items, model.test_alpha
    shared = rng.normal(0, 0.1, n)
    level = rng.normal(0, model.dbg_spread, k + 1)
    level[0] += model.gap
    before = level[:, None] + shared + model.dbg_noise * rng.standard_normal((k + 1, n))
    gate = crawford_howell(float(before[0].mean()), before[1:].mean(axis=1), "greater")
    gap = float(before[0].mean() - before[1:].mean())
    gated = gate.p_value is not None and gate.p_value <= alpha and gap > 0
    edits = [_drops(rng, k, model, model.effect if m == 0 else 0.0) for m in range(model.n_methods + model.n_random)]
    afters = [before - drop for drop in edits]
    shares = {
        rule: [_share_low(before, after, lvl) if gated else (None, None) for after in afters]
        for rule, lvl in (("new", 1 - alpha), ("old", 0.95))
    }
    p_new = [_removal_p(before, after, "less") for after in afters[: model.n_methods]]
    p_old = [_removal_p(before, after, "two-sided") for after in afters]
    # the route parts of the first (planted) candidate: total, pattern, content
    drop_p = _drops(rng, k, model, model.effect * model.pattern)
    drop_c = _drops(rng, k, model, model.effect * (1 - model.pattern))
    total_after = before - _drops(rng, k, model, model.effect)
    stages = np.stack([before, before - drop_p, before - drop_c], axis=1)  # [judge, stage, item]
    route_test = route_between_judges(stages[0], stages[1:])
    total_p = _removal_p(before, total_after, "less")
    total_share, total_low = _share_low(before, total_after, 1 - alpha) if gated else (None, None)
    sequences = {"m0": [("c0", p_new[0], ""), ("total", total_p, ""), ("contrast", route_test.p_route, "")]}
    sequences |= {f"m{m}": [(f"c{m}", p_new[m], "")] for m in range(1, model.n_methods)}
    plan = multiplicity_plan(sequences, test_alpha=alpha)
    called_plain = [
        causal_call(plan.adjusted(f"c{m}"), _low(shares["new"][m]), alpha)[0] is True for m in range(model.n_methods)
    ]
    specific = _specific(before, afters[0], model)  # the planted candidate's, always (its rate is reported)
    called_new = [
        called and (specific if m == 0 else _specific(before, afters[m], model))
        for m, called in enumerate(called_plain)
    ]
    tested = [i for i, p in enumerate(p_old) if p is not None]
    adjusted = dict(zip(tested, holm([p_old[i] for i in tested]), strict=True))
    called_old = [causal_call(adjusted.get(i), _low(shares["old"][i]), alpha)[0] is True for i in range(len(afters))]
    route, _, _ = route_call(
        total_share if gated else None,
        total_low,
        plan.adjusted("total"),
        route_test,
        plan.adjusted("contrast"),
        alpha,
    )
    carried = model.pattern - (1 - model.pattern)  # pattern's part of the effect minus content's
    right = "pattern" if carried > 0 else "content" if carried < 0 else None
    return {
        "new": called_new[0],
        "new_no_specificity": called_plain[0],
        "specific": specific,
        "old": called_old[0],
        "new_route": called_new[0] and route == right if right else called_new[0] and route != "neither",
        "new_false": any(called_new[1:]) or (model.effect == 0 and called_new[0]),
        "new_no_specificity_false": any(called_plain[1:]) or (model.effect == 0 and called_plain[0]),
        "old_false": any(called_old[1:]) or (model.effect == 0 and called_old[0]),
    }


def _low(share: tuple[float | None, float | None]) -> dict | None:
    estimate, low = share
    return None if estimate is None else {"low": low}


@dataclass(frozen=True)
class DecisionRates:
    """Each rule's rates over `n_draws` simulated explanations of one cell, with Clopper-Pearson 95 % intervals."""

    k: int
    model: dict
    n_draws: int
    rates: dict[str, float]
    intervals: dict[str, tuple[float, float]]

    def to_dict(self) -> dict:
        """The rates as a JSON-ready dict."""
        return asdict(self)


def decision_rates(
    k: int, model: DecisionModel = DecisionModel(), *, n_draws: int = 500, seed: int = 0
) -> DecisionRates:
    """`decision_draw` `n_draws` times (seeded): power (`new`, `new_no_specificity`, `old`: the planted candidate
    causal; `new_route`: causal with the right route; `specific`: its specificity check passed) and false positives
    (`new_false`, `new_no_specificity_false`, `old_false`: a candidate without an effect causal; with `effect` 0,
    any candidate)."""
    if k < MIN_CONTROLS or n_draws < 1:
        raise InterpError(f"decision_rates: need k >= {MIN_CONTROLS} controls and n_draws >= 1")
    rng = np.random.default_rng(seed)
    draws = [decision_draw(rng, k, model) for _ in range(n_draws)]
    counts = {key: sum(d[key] for d in draws) for key in draws[0]}
    return DecisionRates(
        k=k,
        model=asdict(model),
        n_draws=n_draws,
        rates={key: c / n_draws for key, c in counts.items()},
        intervals={key: clopper_pearson(c, n_draws) for key, c in counts.items()},
    )


def null_judge(model: DecisionModel) -> DecisionModel:
    """The same cell on a null judge: no gap over its controls and no effect (the whole decision's FPR)."""
    return replace(model, gap=0.0, effect=0.0)
