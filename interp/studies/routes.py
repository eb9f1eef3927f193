"""The route a set of heads uses to carry a judge's self-preference: where it looks, or what it reads.

The counterfactual (`COUNTERFACTUAL`, registered in experiments/records/plan.md): the judge's own answer replaced,
in its slot, by the other answer of the pair cut, or cycled from its start, to the own answer's token length
(`counterfactual = "other"`, `interp.hooks.node_data`): every position stays where it was, and no answer of the
judge's is in the prompt. `"reference"` (the item's reference answer in the same place) is the alternative; a
reference answer was written by neither author, and nothing says it reads as non-own to the judge.
For a head set H, each of these is run through the causal test on the test items (the judge against its
control judges, `interp.causal.intervene.intervene_run`), and read as the share of the self-preference gap
it removes, with its multi-bootstrap interval:

- `total`:   H's output patched from the counterfactual (`head_output`, patch): everything H carries;
- `mean`:    H's output mean-ablated (`head_output`, mean over the reference items): the check on `total`
             that does not depend on the counterfactual;
- `pattern`: only H's attention pattern patched (`head_pattern`), its values kept: *where* it looks;
- `content`: only the values H reads patched (`head_values`), its pattern kept: *what* it reads.

A head's output is its pattern times its values, so patching both is `total` exactly (tested); patching one
is not half of it: pattern and content interact (a pattern that moves onto tokens whose values also changed),
so `pattern + content` need not equal `total`, and the verdict does not assume that it does.

The verdict (`route_verdict`, `interp.metrics.route_test.route_call`; the rule registered first in
experiments/records/plan.md named a route from the parts' marginal intervals, the second from a paired bootstrap
that held the tested judge fixed): "pattern" only where the `total` part is causal (its one-sided removal p at
most the level, its share's interval above 0), the pattern-minus-content contrast of the tested judge lies outside
its controls' contrasts (Crawford-Howell with the judge's own item variance added, `route_between_judges`: each
control at its own set; one-sided in the named route's direction, either direction possible, so the route's p is
twice the smaller one-sided p) and the pattern part carries at least half of the total's share; "content"
likewise; otherwise "neither", with the reason. Tested alone (`route_analysis`), the total and the contrast are a
fixed sequence at the level; inside `interp explain` they are gate-kept behind their candidate in the
multiplicity plan (`interp.metrics.power_budget`), and the verdict is read at their adjusted p's. The paired
bootstrap interval of the share difference (`difference_interval`) is kept beside it, descriptive. Without a share
(the judge's gap over its controls not significant, too few controls), the verdict is "neither", with that reason.

Under the matched null (`interp.causal.matched`) each control judge is patched at its own head set (`control_heads`:
its set chosen by the same method), not at the tested judge's. Whether there is a share is decided by the clean verdicts
alone (the gap before any intervention, on the same test items and controls), so it is the same for every part:
the parts stop at the first without a share, and those not run are named (their p-values are not computed).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, Mapping, Sequence

import numpy as np

from interp.causal.design import TestDesign
from interp.causal.intervene import intervene_run, variant_of
from interp.core.models import own_model
from interp.engine.executor import Execution
from interp.engine.judges import evaluate, judge_pool
from interp.errors import InterpError
from interp.hooks.nodes import NodeIntervention, node_from_dict
from interp.metrics.causal_test import ALPHA
from interp.metrics.families import multi_bootstrap
from interp.metrics.power_budget import removal_p
from interp.metrics.route_test import RouteTest, route_between_judges, route_call
from interp.results.causal import JudgeTest
from interp.run.store import read_run

Route = Literal["pattern", "content", "neither"]
COUNTERFACTUAL = "other"  # the route parts' default counterfactual (plan 3's amendment)
ROUTE_COUNTERFACTUALS = ("other", "reference")  # each puts a non-own answer in the own answer's place
ALT_COUNTERFACTUAL = "reference"  # reported beside the default: a third text, so the other answer is not duplicated
ROUTE_PARTS = ("total", "pattern", "content", "mean")  # the verdict's parts first, its check last
ALT_ROUTE_PARTS = ("total", "pattern", "content")  # the parts run under the alternative counterfactual

_SITES = {
    "total": ("head_output", "patch"),
    "mean": ("head_output", "mean"),
    "pattern": ("head_pattern", "patch"),
    "content": ("head_values", "patch"),
}


@dataclass(frozen=True)
class PartShare:
    """One part's causal test: the share of the gap removed [low, high] (None with a reason), p and the decision."""

    part: str
    share: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    causal: bool | None
    reason: str | None = None
    result_dir: str | None = None
    p_removal: float | None = None  # one-sided Crawford-Howell: the judge's P(own) falls more than its controls'


@dataclass(frozen=True)
class RouteAnalysis:
    """The route of a head set: each part's share of the gap removed, the verdict and why, and what was patched."""

    judge: str
    heads: dict[int, list[int]]
    parts: dict[str, PartShare]
    route: Route
    reason: str
    counterfactual: str = COUNTERFACTUAL
    difference: dict | None = None  # pattern share minus content share: estimate, ci (paired bootstrap, descriptive)
    control_heads: dict | None = None  # control -> [[layer, head], ...] (matched null); None: the judge's heads
    rule: str = field(
        default="pattern (content) only where the total part is causal (one-sided removal p at the level, its "
        "share's interval above 0), the judge's pattern-minus-content contrast lies above (below) its controls' "
        "(Crawford-Howell with the judge's own item variance, route p twice the one-sided p, at the level) and the "
        "named route's share is at least half of the total's; else neither"
    )
    between: dict | None = (
        None  # the between-judge route test (`RouteTest`), its adjusted p and the half-of-total check
    )

    def to_dict(self) -> dict:
        """The analysis as a JSON-ready dict, its heads as [layer, head] pairs."""
        data = asdict(self)
        data["heads"] = [[layer, head] for layer, heads in sorted(self.heads.items()) for head in heads]
        return data


def check_counterfactual(counterfactual: str) -> None:
    """Refuse a counterfactual that is not one of `ROUTE_COUNTERFACTUALS`, in one line."""
    if counterfactual not in ROUTE_COUNTERFACTUALS:
        raise InterpError(
            f"route counterfactual {counterfactual!r}: use one of {', '.join(ROUTE_COUNTERFACTUALS)} (a non-own answer "
            "in the own answer's place)"
        )


def heads_key(heads: dict[int, Sequence[int]]) -> dict[str, list[int]]:
    """A head table as a node spec's `heads` value (TOML and JSON need string keys)."""
    return {str(layer): sorted(int(h) for h in hs) for layer, hs in sorted(heads.items())}


def route_specs(
    heads: dict[int, Sequence[int]], parts: Sequence[str] = ROUTE_PARTS, counterfactual: str = COUNTERFACTUAL
) -> dict[str, NodeIntervention]:
    """The node spec of each part for head set `heads` (layer -> heads); the patch parts read `counterfactual`."""
    table = heads_key(heads)
    where = "-".join(f"L{layer}H{'.'.join(map(str, hs))}" for layer, hs in table.items())
    specs = {}
    for part in parts:
        site, op = _SITES[part]
        keys = {"site": site, "op": op, "heads": table, "name": f"route-{part}-{where}"}
        if op == "patch":
            keys["counterfactual"] = counterfactual
            keys["name"] += f"-{counterfactual}"
        specs[part] = node_from_dict(keys)
    return specs


def part_share(part: str, record: JudgeTest, result_dir: str | None = None) -> PartShare:
    """A part's share from the causal test's record of one judge (`CausalResult.judges[judge]`)."""
    share = record.share_removed
    return PartShare(
        part=part,
        share=share.estimate if share else None,
        ci=(share.low, share.high) if share else None,
        p_value=record.p_value,
        causal=record.causal,
        reason=None if share else record.share_removed_reason,
        result_dir=result_dir,
        p_removal=removal_p(record.test.t, record.test.df, record.p_value) if record.test is not None else None,
    )


def route_verdict(
    parts: dict[str, PartShare],
    between: RouteTest | None = None,
    *,
    p_total: float | None = None,
    p_route: float | None = None,
    test_alpha: float = ALPHA,
) -> tuple[Route, str, bool | None]:
    """The route, why, and the half-of-total check (module docstring: the rule; `route_call`). `between`: the
    between-judge contrast test (None: not computed). `p_total` / `p_route`: the total part's and the contrast's
    p as the multiplicity plan adjusted them (default: the total's one-sided removal p and the contrast's own p,
    a fixed sequence for one head set tested alone)."""
    total, pattern, content = parts.get("total"), parts.get("pattern"), parts.get("content")
    missing = [p for p in (total, pattern, content) if p is None or p.share is None or p.ci is None]
    if missing:
        first = missing[0]
        why = f"no share for {first.part if first else 'a part'}: {first.reason if first else 'not run'}"
        return "neither", why, None
    p_total = total.p_removal if p_total is None else p_total
    p_route = (between.p_route if between is not None else None) if p_route is None else p_route
    route, reason, half = route_call(total.share, total.ci[0], p_total, between, p_route, test_alpha)
    return route, reason, half


def paired_difference(
    run_dir: Path,
    judge: str,
    specs: Mapping[str, NodeIntervention],
    control_specs: Mapping[str, Mapping[str, NodeIntervention]],
    *,
    test_items: Sequence[str],
    selection: Sequence[str],
    models=None,
    where=None,
) -> tuple[tuple[float, tuple[float, float]], RouteTest] | None:
    """Pattern share minus content share, from the judgments the two parts' causal tests left in the keyed store
    (nothing is judged again): its multi-bootstrap interval in which both shares are resampled together (the same
    controls and items in every draw; descriptive), and the between-judge test of the tested judge's contrast
    against its controls' (`route_between_judges`, the judge's own item variance added), which decides.
    share_p - share_c = (G_content - G_pattern) / G, G the gap before. `control_specs[part][control]`: each
    control's spec of that part. None without controls."""
    run = read_run(run_dir)
    controls = list(control_specs["pattern"])
    if not controls:
        return None
    items = [item for item in run.items if item.id in set(test_items)]
    pool = judge_pool(run, where=where, models=models)
    own = own_model(judge)
    gold = run.gold_own(own)[[run.items.index(item) for item in items]]

    def stages(name: str, variants: dict) -> np.ndarray:  # [stage, item]: before, pattern, content (DBG)
        judged = evaluate(run, name, variants, pool, items=items, progress=False, own=own)
        rows = [
            judged["per_item"]["before"],
            judged["per_item"]["after"]["pattern"],
            judged["per_item"]["after"]["content"],
        ]
        return np.asarray(rows, dtype=float) - gold

    def variants_of(chosen: Mapping[str, NodeIntervention]) -> dict:
        return {part: variant_of(part, chosen[part], selection) for part in ("pattern", "content")}

    judge_values = stages(judge, variants_of(specs))[None]
    control_values = np.stack(
        [stages(c, variants_of({p: control_specs[p][c] for p in control_specs})) for c in controls]
    )
    interval = difference_interval(judge_values, control_values, n_boot=run.config.n_boot, seed=run.config.seed)
    return interval, route_between_judges(judge_values[0], control_values)


def difference_interval(
    judge: np.ndarray, controls: np.ndarray, *, n_boot: int, seed: int
) -> tuple[float, tuple[float, float]]:
    """Pattern share minus content share from per-item DBG values `judge` [1, stage, item] and `controls`
    [control, stage, item] (stages: before, pattern, content), with a multi-bootstrap interval that resamples the
    controls (all their stages together) and the items once per draw, for both shares at once."""

    def difference(families: list[np.ndarray]) -> np.ndarray:
        j, c = families  # [draw, judge, stage, item]
        gaps = j[:, 0].mean(axis=-1) - c.mean(axis=(1, 3))  # [draw, stage]
        with np.errstate(divide="ignore", invalid="ignore"):
            return (gaps[:, 2] - gaps[:, 1]) / gaps[:, 0]

    interval = multi_bootstrap([judge, controls], difference, n_boot=n_boot, seed=seed)
    return interval.estimate, (interval.low, interval.high)


def between_record(
    between: RouteTest | None,
    parts: Mapping[str, PartShare],
    half: bool | None,
    reason: str,
    p_route=None,
    p_total=None,
) -> dict | None:
    """The between-judge route test as written in the JSON: the statistic, df, the one-sided p's and the route's p,
    the p's the verdict read (adjusted by a multiplicity plan, or the raw ones), the half-of-total check and the
    verdict's reason."""
    if between is None:
        return None
    total = parts.get("total")
    return between.to_dict() | {
        "p_route_adjusted": between.p_route if p_route is None else p_route,
        "p_total": (total.p_removal if total is not None else None) if p_total is None else p_total,
        "half_of_total": half,
        "verdict_reason": reason,
    }


@dataclass(frozen=True)
class RoutePatch:
    """What a route analysis patches: the `parts` (of `ROUTE_PARTS`), from which `counterfactual` answer, and
    each control judge's own head set (`control_heads`; None: the controls are patched at the tested heads)."""

    parts: Sequence[str] = ROUTE_PARTS
    counterfactual: str = COUNTERFACTUAL
    control_heads: Mapping[str, dict[int, Sequence[int]]] | None = None
    positions: str = "all"  # where every part edits (`interp.hooks.final_row.at_positions`): "all" or "final"


def positioned_route_specs(
    heads: dict[int, Sequence[int]], parts: Sequence[str], counterfactual: str, positions: str = "all"
) -> dict[str, NodeIntervention]:
    """`route_specs` with every part at `positions` ("all": as `route_specs` makes them; "final": the verdict
    position, `interp.hooks.final_row.at_positions`)."""
    from interp.hooks.final_row import at_positions

    specs = route_specs(heads, parts, counterfactual)
    if positions == "all":
        return specs
    return {part: at_positions(spec, positions) for part, spec in specs.items()}


def route_analysis(
    run_dir: Path,
    judge: str,
    heads: dict[int, Sequence[int]],
    *,
    design: TestDesign | None = None,
    items: Sequence[str] | None = None,
    patch: RoutePatch = RoutePatch(),
    execution: Execution = Execution(),
) -> RouteAnalysis:
    """Each part's causal test for head set `heads` of `judge` (keyed and resumable: each is an
    `intervene_run`), and the route verdict. `design`: the test's design (its selection share gives the
    reference items of the mean ablation and the test items; controls as for `interp intervene`).
    `patch.control_heads`: each control judge's own head set (the matched null: chosen by the same method on the
    control); None: the controls are patched at `heads`. `patch`: the parts, the counterfactual and the control
    judges' head sets (`RoutePatch`). `execution`: where the judgments run (`interp.engine.executor.Execution`)."""
    parts, counterfactual, control_heads = patch.parts, patch.counterfactual, patch.control_heads
    if not heads or not any(heads.values()):
        raise InterpError("route analysis needs a non-empty head set (layer -> heads)")
    check_counterfactual(counterfactual)
    unknown = [p for p in parts if p not in ROUTE_PARTS]
    if unknown:
        raise InterpError(f"unknown route part(s) {', '.join(unknown)}; use {', '.join(ROUTE_PARTS)}")
    design = design or TestDesign()
    specs = positioned_route_specs(heads, parts, counterfactual, patch.positions)
    per_control = {
        c: positioned_route_specs(h, parts, counterfactual, patch.positions) for c, h in (control_heads or {}).items()
    }
    control_specs = {part: {c: per_control[c][part] for c in per_control} for part in specs}
    shares, last = {}, None
    for part, spec in specs.items():
        last = intervene_run(
            run_dir,
            spec,
            design=design,
            judges=[judge],
            items=items,
            control_specs=control_specs[part] if control_heads is not None else None,
            execution=execution,
        )
        shares[part] = part_share(part, next(iter(last.judges.values())))
        if shares[part].share is None:  # no share here means none in any part (module docstring)
            break
    contrast = None
    if all(shares.get(p) is not None and shares[p].share is not None for p in ("total", "pattern", "content")):
        record = next(iter(last.judges.values()))
        contrast = paired_difference(
            run_dir,
            judge,
            specs,
            {
                part: control_specs[part]
                if control_heads is not None
                else dict.fromkeys(record.control_names, specs[part])
                for part in ("pattern", "content")
            },
            test_items=last.test_items,
            selection=last.selection_items,
            models=execution.models,
            where=execution.where,
        )
    difference, between = contrast if contrast is not None else (None, None)
    route, reason, half = route_verdict(shares, between, test_alpha=design.test_alpha)
    not_run = [part for part in parts if part not in shares]
    if not_run:
        reason += f"; not run, as none could have a share: {', '.join(not_run)}"
    return RouteAnalysis(
        judge=judge,
        heads={int(k): sorted(v) for k, v in heads.items()},
        parts=shares,
        route=route,
        reason=reason,
        counterfactual=counterfactual,
        difference=None if difference is None else {"estimate": difference[0], "ci": list(difference[1])},
        between=between_record(between, shares, half, reason),
        control_heads=None
        if control_heads is None
        else {
            c: [[int(l), int(h)] for l, hs in sorted(t.items()) for h in sorted(hs)] for c, t in control_heads.items()
        },
    )
