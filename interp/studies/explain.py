"""`interp explain`: where a judge's self-preference lives, every rung of the ladder under one causal test.

On the run's selection split (a seeded share of its items), localise with every single-judge method:

- `attention`: own-minus-other attention of the verdict position (Figure 7's head map);
- `atp`: attribution patching of the own-answer mask at each head (where it looks);
- `atp-output`: attribution patching of mean-ablating each head's output (what it writes);
- `atp-mlp`: the same for each layer's MLP output;
- `direction`: a self-recognition direction per layer (own-span mean minus other-span mean on half the
  selection items, scored by its paired accuracy on the other half).

Then, on the disjoint test split, each method's top candidates are tested with the judge-level causal test
(the judge against its control judges, `interp.causal.intervene.intervene_run`; every judgment keyed, so a
killed command resumes): the own-answer mask at the top-K heads of `attention` and of `atp` (site
"attention"), the top-K heads' outputs mean-ablated (`head_output`), the top-M MLP outputs mean-ablated
(`mlp_output`), the best layer's direction projected out of the residual stream (`residual`); and, as their
controls, random sets of the same sizes (seeded, `selected_by = "random"`).

The null is matched (`interp.causal.matched`): each control judge is localised by the same methods on the same
selection items (the tested judge's answer read as its own) and measured at its own chosen set of the same size,
site and op; for random sets each judge gets its own draw. Every candidate records `null = "matched"` and each
control's set. Each candidate's p is Crawford-Howell's one-sided p in the removal direction, and the p-values are
adjusted by the multiplicity plan (`interp.metrics.power_budget`, registered in experiments/records/plan.md): each
method's candidate is its primary, Holm runs across the primaries, each head set's route (total part, then the
between-judge pattern-minus-content test) is gate-kept behind it, a set two methods chose is tested once (reported
under both) and random sets are negative controls outside the correction (their raw p). A candidate is causal
when the judge prefers its own answers more than its controls (the one-sided gap gate: it has a share), the
share's interval lies above 0 and its adjusted p is at most the test's level (without a share, `causal` is None:
nothing to locate).
`gap_gate=False` (`--no-gap-gate`) calls every candidate on its Holm p alone, a diagnostic of the null. Each
head set also gets its route (`interp.studies.routes`: pattern, content or neither), under the default
counterfactual and beside it the alternative; where the candidate has no share of the gap, no route part is run:
they read the same clean verdicts, so none could have a share, and the route is "neither" with that reason.

The result (`Explanation`) is written to RUN/explain/<judge>-<key>/explain.json, keyed by the run, the judge
and every setting; `report.html` draws it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from interp.causal.design import TestDesign, resolve_controls
from interp.causal.intervene import causal_tasks, intervene_run
from interp.causal.matched import NULL, localisation_folder, localise, localise_controls
from interp.config import PlacementKeys
from interp.core.models import own_model
from interp.core.timings import Timings
from interp.engine.executor import Execution, check_executor, execute, task_groups
from interp.engine.final_batch import prejudge, variant_problem
from interp.engine.variants import digest, run_identity, self_judges
from interp.errors import InterpError
from interp.formatting import p_value, share_interval
from interp.hooks.spec import pairs_table
from interp.locate.heads import run_judge
from interp.metrics.causal_test import ALPHA
from interp.metrics.power_budget import Plan, multiplicity_plan, removal_p
from interp.metrics.route_test import RouteTest, route_call
from interp.metrics.share import causal_call
from interp.results.codec import write_explanation
from interp.results.explain import Candidate, Explanation
from interp.run.store import Run, read_run
from interp.splits import split_ids
from interp.storage import atomic_write_bytes, path_label
from interp.studies.candidates import HEAD_METHODS, Planned, chosen_candidates, random_candidates
from interp.studies.positions import check_positions, planned_at
from interp.studies.routes import (
    ALT_COUNTERFACTUAL,
    ALT_ROUTE_PARTS,
    COUNTERFACTUAL,
    ROUTE_PARTS,
    RouteAnalysis,
    RoutePatch,
    check_counterfactual,
    positioned_route_specs,
    route_analysis,
)

EXPLAIN_METHODS = ("attention", "atp", "atp-output", "atp-mlp", "direction")


def _answer(candidates: Sequence[Candidate], judge: str, gap_gate: bool = True) -> str:
    """The paragraph: the user's question (attention to the own answer) first, then where the largest share is."""
    if not gap_gate:
        called = [c.label for c in candidates if c.causal]
        return (
            f"Diagnostic without the gap gate (matched null, adjusted p alone): {len(called)} of "
            f"{sum(c.p_value is not None for c in candidates)} tested candidates of {judge} called causal"
            + (f": {'; '.join(called)}." if called else ".")
        )

    def share(c: Candidate) -> str:
        if c.share_removed is None:
            return f"no share ({c.reason})"
        causal = "causal" if c.causal else "not causal" if c.causal is not None else "untested"
        shown = share_interval(c.share_removed, c.ci)
        return f"{shown} ({causal}, adjusted p {p_value(c.p_holm)})" if c.p_holm is not None else shown

    chosen = [c for c in candidates if c.selected_by != "random"]
    attention = [c for c in chosen if c.site == "attention"]
    first = (
        "Attention to its own answer carries "
        f"{share(max(attention, key=lambda c: c.share_removed if c.share_removed is not None else -np.inf))} "
        f"of {judge}'s self-preference "
        f"(the own answer masked at the best attention candidate's heads)."
        if attention
        else f"No attention candidate was tested for {judge}."
    )
    ranked = [c for c in chosen if c.share_removed is not None]
    if not ranked:
        return (
            first + " No candidate has a share of the gap: the judge's self-preference over its controls is not "
            "significant, so there is nothing to locate."
        )
    best = max(ranked, key=lambda c: c.share_removed)
    route = f", through its {best.route} route" if best.route in ("pattern", "content") else ""
    return first + f" The largest share is carried by {best.label}: {share(best)}{route}."


@dataclass(frozen=True)
class Request:
    """What `explain_run` was asked (every setting), checked."""

    top_k: int = 3
    mlp_k: int = 2
    selection_share: float = 0.4
    split_seed: int = 0
    control_judges: tuple[str, ...] | None = None
    methods: tuple[str, ...] = EXPLAIN_METHODS
    routes: bool = True
    counterfactual: str = COUNTERFACTUAL
    alt_counterfactual: str | None = ALT_COUNTERFACTUAL
    random_sets: int = 1
    test_alpha: float = ALPHA
    gap_gate: bool = True
    positions: str = "all"  # where the candidates edit: "all" (today's) or "final" (`interp.studies.positions`)
    path: str = "auto"  # how verdict-position variants are judged (never part of the key: results are equal)

    def check(self) -> None:
        """Refuse settings explain cannot run (unknown methods, sizes out of range), in one line each."""
        unknown = [m for m in self.methods if m not in EXPLAIN_METHODS]
        if unknown or not self.methods:
            raise InterpError(
                f"unknown explain method(s) {', '.join(unknown) or '(none)'}; use some of {', '.join(EXPLAIN_METHODS)}"
            )
        if not 1 <= self.top_k <= 64 or not 1 <= self.mlp_k <= 64:
            raise InterpError(f"--top-k {self.top_k} and --mlp-k {self.mlp_k} must be between 1 and 64")
        if self.random_sets < 0:
            raise InterpError(f"--random-sets {self.random_sets} must be 0 or more")
        check_counterfactual(self.counterfactual)
        if self.alt_counterfactual is not None:
            check_counterfactual(self.alt_counterfactual)
        check_positions(self.positions, self.path, self.routes)

    def settings(self, controls: Sequence[str]) -> dict:
        """The settings as written into explain.json and its key."""
        return {
            "top_k": self.top_k,
            "mlp_k": self.mlp_k,
            "selection_share": self.selection_share,
            "split_seed": self.split_seed,
            "methods": list(self.methods),
            "routes": self.routes,
            **({"counterfactual": self.counterfactual} if self.routes else {}),
            **(
                {"alt_counterfactual": self.alt_counterfactual}
                if self.routes and self.alt_counterfactual not in (None, self.counterfactual)
                else {}
            ),
            "random_sets": self.random_sets,
            "test_alpha": self.test_alpha,
            "control_judges": list(controls),
            "null": NULL,
            "gap_gate": self.gap_gate,
            **({"positions": self.positions} if self.positions != "all" else {}),  # today's keys where unchanged
        }


def check_sizes(model, request: Request, judge: str) -> None:
    """A chosen set must leave something unchosen, or every random set of its size is the candidate itself (the
    random controls would be the candidates), and an MLP set larger than the model cannot be drawn: refused in one
    line before anything is written, as `interp intervene --top-heads` refuses (`_check_top_k`)."""
    heads = model.n_layers * model.n_heads
    if any(m in HEAD_METHODS for m in request.methods) and request.top_k >= heads:
        raise InterpError(
            f"--top-k {request.top_k} is not fewer than {judge}'s {model.n_layers} layers x {model.n_heads} heads = "
            f"{heads}: nothing would be left unchosen, so every random set would be the candidate; use at most "
            f"{heads - 1}"
        )
    if "atp-mlp" in request.methods and request.mlp_k >= model.n_layers:
        raise InterpError(
            f"--mlp-k {request.mlp_k} is not fewer than {judge}'s {model.n_layers} layers: nothing would be left "
            f"unchosen, so every random MLP set would be the candidate; use at most {model.n_layers - 1}, or leave "
            "out -m atp-mlp"
        )


def explain_run(
    run_dir: Path,
    judge: str,
    request: Request = Request(),
    *,
    where: PlacementKeys | None = None,
    progress: bool = True,
    executor: str | None = None,
    max_memory: int | None = None,
    timings: Timings | None = None,
) -> Explanation:
    """Localise on the selection split, test on the test split (module docstring); write and return the result.

    `executor` / `max_memory` (bytes): as for `intervene_run`, for every causal test (candidates, random sets,
    route parts); on Ray, all their tasks are run as one batch first. The localisation runs in this process.
    `gap_gate=False` (`--no-gap-gate`, a diagnostic): every candidate is called on its Holm-adjusted p alone.
    `alt_counterfactual`: the route parts are also run with it and its route reported beside the default's.
    `request`: every setting of the explanation (`Request`). `timings` (`--timings`): each rung's seconds are
    added to it (loading, localising the judge, localising its controls, the candidates' tests, the routes).
    """
    request.check()
    steps = timings if timings is not None else Timings()
    execution = Execution(where=where, max_memory=max_memory, executor=executor, progress=progress, path=request.path)
    with steps.step("load"):
        run, judge, design, controls, (selection, test), pool = _prepare(run_dir, judge, request, execution)
    settings = request.settings(controls)
    key = digest({"run": run_identity(run), "judge": judge, "settings": settings})
    out_dir = run.dir.root / "explain" / f"{path_label(judge)}-{key}"
    with steps.step("load"):
        check_sizes(pool.model(judge), request, judge)
    with steps.step("localise judge"):
        located = localise_judge(run, judge, request.methods, selection, pool, out_dir, progress)
    with steps.step("localise controls"):
        by_control = localise_controls(run, controls, own_model(judge), list(located), selection, pool, progress)
    with steps.step("plan candidates"):
        planned = chosen_candidates(located, by_control, request)
        planned += random_candidates(judge, located, by_control, request, pool)
        planned = [planned_at(p, request.positions) for p in planned]
    tests = _Tests(run, judge, design, pool, dataclasses.replace(execution, models=pool.models), request, test)
    keys = [test_key(item) for item in planned]
    unique = {key: item for key, item in zip(keys, planned, strict=True)}  # identical tests run once
    with steps.step("candidates"):
        tested = dict(zip(unique, tests.candidates(list(unique.values())), strict=True))
    records = [tested[key] for key in keys]
    with steps.step("routes"):
        routes = [tests.route(unique[key], record, request) for key, record in zip(keys, records, strict=True)]
    candidates = [_candidate(*parts) for parts in zip(planned, records, routes, strict=False)]
    candidates = [
        dataclasses.replace(c, tested_with=getattr(unique[key].spec, "name", None) if unique[key] is not item else None)
        for c, key, item in zip(candidates, keys, planned, strict=True)
    ]
    candidates, plan = with_plan(candidates, keys, request.test_alpha, gap_gate=request.gap_gate)
    result = Explanation(
        run=str(run.dir.root),
        judge=judge,
        settings=settings,
        controls=list(controls),
        selection_items=selection,
        test_items=test,
        localisation=_shown(located, max(request.top_k, request.mlp_k)),
        candidates=candidates,
        answer=_answer(candidates, judge, request.gap_gate),
        key=key,
        gap_gate=request.gap_gate,
        null=NULL,
        multiplicity=plan.to_dict(),
    )
    with steps.step("write"), run.dir.writer():
        write_explanation(out_dir, result)
    return result


def localise_judge(run: Run, judge: str, methods, selection: list[str], pool, out_dir: Path, progress: bool) -> dict:
    """The tested judge's localisation, kept where a control's is (`localisation_folder`: read back by any explain of
    the judge on these items, and by one where it is a control), its files copied into `out_dir` beside
    explain.json (the localisation the explanation read)."""
    folder = localisation_folder(run, judge, own_model(judge), selection, methods)
    located = localise(run, judge, methods, selection, pool, folder, progress)
    with run.dir.writer():
        for name in ("localisation.csv", "directions.npz"):
            if (folder / name).is_file() and not (out_dir / name).is_file():
                atomic_write_bytes(out_dir / name, (folder / name).read_bytes())
    return located


def _shown(located: dict, k: int) -> dict:
    """Each method's top `k` entries on the selection split, as written into explain.json (no vectors)."""
    return {
        m: frame.drop(columns=[c for c in ("vector",) if c in frame]).head(k).to_dict("records")
        for m, frame in located.items()
    }


def _prepare(run_dir: Path, judge: str, request: Request, execution: Execution):
    """The run, the judge's name in it, the test's design, the controls, the (selection, test) split and the
    judges' pool (`execution.pool`), each checked before anything is written."""
    if execution.executor is not None:
        check_executor(execution.executor)
    run = read_run(run_dir)
    judge = run_judge(run, judge)
    self_judges(run, [judge])
    design = TestDesign(
        heads="spec",
        selection_share=request.selection_share,
        split_seed=request.split_seed,
        control_judges=request.control_judges,
        test_alpha=request.test_alpha,
    )
    controls = resolve_controls(run, judge, design)
    split = split_ids(
        [item.id for item in run.items],
        request.selection_share,
        request.split_seed,
        purpose="selection",
        what="--selection-share",
    )
    return run, judge, design, controls, split, execution.pool(run)


class _Tests:
    """The causal tests of one explain: the candidates, then each head set's route. Before the first test runs,
    every test's verdict-position variants (candidates and the route parts they may need) are judged at once
    (`prejudge`): on the local executor item-major over each prompt's cached keys and values, so that one clean
    pass per (judge, prompt) serves every variant; on a cluster every task as one batch."""

    def __init__(
        self, run: Run, judge: str, design: TestDesign, pool, execution: Execution, request: Request, test: list[str]
    ):
        self.run, self.judge, self.design, self.pool, self.execution = run, judge, design, pool, execution
        self.request, self.test = request, test  # the explanation's settings and its test split
        self.routes: dict[str, dict] = {}

    def _tasks(self, tests: list[tuple[object, dict]]) -> list:
        return [
            task
            for spec, controls in tests
            for task in causal_tasks(
                self.run.dir.root, spec, design=self.design, judges=[self.judge], control_specs=controls
            )
        ]

    def on_cluster(self, tests: list[tuple[object, dict]]) -> None:
        """The tests' tasks as one batch, so the cluster runs them side by side."""
        if self.pool.executor == "local" or not tests:
            return
        with self.run.dir.writer():
            execute(self.run, self._tasks(tests), self.pool)

    def prejudge(self, planned: list[Planned]) -> None:
        """Every verdict-position variant of the candidates' tests and of their route parts (`route_tests`),
        judged at once over the cached final position (local executor, `--path` not "full"): each judge's
        variants as rows of one final-token pass per prompt. The tests then read them from the store; a route
        part judged here for a candidate that turns out to have no share costs one row of each pass, not a run."""
        if self.pool.executor != "local" or self.pool.path == "full" or not planned:
            return
        tests = [(p.spec, p.control_specs) for p in planned]
        tests += [test for p in planned for test in self.route_tests(p)]
        tasks = [t for t in self._tasks(tests) if t.variant.interventions and variant_problem(t.variant) is None]
        if tasks:
            with self.run.dir.writer():
                prejudge(self.run, self.pool, task_groups(self.run, tasks))

    def candidates(self, planned: list[Planned]) -> list:
        self.on_cluster([(p.spec, p.control_specs) for p in planned])
        self.prejudge(planned)
        common = dict(design=self.design, judges=[self.judge], execution=self.execution)
        return [
            next(
                iter(intervene_run(self.run.dir.root, p.spec, control_specs=p.control_specs, **common).judges.values())
            )
            for p in planned
        ]

    def counterfactuals(self) -> list[str]:
        """The route's counterfactuals: the default, then the alternative where it differs."""
        request = self.request
        found = [request.counterfactual]
        if request.alt_counterfactual not in (None, request.counterfactual):
            found.append(request.alt_counterfactual)
        return found

    def route_tests(self, item: Planned, counterfactual: str | None = None) -> list[tuple[object, dict]]:
        """The (spec, control specs) of each route part the head set's route runs (under `counterfactual`, or
        every counterfactual): the parts at the explanation's positions, each control patched at its own set."""
        if not self.request.routes or not item.heads or item.selected_by == "random":
            return []
        if counterfactual is None:
            return [test for c in self.counterfactuals() if self._routable(c) for test in self.route_tests(item, c)]
        parts, positions = self.parts(counterfactual), self.request.positions
        specs = positioned_route_specs(pairs_table(item.heads), parts, counterfactual, positions)
        controls = {
            c: positioned_route_specs(pairs_table(s["heads"]), parts, counterfactual, positions)
            for c, s in item.control_sets.items()
        }
        return [(spec, {c: controls[c][part] for c in controls}) for part, spec in specs.items()]

    def parts(self, counterfactual: str) -> tuple[str, ...]:
        """The route parts run under `counterfactual`: every part under the default, `ALT_ROUTE_PARTS` else."""
        return ROUTE_PARTS if counterfactual == self.request.counterfactual else ALT_ROUTE_PARTS

    def _routable(self, counterfactual: str, test_items: Sequence[str] | None = None) -> bool:
        """Whether the route parts can read `counterfactual` on the test items (default: the test split), a
        reference answer on every item."""
        if counterfactual != "reference":
            return True
        ids = set(test_items if test_items is not None else self.test)
        return all(item_.reference for item_ in self.run.items if item_.id in ids)

    def route(self, item: Planned, record, request: Request) -> dict | None:
        """The head set's route under the default counterfactual and the alternative, each with the controls
        patched at their own sets; no part is run where the candidate has no share (none could have one)."""
        if not request.routes or not item.heads or item.selected_by == "random":
            return None
        hkey = json.dumps([item.heads, item.control_sets])
        if hkey in self.routes:
            return self.routes[hkey]
        found = {}
        for counterfactual in self.counterfactuals():
            found[counterfactual] = self._route(item, record, counterfactual, request)
        self.routes[hkey] = found
        return found

    def _route(self, item: Planned, record, counterfactual: str, request: Request) -> dict:
        share = record.share_removed
        heads = pairs_table(item.heads)
        if share is None:  # the parts read the same clean gap: none has a share
            return RouteAnalysis(
                judge=self.judge,
                heads=heads,
                parts={},
                route="neither",
                reason=f"no share of the gap: {record.share_removed_reason}; no route part run, as none could have one",
                counterfactual=counterfactual,
            ).to_dict()
        if not self._routable(counterfactual, record.test_items or []):
            return {"route": None, "reason": "an item of the test split has no reference answer", "parts": {}}
        control_heads = {c: pairs_table(s["heads"]) for c, s in item.control_sets.items()}
        parts = self.parts(counterfactual)
        self.on_cluster(self.route_tests(item, counterfactual))
        return route_analysis(
            self.run.dir.root,
            self.judge,
            heads,
            design=self.design,
            patch=RoutePatch(parts, counterfactual, control_heads, request.positions),
            execution=self.execution,
        ).to_dict()


def _candidate(item: Planned, record, routes: dict | None) -> Candidate:
    """One candidate from its causal test's record and its routes (None: not a chosen head set)."""
    share = record.share_removed
    gap = record.gap_before
    gap_points = 100 * gap.estimate if gap is not None and gap.estimate is not None else None
    reason = None if share else record.share_removed_reason
    if share is not None and gap_points is not None and gap_points <= 0:  # no gap to remove: no share
        share, reason = None, f"the gap before is {gap_points:+.1f} points, at most 0: no gap to remove"
    if share is not None and share.estimate is None:
        share, reason = None, "the share is undefined (the gap before is 0)"
    kind = getattr(share, "kind", None) if share is not None else None  # Fieller's set: bounded, or unbounded
    ci = None if share is None else [share.low, share.high] if kind in (None, "bounded") else [None, None]
    default = next(iter(routes.values())) if routes else None
    return Candidate(
        site=item.site,
        selected_by=item.selected_by,
        heads=item.heads,
        layers=item.layers,
        share_removed=share.estimate if share else None,
        ci=ci,
        p_value=removal_p(record.test.t, record.test.df, record.p_value) if record.test is not None else None,
        p_two_sided=(
            record.test.p_two_sided
            if record.test is not None and record.test.p_two_sided is not None
            else record.p_value
        ),
        alternative="less",
        p_rank_controls=record.test.p_rank_controls if record.test is not None else None,
        reason=reason,
        route=default["route"] if default else None,
        route_detail=default,
        spec=item.spec.to_dict(),
        null=NULL,
        gap_before=gap_points,
        gap_before_ci=[100 * gap.low, 100 * gap.high] if gap is not None and gap.low is not None else None,
        control_sets=item.control_sets,
        route_parts=_route_parts(default) if item.heads else None,
        routes_by_counterfactual={k: {"route": v["route"], "reason": v["reason"]} for k, v in routes.items()}
        if routes
        else None,
        specificity=record.specificity.model_dump(exclude={"schema_version"}) if record.specificity else None,
    )


def _route_parts(detail: dict | None) -> dict:
    """`total`, `pattern` and `content` (and `mean` where run), each with `share_removed` and `ci` (None where
    the part was not run: no share of the gap, or a random set)."""
    parts = (detail or {}).get("parts") or {}
    return {
        name: {
            "share_removed": parts[name]["share"] if name in parts else None,
            "ci": list(parts[name]["ci"]) if name in parts and parts[name]["ci"] is not None else None,
            "p_value": parts[name]["p_value"] if name in parts else None,
            "p_removal": parts[name].get("p_removal") if name in parts else None,
            "causal": parts[name]["causal"] if name in parts else None,
        }
        for name in ("total", "pattern", "content", *(["mean"] if "mean" in parts else []))
    }


def test_key(item: Planned) -> str:
    """What a candidate's test is: its site, its set and each control's set (the matched null), not the method that
    chose it; two methods that chose the same sets make one test."""
    return json.dumps([item.site, item.heads, item.layers, item.control_sets], sort_keys=True)


def _sequences(candidates: list[Candidate], keys: list[str]) -> dict[str, list[tuple[str, float | None, str]]]:
    """Each method's fixed sequence: its first candidate (the primary: its top set), its head set's route total and
    the between-judge route contrast (only those that ran, under the default counterfactual), then any further
    candidate of the method with its route, gate-kept behind them in the order given."""
    out: dict[str, list] = {}
    for c, key in zip(candidates, keys, strict=True):
        if c.selected_by == "random" or c.p_value is None:
            continue
        chain = [(key, c.p_value, c.label)]
        between = (c.route_detail or {}).get("between") or {}
        total = ((c.route_detail or {}).get("parts") or {}).get("total") or {}
        if total.get("p_removal") is not None:
            chain.append((f"{key}|route total", total["p_removal"], f"{c.label}: route total"))
            if between.get("p_route") is not None:
                chain.append((f"{key}|route contrast", between["p_route"], f"{c.label}: pattern minus content"))
        out.setdefault(c.selected_by, []).extend(chain)
    return out


def with_plan(
    candidates: list[Candidate], keys: list[str], alpha: float, *, gap_gate: bool = True
) -> tuple[list[Candidate], Plan]:
    """The multiplicity plan over the candidates (`interp.metrics.power_budget`: Holm across the methods'
    primaries, each head set's route gate-kept behind it, identical tests once, random sets outside), then each
    one's call at its adjusted p (a random set's: its raw p) and each head set's route at the adjusted p's of its
    total and contrast. With the gap gate (the verdict): causal only where the judge prefers its own answers more
    than its controls (a share: the one-sided gate passed), the share's interval lies above 0 (it removes the gap;
    a candidate that widens it is not causal) and the adjusted p is at most `alpha`; without a share `causal` is
    None (no gap to carry, the reason says why). Without the gate (`--no-gap-gate`, a diagnostic): causal iff the
    adjusted p is at most `alpha`, whatever the gap and the share, so that the matched null can be seen to hold
    without the gate's help."""
    randoms = [c.label for c in candidates if c.selected_by == "random"]
    plan = multiplicity_plan(_sequences(candidates, keys), test_alpha=alpha, negative_controls=randoms)
    out = []
    roles = {h.key: h.role for h in plan.hypotheses}
    for c, key in zip(candidates, keys, strict=True):
        role = "negative control" if c.selected_by == "random" else roles.get(key, "primary")
        p = c.p_value if role == "negative control" else plan.adjusted(key)
        c = dataclasses.replace(c, role=role)
        if p is None:
            out.append(c)
            continue
        share = None if c.share_removed is None else {"low": c.ci[0]}
        causal, why = causal_call(
            float(p), share, alpha, gap_gate=gap_gate, no_share_reason=c.reason, specificity=c.specificity
        )
        out.append(_routed(dataclasses.replace(c, p_holm=float(p), causal=causal, reason=c.reason or why), key, plan))
    return out, plan


def _routed(c: Candidate, key: str, plan: Plan) -> Candidate:
    """The head set's route read at its adjusted p's (the plan's), its between-judge record updated."""
    detail = c.route_detail
    if not detail or not (detail.get("between") or {}):
        return c
    between = dict(detail["between"])
    total = detail["parts"]["total"]
    test = RouteTest(**{f.name: between[f.name] for f in dataclasses.fields(RouteTest)})
    p_total, p_route = plan.adjusted(f"{key}|route total"), plan.adjusted(f"{key}|route contrast")
    route, reason, half = route_call(
        total["share"], total["ci"][0] if total["ci"] else None, p_total, test, p_route, plan.test_alpha
    )
    between |= {"p_route_adjusted": p_route, "p_total": p_total, "half_of_total": half, "verdict_reason": reason}
    detail = detail | {"route": route, "reason": reason, "between": between}
    by = dict(c.routes_by_counterfactual or {})
    if detail.get("counterfactual") in by:
        by[detail["counterfactual"]] = {"route": route, "reason": reason}
    return dataclasses.replace(c, route=route, route_detail=detail, routes_by_counterfactual=by or None)
