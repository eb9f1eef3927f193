"""The ladder from a notebook: `interp.explain(run, judge)` and `interp.routes(run, judge, heads)`."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from interp.api.argument_types import check_int, check_list, check_number
from interp.api.interventions import check_where_it_runs
from interp.api.judge import Judge
from interp.api.runs import held_judges, hold_judge, refuse_opened, run_root
from interp.causal.design import TestDesign, parse_control_judges
from interp.config import gb_bytes
from interp.engine.executor import Execution
from interp.errors import InterpError
from interp.locate.heads import run_judge
from interp.run.store import read_run
from interp.studies.explain import EXPLAIN_METHODS, Explanation, Request, explain_run
from interp.studies.routes import ALT_COUNTERFACTUAL, COUNTERFACTUAL, RouteAnalysis, RoutePatch, route_analysis


def explain(
    run: Any,
    judge: Any,
    *,
    top_k: int = 3,
    mlp_k: int = 2,
    selection_share: float = 0.4,
    split_seed: int = 0,
    control_judges: str | Sequence[str] | None = None,
    methods: Sequence[str] = EXPLAIN_METHODS,
    routes: bool = True,
    counterfactual: str = COUNTERFACTUAL,
    alt_counterfactual: str | None = ALT_COUNTERFACTUAL,
    random_sets: int = 1,
    test_alpha: float = 0.05,
    gap_gate: bool = True,
    progress: bool = True,
    executor: str = "local",
    max_memory: float | None = None,
) -> Explanation:
    """Where `judge`'s self-preference lives (`interp explain`): localise on the selection split with every
    single-judge method, test each method's top candidates and random sets of the same size on the test split
    under the judge-level causal test (Holm over the candidates), and name each head set's route.

    >>> run = interp.load_run(run_dir)
    >>> len(run.judges)
    1
    >>> explanation = interp.explain(run, judge=run.judges[0])  # doctest: +SKIP
    >>> explanation.candidates[0].causal  # doctest: +SKIP

    The null is matched: each control judge goes through the same localisation on the same selection items and
    is measured at its own chosen set (`interp.causal.matched`). `gap_gate=False` (a diagnostic): every candidate
    is called on its Holm-adjusted p alone. `alt_counterfactual`: a second route counterfactual reported beside
    the default's (None: none).

    Returns an `Explanation`: `candidates` (site, heads, layers, selected_by, null, gap_before, route,
    route_parts, share_removed, ci, causal, p_value, p_holm, control_sets) and `answer`, the paragraph. Written
    to RUN/explain/<judge>-<key>/explain.json (keyed: a second call re-judges nothing).

    `executor`: where the causal tests' (judge, variant) tasks run, "local" (this process) or "ray" (a Ray
    cluster, `interp.engine.executor`; the localisation stays in this process); `max_memory`: GB of judge models
    held at once, as for `interp.intervene`.

    `judge`: its name in the run, or a `Judge` standing for it (its name; the run's judge is loaded). The
    localisation reads the plain model (its attention and gradients), so a Judge with an open `applying` or
    `hooks` block is refused in one line: test a held edit with `interp.intervene`.
    """
    check_int(top_k, "top_k", minimum=1)
    check_int(mlp_k, "mlp_k", minimum=1)
    check_number(selection_share, "selection_share")
    check_int(split_seed, "split_seed")
    check_list(methods, "methods")
    check_where_it_runs(executor, max_memory)
    root = run_root(run)
    loaded = read_run(root)
    judge = _plain_judge(judge, loaded, "interp.explain")
    request = Request(
        top_k=top_k,
        mlp_k=mlp_k,
        selection_share=selection_share,
        split_seed=split_seed,
        control_judges=parse_control_judges(control_judges),
        methods=tuple(methods),
        routes=routes,
        counterfactual=counterfactual,
        alt_counterfactual=alt_counterfactual,
        random_sets=random_sets,
        test_alpha=test_alpha,
        gap_gate=gap_gate,
    )
    return explain_run(
        root,
        run_judge(loaded, judge),
        request,
        progress=progress,
        executor=executor,
        max_memory=gb_bytes(max_memory),
    )


def _plain_judge(judge: Any, run, study: str) -> str:
    """The judge's name in the run; a `Judge` with open blocks is refused: the study localises on the plain
    model (a Judge without any is read as its name, the run's judge it stands for)."""
    held: dict[str, Judge] = {}
    name = hold_judge(judge, held, run.config.judge_specs)
    if not isinstance(name, str):
        raise InterpError(f"judge must be the judge's name in the run or a Judge, not {type(name).__name__}")
    refuse_opened(held, study)
    return name


def routes(
    run: Any,
    judge: Any,
    heads: Mapping[int, Sequence[int]],
    *,
    selection_share: float = 0.4,
    split_seed: int = 0,
    control_judges: str | Sequence[str] | None = None,
    counterfactual: str = COUNTERFACTUAL,
    progress: bool = True,
) -> RouteAnalysis:
    """The route head set `heads` (layer -> heads) uses for `judge`'s self-preference: its output, pattern and
    values patched from the counterfactual (own answer replaced by `counterfactual`: "other", the pair's other
    answer, or "reference", the item's reference answer; same token length), each
    under the causal test on the test split; `route` is "pattern", "content" or "neither".

    >>> heads = {28: [0, 1, 2]}  # layer -> heads: the set whose route is split
    >>> sorted(heads)
    [28]
    >>> analysis = interp.routes("runs/demo", "smollm2-135m-selfpref-attn", heads)  # doctest: +SKIP
    >>> analysis.route  # doctest: +SKIP

    `judge`: its name in the run, or a `Judge` you hold: its backend and open `applying` / `hooks` blocks run in
    every judgment of the route's tests (`interp.intervene`'s rule).
    """
    table = _head_table(heads)
    root = run_root(run)
    loaded = read_run(root)
    held: dict[str, Judge] = {}
    judge = hold_judge(judge, held, loaded.config.judge_specs)
    design = TestDesign(
        heads="spec",
        selection_share=selection_share,
        split_seed=split_seed,
        control_judges=parse_control_judges(control_judges),
    )
    patch = RoutePatch(counterfactual=counterfactual)
    return route_analysis(
        root,
        run_judge(loaded, judge),
        table,
        design=design,
        patch=patch,
        execution=Execution(progress=progress, held=held_judges(held) or None),
    )


def _head_table(heads: Any) -> dict[int, list[int]]:
    """`heads` as layer -> head indices, every layer and head an int >= 0 (a string layer "3" is refused, as
    every other wrong type at the Python API is): else one line."""
    if not isinstance(heads, Mapping) or not heads:
        raise InterpError("heads: give a table of layer -> head indices, e.g. {23: [3, 8]}")
    for layer, hs in heads.items():
        check_int(layer, f"heads: layer {layer!r}", minimum=0)
        if isinstance(hs, (str, bytes)) or not isinstance(hs, Sequence) or not hs:
            raise InterpError(f"heads: layer {layer} needs a non-empty list of head indices, not {hs!r}")
        for head in hs:
            check_int(head, f"heads: layer {layer}'s head {head!r}", minimum=0)
    return {int(layer): [int(h) for h in hs] for layer, hs in heads.items()}
