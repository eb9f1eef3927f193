"""`interp explain`'s result, as written to `RUN/explain/<judge>-<key>/explain.json`: `Explanation` with one
`Candidate` per tested set (where it is, how it was chosen, the share of the self-preference gap it removes on the
test split, the causal test's call and, for head sets, the route)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ConfigDict, Field, with_config

from interp.results.base import ResultModel

MATCHED_NULL = "matched"  # each control measured at its own set, chosen by the same method


@with_config(ConfigDict(extra="forbid"))
@dataclass(frozen=True)
class Candidate:
    """One tested candidate: where, chosen how, and the causal test's reading of it on the test split."""

    site: str  # attention | head_output | mlp_output | residual
    selected_by: str  # the localisation method, or "random"
    heads: list[list[int]] | None  # [[layer, head], ...] for head sites
    layers: list[int] | None
    share_removed: float | None
    ci: list[float | None] | None
    p_value: float | None
    p_holm: float | None = None
    causal: bool | None = None  # after Holm; None: no test, or no gap to carry (a reason says why)
    reason: str | None = None
    route: str | None = None  # pattern | content | neither, for head sets; None otherwise
    route_detail: dict | None = None
    spec: dict | None = None
    null: str = MATCHED_NULL
    gap_before: float | None = None  # the judge's gap over its controls before the intervention, points
    gap_before_ci: list[float | None] | None = None
    control_sets: dict | None = None  # control -> {"heads": [[l, h], ...]} or {"layers": [...]}
    route_parts: dict | None = None  # head sets: total, pattern, content -> share_removed, ci
    routes_by_counterfactual: dict | None = None  # counterfactual -> route, reason
    p_rank_controls: float | None = None  # beside p_value: the judge's change ranked among its controls' (exact)
    # schema 2: p_value is one-sided in the removal direction ("less"); p_holm the p the call used: the
    # multiplicity plan's adjusted p (a primary), or the raw p (a random set, a negative control outside it)
    p_two_sided: float | None = None
    alternative: str | None = None  # "less" (schema 2); None: a schema-1 file, two-sided
    role: str | None = None  # primary | gate-kept | negative control; None: a schema-1 file (Holm over all)
    tested_with: str | None = None  # the spec name of the identical test it shares (two methods, one set)
    # the specificity check its causal test ran (the own answer's log-odds beyond a rescaling of the clean margin,
    # `interp.metrics.specificity`); required for `causal`; None in a file from before the check
    specificity: dict | None = None

    @property
    def label(self) -> str:
        """Where the candidate is and how it was chosen, in one line: `attention [L1H0] by atp`."""
        return f"{self.site} [{self.where}] by {self.selected_by}"

    @property
    def where(self) -> str:
        """Its heads (`L1H0, L2H3`) or layers (`L4`)."""
        if self.heads:
            return ", ".join(f"L{layer}H{head}" for layer, head in self.heads)
        return ", ".join(f"L{layer}" for layer in self.layers or [])


class ExplainSettings(ResultModel):
    """The settings an explanation ran with (its key hashes them). A file written before the matched null and the
    gap gate has no `null` (the controls were measured at the judge's set) and was gated; before the route
    counterfactual could be chosen, routes replaced the own answer with the reference."""

    top_k: int = 3
    mlp_k: int = 2
    selection_share: float = 0.4
    split_seed: int = 0
    methods: list[str] = Field(default_factory=list)
    routes: bool = True
    counterfactual: str = "reference"
    alt_counterfactual: str | None = None
    random_sets: int = 1
    test_alpha: float = 0.05
    control_judges: list[str] = Field(default_factory=list)
    null: str | None = None
    gap_gate: bool = True
    positions: str = "all"  # where the candidates edited: "all" (queries outside the span, every position) or "final"


class Explanation(ResultModel):
    """`explain.json`: the run and judge, the settings that ran, the split, each method's top entries on the
    selection split, the tested candidates, the multiplicity plan and the answer in words. Schema 2: each
    candidate's p is one-sided in the removal direction and adjusted by the plan (one primary per method, routes
    gate-kept, random sets outside); a schema-1 file was two-sided, Holm over every candidate (its migration says
    so in `multiplicity`)."""

    schema_version: int = 2
    run: str
    judge: str
    settings: ExplainSettings = Field(default_factory=ExplainSettings)
    controls: list[str] = Field(default_factory=list)
    selection_items: list[str] = Field(default_factory=list)
    test_items: list[str] = Field(default_factory=list)
    localisation: dict = Field(default_factory=dict)  # method -> its top entries on the selection split
    candidates: list[Candidate] = Field(default_factory=list)
    answer: str = ""
    key: str = ""
    gap_gate: bool = True  # False: --no-gap-gate, every candidate called on its Holm p alone (a diagnostic)
    null: str = MATCHED_NULL
    multiplicity: dict | None = None  # the plan (`interp.metrics.power_budget.Plan`); schema 1: Holm over all
