"""The route a set of heads uses to carry a judge's self-preference: where it looks, or what it reads.

The counterfactual (`COUNTERFACTUAL`, registered in experiments/causal/plan.md): the judge's own answer replaced,
in its slot, by the other answer of the pair cut, or cycled from its start, to the own answer's token length
(`counterfactual = "other"`, `interp.hooks.node_data`): every position stays where it was, and no answer of the
judge's is in the prompt. `"reference"` (the item's reference answer in the same place) is the alternative; a
reference answer was written by neither author, and nothing says it reads as non-own to the judge.
For a head set H, each of these is run through the causal test on the test items (the judge against its
control judges, `interp.causal.causal.intervene_run`), and read as the share of the self-preference gap
it removes, with its multi-bootstrap interval:

- `total`:   H's output patched from the counterfactual (`head_output`, patch): everything H carries;
- `mean`:    H's output mean-ablated (`head_output`, mean over the reference items): the check on `total`
             that does not depend on the counterfactual;
- `pattern`: only H's attention pattern patched (`head_pattern`), its values kept: *where* it looks;
- `content`: only the values H reads patched (`head_values`), its pattern kept: *what* it reads.

A head's output is its pattern times its values, so patching both is `total` exactly (tested); patching one
is not half of it: pattern and content interact (a pattern that moves onto tokens whose values also changed),
so `pattern + content` need not equal `total`, and the verdict does not assume that it does.

The verdict (`route_verdict`, stated before any result was read, experiments/causal/plan.md): the route whose
share is at least half of `total`'s, and whose interval lies wholly above the other route's interval, is the
route; otherwise "neither". Without a share (the judge's gap over its controls not significant, too few
controls), the verdict is "neither", with that reason. Whether there is a share is decided by the clean verdicts
alone (the gap before any intervention, on the same test items and controls), so it is the same for every part:
the parts stop at the first without a share, and those not run are named (their p-values are not computed).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, Sequence

from interp.errors import InterpError
from interp.formatting import pct, share_interval
from interp.causal.causal import intervene_run
from interp.causal.design import TestDesign
from interp.results.causal import JudgeTest
from interp.hooks.nodes import NodeIntervention, node_from_dict

Route = Literal["pattern", "content", "neither"]
COUNTERFACTUAL = "other"  # the route parts' default counterfactual (plan 3's amendment)
ROUTE_COUNTERFACTUALS = ("other", "reference")  # each puts a non-own answer in the own answer's place
ROUTE_PARTS = ("total", "pattern", "content", "mean")  # the verdict's parts first, its check last
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


@dataclass(frozen=True)
class RouteAnalysis:
    judge: str
    heads: dict[int, list[int]]
    parts: dict[str, PartShare]
    route: Route
    reason: str
    counterfactual: str = COUNTERFACTUAL
    rule: str = field(
        default="the route whose share of the gap removed is at least half of the total's, with an interval wholly "
        "above the other route's; else neither"
    )

    def to_dict(self) -> dict:
        data = asdict(self)
        data["heads"] = [[layer, head] for layer, heads in sorted(self.heads.items()) for head in heads]
        return data


def check_counterfactual(counterfactual: str) -> None:
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
    )


def route_verdict(parts: dict[str, PartShare]) -> tuple[Route, str]:
    """The route and why (module docstring: the rule)."""
    total, pattern, content = parts.get("total"), parts.get("pattern"), parts.get("content")
    missing = [p for p in (total, pattern, content) if p is None or p.share is None or p.ci is None]
    if missing:
        first = missing[0]
        return "neither", f"no share for {first.part if first else 'a part'}: {first.reason if first else 'not run'}"
    for name, this, other in (("pattern", pattern, content), ("content", content, pattern)):
        if total.share > 0 and this.share >= total.share / 2 and this.ci[0] > other.ci[1]:
            return (
                name,
                f"{name} removes {share_interval(this.share, this.ci)} of the gap (total "
                f"{pct(total.share)}); the other route {share_interval(other.share, other.ci)}",
            )
    return "neither", (
        f"pattern {share_interval(pattern.share, pattern.ci)}, content {share_interval(content.share, content.ci)}, "
        f"total {pct(total.share)}: no route carries half of the total with an interval clear of the other's"
    )


def route_analysis(
    run_dir: Path,
    judge: str,
    heads: dict[int, Sequence[int]],
    *,
    design: TestDesign | None = None,
    items: Sequence[str] | None = None,
    parts: Sequence[str] = ROUTE_PARTS,
    counterfactual: str = COUNTERFACTUAL,
    progress: bool = True,
    **intervene_kwargs,
) -> RouteAnalysis:
    """Each part's causal test for head set `heads` of `judge` (keyed and resumable: each is an
    `intervene_run`), and the route verdict. `design`: the test's design (its selection share gives the
    reference items of the mean ablation and the test items; controls as for `interp intervene`)."""
    if not heads or not any(heads.values()):
        raise InterpError("route analysis needs a non-empty head set (layer -> heads)")
    check_counterfactual(counterfactual)
    unknown = [p for p in parts if p not in ROUTE_PARTS]
    if unknown:
        raise InterpError(f"unknown route part(s) {', '.join(unknown)}; use {', '.join(ROUTE_PARTS)}")
    design = design or TestDesign()
    shares = {}
    for part, spec in route_specs(heads, parts, counterfactual).items():
        result = intervene_run(
            run_dir, spec, design=design, judges=[judge], items=items, progress=progress, **intervene_kwargs
        )
        shares[part] = part_share(part, next(iter(result.judges.values())))
        if shares[part].share is None:  # no share here means none in any part (module docstring)
            break
    route, reason = route_verdict(shares)
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
    )
