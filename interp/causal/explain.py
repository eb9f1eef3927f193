"""`interp explain`: where a judge's self-preference lives, every rung of the ladder under one causal test.

On the run's selection split (a seeded share of its items), localise with every single-judge method:

- `attention`: own-minus-other attention of the verdict position (Figure 7's head map);
- `atp`: attribution patching of the own-answer mask at each head (where it looks);
- `atp-output`: attribution patching of mean-ablating each head's output (what it writes);
- `atp-mlp`: the same for each layer's MLP output;
- `direction`: a self-recognition direction per layer (own-span mean minus other-span mean on half the
  selection items, scored by its paired accuracy on the other half).

Then, on the disjoint test split, each method's top candidates are tested with the judge-level causal test
(the judge against its control judges, `interp.causal.causal.intervene_run`; every judgment keyed, so a
killed command resumes): the own-answer mask at the top-K heads of `attention` and of `atp` (site
"attention"), the top-K heads' outputs mean-ablated (`head_output`), the top-M MLP outputs mean-ablated
(`mlp_output`), the best layer's direction projected out of the residual stream (`residual`); and, as their
controls, random sets of the same sizes (seeded, `selected_by = "random"`). The candidates' p-values are
corrected together with Holm; a candidate is causal when its Holm p is at most the test's level and the judge has
a significant gap to carry (without one, `causal` is None: nothing to locate). Each head set
also gets its route (`interp.causal.routes`: pattern, content or neither); where the candidate has no share of
the gap (the judge's gap over its controls not significant), no route part is run: they read the same clean
verdicts, so none could have a share, and the route is "neither" with that reason.

The result (`Explanation`) is written to RUN/explain/<judge>-<key>/explain.json, keyed by the run, the judge
and every setting; `report.html` draws it.
"""

from __future__ import annotations

import dataclasses
import io
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from interp.config import PlacementKeys
from interp.errors import InterpError
from interp.formatting import p_value, share_interval
from interp.causal.causal import causal_tasks, intervene_run, random_head_sets
from interp.causal.design import TestDesign, resolve_controls
from interp.causal.directions import layer_directions
from interp.causal.engine import digest, judge_pool, run_identity, self_judges
from interp.causal.localize import localize_run, run_judge
from interp.causal.executor import check_executor, execute, with_executor
from interp.causal.routes import (
    COUNTERFACTUAL,
    RouteAnalysis,
    check_counterfactual,
    heads_key,
    route_analysis,
    route_specs,
)
from interp.hooks.nodes import node_from_dict
from interp.hooks.spec import AttentionIntervention, pairs_table
from interp.metrics.causal_test import ALPHA, holm
from interp.run.judging import judge_tasks
from interp.run.store import Run, read_run
from interp.splits import split_ids
from interp.storage import atomic_write_bytes, atomic_write_text, path_label

HEAD_METHODS = {
    "attention": "attention",
    "atp": "attention",
    "atp-output": "head_output",
}  # method -> the site its heads are tested at
EXPLAIN_METHODS = ("attention", "atp", "atp-output", "atp-mlp", "direction")
FILE = "explain.json"


@dataclass(frozen=True)
class Candidate:
    """One tested candidate: where, chosen how, and the causal test's reading of it on the test split."""

    site: str  # attention | head_output | mlp_output | residual
    selected_by: str  # the localisation method, or "random"
    heads: list[list[int]] | None  # [[layer, head], ...] for head sites
    layers: list[int] | None
    share_removed: float | None
    ci: list[float] | None
    p_value: float | None
    p_holm: float | None = None
    causal: bool | None = None  # after Holm; None: no test, or no gap to carry (a reason says why)
    reason: str | None = None
    route: str | None = None  # pattern | content | neither, for head sets; None otherwise
    route_detail: dict | None = None
    spec: dict | None = None

    @property
    def label(self) -> str:
        where = (
            ", ".join(f"L{l}H{h}" for l, h in self.heads)
            if self.heads
            else ", ".join(f"L{l}" for l in self.layers or [])
        )
        return f"{self.site} [{where}] by {self.selected_by}"


@dataclass(frozen=True)
class Explanation:
    run: str
    judge: str
    settings: dict
    controls: list[str]
    selection_items: list[str]
    test_items: list[str]
    localisation: dict  # method -> its top entries on the selection split
    candidates: list[Candidate]
    answer: str
    key: str

    def to_dict(self) -> dict:
        return asdict(self)


def _spec(site: str, heads: list[list[int]] | None, layers: list[int] | None, name: str, direction=None):
    if site == "attention":
        table = tuple((layer, tuple(hs)) for layer, hs in pairs_table(heads).items())
        return AttentionIntervention(target="self", alpha=0.0, heads=table, name=name)
    if site == "head_output":
        return node_from_dict({"site": site, "op": "mean", "heads": heads_key(pairs_table(heads)), "name": name})
    if site == "mlp_output":
        return node_from_dict({"site": site, "op": "mean", "layers": sorted(layers), "name": name})
    return node_from_dict(
        {
            "site": "residual",
            "op": "project_out",
            "layers": layers,
            "direction": [float(x) for x in direction],
            "name": name,
        }
    )


def _answer(candidates: Sequence[Candidate], judge: str) -> str:
    """The paragraph: the user's question (attention to the own answer) first, then where the largest share is."""

    def share(c: Candidate) -> str:
        if c.share_removed is None:
            return f"no share ({c.reason})"
        causal = "causal" if c.causal else "not causal" if c.causal is not None else "untested"
        shown = share_interval(c.share_removed, c.ci)
        return f"{shown} ({causal}, Holm p {p_value(c.p_holm)})" if c.p_holm is not None else shown

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


def explain_run(
    run_dir: Path,
    judge: str,
    *,
    top_k: int = 3,
    mlp_k: int = 2,
    selection_share: float = 0.4,
    split_seed: int = 0,
    control_judges: tuple[str, ...] | None = None,
    methods: Sequence[str] = EXPLAIN_METHODS,
    routes: bool = True,
    counterfactual: str = COUNTERFACTUAL,
    random_sets: int = 1,
    test_alpha: float = ALPHA,
    where: PlacementKeys | None = None,
    progress: bool = True,
    executor: str | None = None,
    max_memory: int | None = None,
) -> Explanation:
    """Localise on the selection split, test on the test split (module docstring); write and return the result.

    `executor` / `max_memory` (bytes): as for `intervene_run`, for every causal test (candidates, random sets,
    route parts); on Ray, all their tasks are run as one batch first. The localisation runs in this process.
    """
    unknown = [m for m in methods if m not in EXPLAIN_METHODS]
    if unknown or not methods:
        raise InterpError(
            f"unknown explain method(s) {', '.join(unknown) or '(none)'}; use some of {', '.join(EXPLAIN_METHODS)}"
        )
    if not 1 <= top_k <= 64 or not 1 <= mlp_k <= 64:
        raise InterpError(f"--top-k {top_k} and --mlp-k {mlp_k} must be between 1 and 64")
    if random_sets < 0:
        raise InterpError(f"--random-sets {random_sets} must be 0 or more")
    if executor is not None:
        check_executor(executor)
    check_counterfactual(counterfactual)
    run = read_run(run_dir)
    judge = run_judge(run, judge)
    self_judges(run, [judge])
    design = TestDesign(
        heads="spec",
        selection_share=selection_share,
        split_seed=split_seed,
        control_judges=control_judges,
        test_alpha=test_alpha,
    )
    controls = resolve_controls(run, judge, design)
    ids = [item.id for item in run.items]
    selection, test = split_ids(ids, selection_share, split_seed, purpose="selection", what="--selection-share")
    settings = {
        "top_k": top_k,
        "mlp_k": mlp_k,
        "selection_share": selection_share,
        "split_seed": split_seed,
        "methods": list(methods),
        "routes": routes,
        **({"counterfactual": counterfactual} if routes else {}),
        "random_sets": random_sets,
        "test_alpha": test_alpha,
        "control_judges": list(controls),
    }
    key = digest({"run": run_identity(run), "judge": judge, "settings": settings})
    out_dir = run.dir.root / "explain" / f"{path_label(judge)}-{key}"
    pool = with_executor(judge_pool(run, where=where), executor, max_memory)
    model = pool.model(judge)

    located = _localise(run, judge, methods, selection, pool, out_dir, progress)
    raw: list[tuple[str, str, list | None, list | None, object]] = []  # site, selected_by, heads, layers, spec
    for method, site in HEAD_METHODS.items():
        if method in located:
            heads = [[int(r.layer), int(r.head)] for r in located[method].head(top_k).itertuples()]
            raw.append((site, method, heads, None, _spec(site, heads, None, f"explain-{site}-{method}-top{top_k}")))
    if "atp-mlp" in located:
        layers = sorted(int(r.layer) for r in located["atp-mlp"].head(mlp_k).itertuples())
        raw.append(
            ("mlp_output", "atp-mlp", None, layers, _spec("mlp_output", None, layers, f"explain-mlp-atp-top{mlp_k}"))
        )
    if "direction" in located:
        best = located["direction"].iloc[0]
        raw.append(
            (
                "residual",
                "direction",
                None,
                [int(best.layer)],
                _spec("residual", None, [int(best.layer)], f"explain-direction-L{int(best.layer)}", best.vector),
            )
        )
    chosen = next(
        (pairs_table(heads) for _, _, heads, _, _ in raw if heads), None
    )  # the random sets' size: a candidate's
    tables = (
        random_head_sets(
            chosen,
            model.n_layers,
            model.n_heads,
            random_sets,
            seed_key=f"{judge}|{split_seed}|heads",
            layer_matched=False,
        )
        if chosen
        else []
    )
    for r in range(random_sets):
        if tables:
            heads = [[layer, head] for layer, hs in sorted(tables[r].items()) for head in hs]
            for site in sorted({HEAD_METHODS[m] for m in HEAD_METHODS if m in located}):
                raw.append((site, "random", heads, None, _spec(site, heads, None, f"explain-{site}-random{r}-{top_k}")))
        if "atp-mlp" in located:
            layers = sorted(random.Random(f"{judge}|{split_seed}|mlp|{r}").sample(range(model.n_layers), mlp_k))
            raw.append(
                (
                    "mlp_output",
                    "random",
                    None,
                    layers,
                    _spec("mlp_output", None, layers, f"explain-mlp-random{r}-{mlp_k}"),
                )
            )

    where_it_runs = dict(models=pool.models, where=where, executor=executor, max_memory=max_memory)
    common = dict(design=design, judges=[judge], progress=progress) | where_it_runs

    def on_cluster(tests: list) -> None:  # the tests' tasks as one batch, so the cluster runs them side by side
        if pool.executor != "local" and tests:
            tasks = [task for spec in tests for task in causal_tasks(run.dir.root, spec, design=design, judges=[judge])]
            with run.dir.writer():
                execute(run, tasks, pool)

    on_cluster([spec for *_, spec in raw])
    records = [next(iter(intervene_run(run.dir.root, spec, **common).judges.values())) for *_, spec in raw]
    with_share = {  # the head sets whose route parts can have a share: those whose candidate has one
        json.dumps(heads): heads
        for (_, by, heads, _, _), record in zip(raw, records)
        if routes and heads and by != "random" and record.share_removed
    }
    on_cluster(
        [
            spec
            for heads in with_share.values()
            for spec in route_specs(pairs_table(heads), counterfactual=counterfactual).values()
        ]
    )
    candidates = []
    route_cache: dict[str, RouteAnalysis] = {}
    for (site, selected_by, heads, layers, spec), record in zip(raw, records):
        share = record.share_removed
        route, detail = None, None
        if routes and heads and selected_by != "random":
            hkey = json.dumps(heads)
            if hkey not in route_cache and share is None:  # the parts read the same clean gap: none has a share
                route_cache[hkey] = RouteAnalysis(
                    judge=judge,
                    heads=pairs_table(heads),
                    parts={},
                    route="neither",
                    reason=f"no share of the gap: {record.share_removed_reason}; no route part run, as none could "
                    "have one",
                    counterfactual=counterfactual,
                )
            if hkey not in route_cache:
                route_cache[hkey] = route_analysis(
                    run.dir.root,
                    judge,
                    pairs_table(heads),
                    design=design,
                    counterfactual=counterfactual,
                    progress=progress,
                    **where_it_runs,
                )
            route, detail = route_cache[hkey].route, route_cache[hkey].to_dict()
        candidates.append(
            Candidate(
                site=site,
                selected_by=selected_by,
                heads=heads,
                layers=layers,
                share_removed=share.estimate if share else None,
                ci=[share.low, share.high] if share else None,
                p_value=record.p_value,
                reason=None if share else record.share_removed_reason,
                route=route,
                route_detail=detail,
                spec=spec.to_dict(),
            )
        )
    candidates = _with_holm(candidates, test_alpha)
    localisation = {
        m: frame.drop(columns=[c for c in ("vector",) if c in frame]).head(max(top_k, mlp_k)).to_dict("records")
        for m, frame in located.items()
    }
    result = Explanation(
        run=str(run.dir.root),
        judge=judge,
        settings=settings,
        controls=list(controls),
        selection_items=selection,
        test_items=test,
        localisation=localisation,
        candidates=candidates,
        answer=_answer(candidates, judge),
        key=key,
    )
    with run.dir.writer():
        atomic_write_text(out_dir / FILE, json.dumps(result.to_dict(), indent=2, default=_plain))
    return result


def _plain(value):
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _with_holm(candidates: list[Candidate], alpha: float) -> list[Candidate]:
    """Holm over the tested candidates. A candidate is causal when its Holm p is at most `alpha` and the judge has
    a gap to carry: where the gap before the intervention is not significant (no share, the reason says why),
    `causal` is None. A candidate chosen on the judge's own selection items moves that judge more than its
    controls whether or not it prefers its own answers; what it moves then is a gap that is not there
    (experiments/causal/plan.md, plan 3, amendment 7)."""
    tested = [i for i, c in enumerate(candidates) if c.p_value is not None]
    adjusted = holm([candidates[i].p_value for i in tested]) if tested else []
    out = list(candidates)
    for i, p in zip(tested, adjusted):
        causal = bool(p <= alpha) if out[i].share_removed is not None else None
        out[i] = dataclasses.replace(out[i], p_holm=float(p), causal=causal)
    return out


def _localise(
    run: Run, judge: str, methods: Sequence[str], selection: list[str], pool, out_dir: Path, progress: bool
) -> dict[str, pd.DataFrame]:
    """Each method's ranking on the selection split, best first (kept in out_dir as CSV: read back on a re-run)."""
    located: dict[str, pd.DataFrame] = {}
    cached = out_dir / "localisation.csv"
    if cached.is_file():
        table = pd.read_csv(cached)
    else:
        wanted = [m for m in methods if m != "direction"]
        table = (
            localize_run(run, judge, wanted, judges=pool, items=selection, progress=progress)
            if wanted
            else pd.DataFrame()
        )
    for method in methods:
        if method != "direction" and len(table):
            located[method] = table[table["method"] == method].sort_values("rank").reset_index(drop=True)
    if "direction" in methods:
        located["direction"] = _directions(run, judge, selection, pool, out_dir)
    if not cached.is_file() and len(table):
        with run.dir.writer():
            atomic_write_text(cached, table.to_csv(index=False))
    return located


def _directions(run: Run, judge: str, selection: list[str], pool, out_dir: Path) -> pd.DataFrame:
    """Per layer, the direction fitted on half the selection items and scored on the other half, best first."""
    cached = out_dir / "directions.npz"
    half_fit, half_score = split_ids(selection, 0.5, 0, purpose="direction", what="selection half")
    if cached.is_file():
        data = np.load(cached)
        frame = pd.DataFrame({"layer": data["layer"], "score": data["score"], "vector": list(data["vector"])})
    else:
        runner = pool.runner(judge, run)
        tasks = judge_tasks([item for item in run.items if item.id in set(selection)], run.responses, run.config.models)
        found = layer_directions(
            runner,
            judge,
            tasks,
            list(range(runner.model.n_layers)),
            half_fit,
            half_score,
            batch_size=run.config.batch_size,
        )
        frame = pd.DataFrame(
            {
                "layer": [d.layer for d in found],
                "score": [d.paired_accuracy for d in found],
                "vector": [d.vector.numpy() for d in found],
            }
        )
        buffer = io.BytesIO()
        np.savez(
            buffer,
            layer=frame["layer"].to_numpy(),
            score=frame["score"].to_numpy(),
            vector=np.stack(frame["vector"].to_list()),
        )
        with run.dir.writer():
            atomic_write_bytes(cached, buffer.getvalue())
    frame["method"] = "direction"
    return frame.sort_values(["score", "layer"], ascending=[False, True], kind="stable").reset_index(drop=True)


def read_explanations(run_dir: Path) -> list[dict]:
    """Every explain.json of a run (for the report), newest first."""
    folder = Path(run_dir) / "explain"
    files = sorted(folder.glob(f"*/{FILE}"), key=lambda p: p.stat().st_mtime, reverse=True) if folder.is_dir() else []
    return [json.loads(p.read_text()) for p in files]
