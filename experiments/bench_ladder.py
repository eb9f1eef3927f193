"""Benchmark: what one re-judgment of the `interp explain` ladder costs on CPU, and what the whole ladder costs.

    python experiments/bench_ladder.py [--run RUN] [--out runs/bench_ladder] [--n 16] [--repeat 3] [--quick]
        [--controls 6] [--ladder-n 150] [--json]

A judgment is one pair in one order, read as the verdict labels' probabilities, judged through the engine's
path (`interp.engine.judges.judge_pool` and `evaluate`, as the causal test of every rung does: keyed variants,
the run's batch size). The judge is the packaged SmolLM2-135M-Instruct (30 layers), on a small DBG run of the
held-out items (`--n`, the organisms' answer settings: at most 60 words, float32; kept in `--out` and resumed), or
an existing run (`--run`) whose judges include both judges below. Alternated and repeated; medians:

- `seconds_per_judgment_full`: the own answer masked at every layer (`AttentionIntervention(target="self",
  alpha=0.0)`), the judge with no other judge sharing its layers: every judgment runs all 30 layers, as one
  whose edit reaches the shared trunk's layers does (`interp.core.backends.shared_trunk`);
- `seconds_per_judgment_top8`: the same mask at the top 8 layers only (22-29), judged by the judge and then by a
  control that shares its lower 22 layers (`smollm2-135m-judge`, the null organism: LoRA on the top 8), each
  from a fresh pool as each causal test makes one: the first judge runs the trunk (22 layers, shared, with no
  bias below layer 22) and its own 8, each later judge only its 8 on the trunk's kept states. The figure is the
  mean over a test's group of the judge and `--controls` controls: (first + controls x reader) / (1 + controls),
  from `seconds_per_judgment_top8_first` and `seconds_per_judgment_top8_reader` (both printed);
- `top8_speedup_ratio`: full over top8;
- `seconds_per_judgment_final_cached`: the ladder's eight candidate tests of the judge (the five methods'
  candidates and the three random sets: the own-answer mask at heads, head outputs and MLP outputs mean-ablated, a
  direction projected out) at the verdict position (`--positions final`), judged as the engine judges a study's
  variants (`execute`, path cached): item-major, one clean pass per prompt keeping its keys and values, the eight
  variants as eight rows of one final-token pass over them; the means read from the kept final activations of the
  reference prompts (one pass each, shared by the variants). Seconds over (variants x judgments);
- `final_cached_speedup_ratio`: full over final_cached (the target: at least 20);
- `ladder_judgments`: the judgments of one `interp explain` with its defaults (`ladder_count`: the five methods'
  candidates and one random set per site, each a causal test of the judge and its controls on the test split,
  and every chosen head set's route parts under both counterfactuals);
- `ladder_minutes_full` / `ladder_minutes_top8` / `ladder_minutes_final`: ladder_judgments x seconds per judgment
  / 60 (localisation, the controls' own baselines and a patch's counterfactual pass are not counted: the figures
  are lower bounds; `ladder_minutes_final` counts every judgment at the cached rate, though the route parts that
  patch a head's pattern or values run the full pass).

Prints one `name: value` per line (`--json`: one JSON object). The timed variants are judged afresh each repeat
(their keyed folders are removed first, so nothing is read back from the store).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path

JUDGE = "smollm2-135m-instruct"  # the tested judge: the packaged real judge
PARTNER = "smollm2-135m-judge"  # its null organism: LoRA on the top 8 of 30 layers, the lower 22 the judge's
TOP_LAYERS = 8  # the organisms' LoRA layers, above the shared trunk
N_LAYERS = 30  # SmolLM2-135M's layers
ORDERS = 2  # a pair is judged in both orders
LADDER_CONTROLS = 6  # the control judges of a ladder (the null organisms of the base)
LADDER_N = 150  # the ladder run's items, split into selection and test (`Request.selection_share`)


def ladder_count(
    controls: int,
    test_items: int,
    *,
    methods: tuple[str, ...],
    head_methods: dict[str, str],
    random_sets: int,
    route_parts: int,
    alt_route_parts: int,
    routes: bool = True,
) -> dict[str, int]:
    """The judgments of one explain ladder (`interp.studies.explain`), every candidate with a share of the gap (so
    every route part runs) and every chosen head set distinct:

    - chosen candidates: one per method (`chosen_candidates`);
    - random candidates: per random set, one per head site of the methods (`HEAD_METHODS`' values) and one MLP
      set when atp-mlp is a method (`random_candidates`);
    - route tests: per chosen head set, `route_parts` under the default counterfactual and `alt_route_parts`
      under the alternative (`_Tests.route`);
    - each test judges the tested judge under its variant and each control under its own, on the test items in
      both orders: (1 + controls) x test_items x 2 judgments.

    judgments = (chosen + random + head sets x (route_parts + alt_route_parts)) x (1 + controls) x test_items x 2.
    """
    chosen = len(methods)
    sites = {head_methods[m] for m in methods if m in head_methods}
    per_set = len(sites) + (1 if "atp-mlp" in methods else 0)
    randoms = random_sets * per_set
    head_sets = sum(1 for m in methods if m in head_methods)
    route_tests = head_sets * (route_parts + alt_route_parts) if routes else 0
    tests = chosen + randoms + route_tests
    per_test = (1 + controls) * test_items * ORDERS
    return {
        "ladder_candidate_tests": chosen + randoms,
        "ladder_route_tests": route_tests,
        "ladder_tests": tests,
        "ladder_judgments_per_test": per_test,
        "ladder_judgments": tests * per_test,
    }


def default_ladder(controls: int = LADDER_CONTROLS, n_items: int = LADDER_N) -> dict[str, int]:
    """`ladder_count` with `interp explain`'s defaults (`Request()`), the test split drawn by the code's own split."""
    from interp.splits import split_ids
    from interp.studies.candidates import HEAD_METHODS
    from interp.studies.explain import Request
    from interp.studies.routes import ALT_ROUTE_PARTS, ROUTE_PARTS

    request = Request()
    _, test = split_ids(
        [f"item-{i}" for i in range(n_items)],
        request.selection_share,
        request.split_seed,
        purpose="selection",
        what="--selection-share",
    )
    alt = request.routes and request.alt_counterfactual not in (None, request.counterfactual)
    counted = ladder_count(
        controls,
        len(test),
        methods=tuple(request.methods),
        head_methods=dict(HEAD_METHODS),
        random_sets=request.random_sets,
        route_parts=len(ROUTE_PARTS),
        alt_route_parts=len(ALT_ROUTE_PARTS) if alt else 0,
        routes=request.routes,
    )
    return {"ladder_controls": controls, "ladder_test_items": len(test)} | counted


def top8_per_judgment(first: float, reader: float, controls: int) -> float:
    """Seconds per judgment over a test's group: the first judge runs the trunk, the `controls` after it read it."""
    return (first + controls * reader) / (1 + controls)


def derived(
    seconds: dict[str, float], ladder: dict[str, int], controls: int, uncached_share: float = 0.0
) -> dict[str, float]:
    """The figures from the timed seconds per judgment (`full`, `top8_first`, `top8_reader`, `final_cached`) and
    the ladder; `uncached_share`: the share of the ladder's tests the cached path cannot represent (counted at
    the full rate in `ladder_minutes_final` and in the ladder's mean `seconds_per_judgment_final_cached`)."""
    top8 = top8_per_judgment(seconds["top8_first"], seconds["top8_reader"], controls)
    judgments = ladder["ladder_judgments"]
    return {
        "seconds_per_judgment_full": seconds["full"],
        "seconds_per_judgment_top8": top8,
        "seconds_per_judgment_top8_first": seconds["top8_first"],
        "seconds_per_judgment_top8_reader": seconds["top8_reader"],
        "top8_speedup_ratio": seconds["full"] / top8,
        "ladder_minutes_full": judgments * seconds["full"] / 60,
        "ladder_minutes_top8": judgments * top8 / 60,
    } | (
        {
            "seconds_per_judgment_final_cached": (
                final := (1 - uncached_share) * seconds["final_cached"] + uncached_share * seconds["full"]
            ),
            "seconds_per_judgment_final_cached_rows": seconds["final_cached"],
            "final_cached_speedup_ratio": seconds["full"] / final,
            "ladder_minutes_final": judgments * final / 60,
        }
        if "final_cached" in seconds
        else {}
    )


def figure_lines(figures: dict) -> list[str]:
    """One `name: value` a line (floats to 4 significant places, ratios to 3 decimals)."""
    lines = []
    for name, value in figures.items():
        if isinstance(value, float):
            shown = f"{value:.3f}" if name.endswith("_ratio") else f"{value:.4g}"
        else:
            shown = str(value)
        lines.append(f"{name}: {shown}")
    return lines


def bench_run(out: Path, n: int, progress: bool) -> Path:
    """A DBG run of the judge and its null organism over the first `n` held-out items (the organisms' answer
    settings, float32 on the CPU, no attention recorded), resumable."""
    from bench_localize import heldout_run

    return heldout_run(out, [JUDGE, PARTNER], n, progress, attention="none", n_boot=50)


class Timer:
    """The timed judgings of one run: the full mask on a judge alone, the top-8 mask on the judge and a control."""

    def __init__(self, run_dir: Path):
        from interp.config import PlacementKeys
        from interp.core.models import ModelCache, own_model
        from interp.engine.judges import judge_pool
        from interp.engine.variants import Variant
        from interp.hooks.spec import AttentionIntervention
        from interp.run.store import read_run

        self.run = read_run(run_dir)
        missing = [j for j in (JUDGE, PARTNER) if j not in self.run.config.judge_specs]
        if missing:
            raise SystemExit(f"--run {run_dir}: the run did not judge with {', '.join(missing)}; it needs both")
        self.where = PlacementKeys(device="cpu")
        self.cache = judge_pool(self.run, where=self.where).models
        self.models = {name: self.cache.get(name) for name in (JUDGE, PARTNER)}
        self.alone = ModelCache(self.cache.placement, models={JUDGE: self.models[JUDGE]})
        self.own = own_model(JUDGE)
        n_layers = self.models[JUDGE].n_layers
        self.full = Variant("bench-mask-all", (AttentionIntervention(target="self", alpha=0.0, name="mask-all"),))
        top = tuple(range(n_layers - TOP_LAYERS, n_layers))
        self.top8 = Variant(
            "bench-mask-top8", (AttentionIntervention(target="self", alpha=0.0, layers=top, name="mask-top8"),)
        )
        self.judgments = len(self.run.items) * ORDERS
        self.trunk_layers: int | None = None
        self.cached = self.uncached = 0  # the ladder's tests the cached path represents, and not (`final_variants`)

    def _evaluate(self, pool, judge: str, variant) -> float:
        from interp.engine.judges import evaluate
        from interp.engine.variants import variant_key

        key = variant_key(self.run, judge, pool.backend_name(self.run), variant, self.run.items, self.own)
        shutil.rmtree(self.run.dir.variant(key), ignore_errors=True)  # judged afresh, never read back
        start = time.perf_counter()
        evaluate(self.run, judge, {variant.name: variant}, pool, progress=False, own=self.own)
        return (time.perf_counter() - start) / self.judgments

    def final_variants(self) -> list:
        """The ladder's tests of the judge at the verdict position (`candidates.intervention_spec`, then
        `--positions final`): the eight chosen and random sets of each site, then the route parts of the three
        chosen head sets under both counterfactuals (`routes.positioned_route_specs`), those the cached path can
        represent (`final_batch.variant_problem`; the others run the full pass and are counted at its rate)."""
        import torch

        from interp.engine.final_batch import variant_problem
        from interp.engine.variants import Variant
        from interp.hooks.final_row import at_positions
        from interp.hooks.spec import pairs_table
        from interp.studies.candidates import intervention_spec
        from interp.studies.routes import ALT_ROUTE_PARTS, ROUTE_PARTS, positioned_route_specs

        width = self.models[JUDGE].hf_model.config.hidden_size
        direction = torch.randn(width, generator=torch.Generator().manual_seed(0)).tolist()
        sets = {
            "attention": ("attention", [[27, 1], [28, 4], [29, 2]], None),
            "atp": ("attention", [[25, 0], [26, 3], [29, 5]], None),
            "atp-output": ("head_output", [[24, 2], [27, 6], [28, 0]], None),
            "atp-mlp": ("mlp_output", None, [26, 28]),
            "direction": ("residual", None, [20]),
            "random-attention": ("attention", [[3, 1], [11, 4], [19, 7]], None),
            "random-head-output": ("head_output", [[5, 0], [14, 8], [22, 3]], None),
            "random-mlp": ("mlp_output", None, [4, 17]),
        }
        variants = [
            Variant(
                f"bench-final-{name}", (at_positions(intervention_spec(site, heads, layers, name, direction), "final"),)
            )
            for name, (site, heads, layers) in sets.items()
        ]
        for name in ("attention", "atp", "atp-output"):
            heads = pairs_table(sets[name][1])
            for counterfactual, parts in (("other", ROUTE_PARTS), ("reference", ALT_ROUTE_PARTS)):
                for part, spec in positioned_route_specs(heads, parts, counterfactual, "final").items():
                    variants.append(Variant(f"bench-route-{name}-{part}-{counterfactual}", (spec,)))
        cached = [v for v in variants if variant_problem(v) is None]
        self.cached, self.uncached = len(cached), len(variants) - len(cached)
        return cached

    def final_case(self) -> float:
        """Seconds per judgment: the ladder's eight candidates of the judge at the verdict position, through the
        engine's executor with the cached path forced (item-major, the variants batched over each prompt's cache)."""
        from interp.engine.executor import VariantTask, execute
        from interp.engine.judges import judge_pool
        from interp.engine.variants import variant_key

        pool = judge_pool(self.run, models=self.alone)
        pool.path = "cached"
        variants = self.final_variants()
        for variant in variants:
            key = variant_key(self.run, JUDGE, pool.backend_name(self.run), variant, self.run.items, self.own)
            shutil.rmtree(self.run.dir.variant(key), ignore_errors=True)  # judged afresh, means too
        start = time.perf_counter()
        execute(self.run, [VariantTask(str(self.run.dir.root), JUDGE, v) for v in variants], pool)
        return (time.perf_counter() - start) / (len(variants) * self.judgments)

    def full_case(self) -> float:
        """Seconds per judgment: the judge alone (no trunk partner held), the mask at every layer."""
        from interp.engine.judges import judge_pool

        return self._evaluate(judge_pool(self.run, models=self.alone), JUDGE, self.full)

    def top8_case(self) -> tuple[float, float]:
        """Seconds per judgment of the first judge (trunk + top 8) and of a control reading the trunk (top 8), from
        one fresh pool holding both, as a causal test's pool does once its inputs are checked."""
        from interp.engine.judges import judge_pool

        pool = judge_pool(self.run, models=self.cache)
        first = self._evaluate(pool, JUDGE, self.top8)
        trunk = getattr(pool.runners.get((JUDGE, "hf")), "trunk", None)
        self.trunk_layers = trunk.layers if trunk is not None else 0
        reader = self._evaluate(pool, PARTNER, self.top8)
        return first, reader


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default=None, help="an existing run judged by both judges (default: made in --out)")
    parser.add_argument("--out", default="runs/bench_ladder", help="folder of the bench's run (resumed)")
    parser.add_argument("--n", type=int, default=16, help="held-out items of the bench's run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="4 items, 1 repeat (a smoke test, noisy figures)")
    parser.add_argument("--controls", type=int, default=LADDER_CONTROLS, help="control judges of the ladder")
    parser.add_argument("--ladder-n", type=int, default=LADDER_N, help="items of the ladder's run")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.n, args.repeat = 4, 1
        if args.out == parser.get_default("out"):
            args.out += "-quick"

    ladder = default_ladder(args.controls, args.ladder_n)
    from interp.core.threads import set_torch_threads

    set_torch_threads(None)
    import torch

    run_dir = Path(args.run) if args.run else bench_run(Path(args.out) / "run", args.n, args.progress)
    timer = Timer(run_dir)
    timer.full_case()  # warm up (first batches, allocations)
    timer.top8_case()
    timer.final_case()
    times: dict[str, list[float]] = {"full": [], "top8_first": [], "top8_reader": [], "final_cached": []}
    for _ in range(args.repeat):
        times["full"].append(timer.full_case())
        first, reader = timer.top8_case()
        times["top8_first"].append(first)
        times["top8_reader"].append(reader)
        times["final_cached"].append(timer.final_case())
    seconds = {name: statistics.median(values) for name, values in times.items()}
    figures: dict = {
        "model": JUDGE,
        "control": PARTNER,
        "threads": torch.get_num_threads(),
        "items": len(timer.run.items),
        "judgments_timed": timer.judgments,
        "batch": timer.run.config.batch_size,
        "repeat": args.repeat,
        "trunk_layers": timer.trunk_layers,
    }
    uncached_share = timer.uncached / (timer.cached + timer.uncached)
    figures |= {"final_cached_variants": timer.cached, "final_uncached_variants": timer.uncached}
    figures |= derived(seconds, ladder, args.controls, uncached_share) | ladder
    if args.json:
        print(json.dumps(figures))
    else:
        print("\n".join(figure_lines(figures)))


if __name__ == "__main__":
    main()
