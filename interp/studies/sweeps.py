"""Sweeps: many variants over one run, each re-judged under the causal test, effects in one CSV with plots.

Two sweeps share one runner (`run_points`):

- the ablation sweep (`run_sweep`, `SweepConfig`): attention interventions over every layer, single layers,
  layer bands, top-k heads by own-minus-other attention against random k-head sets, alphas and targets;
- the steering sweep (`run_steering_sweep`, `SteeringSweepConfig`): per judge and layer one
  self-recognition direction (training items only), then one point per coefficient (add mode, in units of
  the direction's norm) and, with `project_out`, one removal point.

An ablation config (TOML) names a finished run and the axes to sweep:

    run = "runs/demo"                 # run directory (relative to the working directory)
    name = "ablation"                 # a label; results go to RUN/sweeps/NAME-<key>/ (NAME as a file name)
    judges = ["smollm2-135m-instruct"]  # default: every judge that is also an author
    targets = ["self", "other", "random"]
    alphas = [0.0]
    executor = "local"                # or "ray": the points as Ray tasks (`interp.engine.executor`)
    max_memory = 40                   # GB of judge models held at once (default: half the memory available)
    [layers]
    each = true                       # one point per single layer (all heads)
    bands = [[0, 10], [10, 20]]       # [start, end) layer bands (all heads)
    [heads]
    top_k = [1, 2, 4]                 # top-k heads by own-minus-other attention (from the run's attention maps)
    random_seeds = [0, 1, 2]          # random k-head sets of the same sizes, one per seed

Every point's judgments are the engine's (RUN/variants/<key>/), so a killed sweep resumes where it stopped.
`results.csv` has one row per (judge, point) with the point's variant key; the folder's key is a hash of
the config's sweep (everything but `run`, `name` and where it runs: `executor`, `max_memory`).
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from tqdm.auto import tqdm

from interp.analysis.attention_stats import top_heads
from interp.config import (
    PlacementKeys,
    SteeringSweepConfig,
    SweepConfig,
    load_toml_config,
)
from interp.core.models import ModelCache, own_model
from interp.engine.executor import Execution, VariantTask, execute
from interp.engine.judges import HeldJudge, Judges, baseline
from interp.engine.variants import Variant, check_variants, digest, self_judges
from interp.errors import InterpError
from interp.hooks.base import kinds_at, site_names
from interp.hooks.spec import AttentionIntervention
from interp.locate.directions import DirectionSplit, compute_direction, steering_split
from interp.metrics.behaviour import behaviour, paired_effect
from interp.metrics.causal_test import holm, sign_flip_pvalue
from interp.report.sweeps import write_steering_sweep_plots, write_sweep_plots
from interp.run.store import Run, read_run
from interp.storage import write_csv
from interp.studies.steering import direction_steering


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep: the variant a judge re-judges the run under, and the CSV columns that say what it is."""

    judge: str
    variant: Variant
    columns: dict  # what the point is, as CSV columns
    extra: dict = field(default_factory=dict)  # columns that follow the results (e.g. probe accuracy)


def run_points(
    run: Run, points: Sequence[SweepPoint], pool: Judges, out: Path, *, desc: str, progress: bool = True
) -> list[dict]:
    """Re-judge the run under every point (as tasks of the pool's executor, one judge at a time); then
    RUN/.../results.csv with one row per point (written last), read from the keyed store."""
    rows = []
    before: dict[str, object] = {}
    with run.dir.writer():
        execute(run, [VariantTask(str(run.dir.root), point.judge, point.variant) for point in points], pool)
        for point in tqdm(points, desc=desc, disable=not progress):
            judge = point.judge
            if judge not in before:
                before[judge] = baseline(run, judge, judges=pool, progress=False)
            after = pool.judged(run, judge, point.variant, progress=False)
            gold_own = run.gold_own(own_model(judge))
            effect = paired_effect(before[judge], after, n_boot=run.config.n_boot, seed=run.config.seed)
            # a point's own test of "this variant moves P(own)" (two-sided sign flip, within the judge)
            p_value = sign_flip_pvalue(after - before[judge], seed=run.config.seed)
            scores = behaviour(after, gold_own, n_boot=run.config.n_boot, seed=run.config.seed)
            rows.append(
                {"judge": judge}
                | point.columns
                | {
                    "effect": effect["mean"],
                    "effect_lo": effect["ci"][0],
                    "effect_hi": effect["ci"][1],
                    "p_value": p_value,
                    "dbg_hard": scores["dbg_hard"],
                    "dbg_lo": scores["dbg_ci"][0],
                    "dbg_hi": scores["dbg_ci"][1],
                    "dbg_soft": scores["dbg_soft"],
                    "mean_p_own": scores["mean_p_own"],
                    "gold_agreement": scores["gold_agreement"],
                }
                | point.extra
                | {"key": pool.key(run, judge, point.variant, run.items)}
            )
        for row, adjusted in zip(
            rows, holm([row["p_value"] for row in rows]), strict=False
        ):  # many points, one family: Holm
            row["p_holm"] = adjusted
        write_csv(out / "results.csv", rows, list(rows[0]))
    return rows


def sweep_folder(run: Run, config: SweepConfig | SteeringSweepConfig, pool: Judges | None = None) -> Path:
    """RUN/sweeps/<name>-<hash of the sweep's axes and judges> (steering sweeps under RUN/steering/sweeps/); the
    open blocks of a judge the caller holds are part of the hash (`pool`), so a hooked sweep has its own folder."""
    data = config.model_dump(exclude={"run", "name", "max_memory", "executor"})  # where it runs is not what it finds
    if isinstance(config, SweepConfig) and config.sites == ["attention"]:  # an attention-only sweep keeps its key
        for axis in ("sites", "ops", "positions"):
            data.pop(axis)
    opened = {judge: [i.identity() for i in held.edits] for judge, held in (pool.held if pool else {}).items()}
    if any(opened.values()):
        data["opened"] = {judge: edits for judge, edits in opened.items() if edits}
    key = digest(data)
    return (
        run.dir.sweep(config.name, key) if isinstance(config, SweepConfig) else run.dir.steering_sweep(config.name, key)
    )


# ---- the ablation sweep ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """Where an ablation sweep point intervenes: all layers, a layer, a band of layers, or a set of k heads (top by
    own-minus-other attention, or random with a seed)."""

    family: str  # all | layer | band | top_k | random_k
    layers: tuple[int, ...] | None
    heads: tuple[tuple[int, tuple[int, ...]], ...] | None  # (layer, heads) pairs
    k: int | None
    seed: int | None

    def describe(self) -> dict:
        """The point as CSV columns (family, layers, heads as layer.head, k, seed; empty where not set)."""
        return {
            "family": self.family,
            "layers": " ".join(map(str, self.layers)) if self.layers else "",
            "heads": " ".join(f"{l}.{h}" for l, hs in self.heads for h in hs) if self.heads else "",
            "k": self.k if self.k is not None else "",
            "seed": self.seed if self.seed is not None else "",
        }


def load_sweep_config(path: Path) -> SweepConfig:
    """The ablation sweep config in the TOML file at `path`, validated."""
    return load_toml_config(path, SweepConfig, "sweep config")


def sweep_points(config: SweepConfig, run_dir: Path, judge: str, n_layers: int, n_heads: int) -> list[Point]:
    """The ablation points of the config for one judge: all layers, each layer, the bands (cut at `n_layers`), and
    per k the top-k heads of the run's attention maps with one random k-head set per seed; InterpError if none."""
    points: list[Point] = []
    if config.all_layers:
        points.append(Point("all", None, None, None, None))
    if config.layers.each:
        points += [Point("layer", (layer,), None, None, None) for layer in range(n_layers)]
    points += [
        Point("band", tuple(range(start, min(end, n_layers))), None, None, None) for start, end in config.layers.bands
    ]
    if config.heads.top_k or config.heads.random_seeds:
        ranked = top_heads(run_dir, judge, n_layers * n_heads)
        for k in config.heads.top_k:
            points.append(Point("top_k", None, _table((layer, head) for layer, head, _ in ranked[:k]), k, None))
            for seed in config.heads.random_seeds:
                rng = random.Random(f"{judge}|{k}|{seed}")
                chosen = rng.sample([(l, h) for l in range(n_layers) for h in range(n_heads)], k)
                points.append(Point("random_k", None, _table(chosen), k, seed))
    if not points:
        raise InterpError("the sweep has no points: set all_layers, [layers] each/bands or [heads] top_k")
    return points


def _table(pairs) -> tuple[tuple[int, tuple[int, ...]], ...]:
    table: dict[int, set[int]] = {}
    for layer, head in pairs:
        table.setdefault(int(layer), set()).add(int(head))
    return tuple((layer, tuple(sorted(heads))) for layer, heads in sorted(table.items()))


def point_spec(point: Point, target: str, alpha: float, queries: str) -> AttentionIntervention:
    """The attention intervention of an ablation point: attention on `target` times `alpha` at its layers or heads."""
    heads = dict(point.heads) if point.heads else None
    return AttentionIntervention(target=target, alpha=alpha, layers=point.layers, heads=heads, queries=queries)


def check_node_axes(config: SweepConfig) -> None:
    """The sweep's sites, ops and positions name what exists, before anything is loaded."""
    from interp.hooks.nodes import POSITIONS, registered_ops

    for site in config.sites:
        if site not in site_names():
            raise InterpError(f"sweep: unknown site {site!r}; use {', '.join(site_names())}")
    if any(set(kinds_at(site)) & set(registered_ops()) for site in config.sites):
        for op in config.ops:
            if op not in registered_ops():
                raise InterpError(f"sweep: unknown op {op!r}; use one of {', '.join(registered_ops())}")
        for positions in config.positions:
            if positions not in POSITIONS:
                raise InterpError(f"sweep: unknown positions {positions!r}; use one of {', '.join(POSITIONS)}")


def point_node(point: Point, site: str, op: str, positions: str):
    """The node spec of a sweep point at a site, or None where the point does not apply (head sets at a site
    without heads). Ops that need a direction or a counterfactual take their defaults; a registered kind its own."""
    from interp.hooks.nodes import node_from_dict

    if point.heads is not None and site != "head_output":
        return None
    keys: dict = {"site": site, "op": op, "positions": positions}
    if point.heads is not None:
        keys["heads"] = {layer: list(heads) for layer, heads in point.heads}
    elif point.layers is not None:
        keys["layers"] = list(point.layers)
    return node_from_dict(keys, where="sweep: ")


def sweep_execution(config, where, models, executor: str | None, max_memory: int | None) -> Execution:
    """Where a sweep's judgments run (an ablation or a steering sweep config): the caller's placement, executor and
    memory budget (bytes) where given, else the config's; the config's backend."""
    return Execution(
        backend=config.backend,
        where=where or config,
        models=models,
        max_memory=max_memory if max_memory is not None else config.max_memory_bytes,
        executor=executor or config.executor,
    )


def run_sweep(
    config_path: Path | SweepConfig,
    *,
    progress: bool = True,
    where: PlacementKeys | None = None,
    models: ModelCache | None = None,
    executor: str | None = None,
    max_memory: int | None = None,
    held: Mapping[str, HeldJudge] | None = None,
) -> Path:
    """The ablation sweep of a config file (or an already validated config); returns the path of results.csv
    (plots beside it). `executor` / `max_memory` (bytes): the config's `executor` / `max_memory` (GB) unless given.
    `held`: judges the caller holds (`interp.engine.judges.HeldJudge`: model, backend, open blocks)."""
    config = config_path if isinstance(config_path, SweepConfig) else load_sweep_config(config_path)
    run = read_run(Path(config.run))
    execution = sweep_execution(config, where, models, executor, max_memory)
    pool = dataclasses.replace(execution, held=held).pool(run)
    node_sites = [site for site in config.sites if "attention" not in kinds_at(site)]  # the kinds of `ops`
    check_node_axes(config)
    points = []
    for judge in self_judges(run, config.judges):
        model = pool.model(judge)
        for point in sweep_points(config, run.dir.root, judge, model.n_layers, model.n_heads):
            if any("attention" in kinds_at(site) for site in config.sites):  # the kind of `targets` x `alphas`
                for target in config.targets:
                    for alpha in config.alphas:
                        variant = Variant(
                            f"{point.family}:{target}:{alpha:g}",
                            (point_spec(point, target, alpha, config.queries),),
                        )
                        check_variants(model, [variant])
                        site = (
                            {"site": "attention", "op": "mask" if alpha == 0 else "dampen", "positions": ""}
                            if node_sites
                            else {}
                        )
                        points.append(
                            SweepPoint(judge, variant, {"target": target, "alpha": alpha} | site | point.describe())
                        )
            for site in node_sites:
                for op in config.ops:
                    for positions in config.positions:
                        node = point_node(point, site, op, positions)
                        if node is None:
                            continue
                        variant = Variant(f"{point.family}:{site}:{op}:{positions}", (node,))
                        check_variants(model, [variant])
                        columns = {"target": "", "alpha": "", "site": site, "op": op, "positions": positions}
                        points.append(SweepPoint(judge, variant, columns | point.describe()))
        pool.release(judge)  # checked: let go until its tasks come, when the models held pass the budget
    out = sweep_folder(run, config, pool)
    rows = run_points(run, points, pool, out, desc=f"sweep {config.name}", progress=progress)
    write_sweep_plots(rows, out)
    return out / "results.csv"


# ---- the steering sweep ----------------------------------------------------------------------------


def load_steering_sweep(path: Path) -> SteeringSweepConfig:
    """The steering sweep config in the TOML file at `path`, validated."""
    return load_toml_config(path, SteeringSweepConfig, "steering sweep config")


def sweep_layers(config: SteeringSweepConfig, n_layers: int) -> list[int]:
    """The layers a steering sweep steers, sorted: the config's `layers`, or else its `layer_fractions` of `n_layers`
    (rounded down, the last layer at most); InterpError for a layer or fraction out of range."""
    if config.layers is not None:
        layers = sorted(set(config.layers))
        bad = [layer for layer in layers if not 0 <= layer < n_layers]
        if bad:
            raise InterpError(f"steering sweep: layer {bad[0]} is out of range for a model with {n_layers} layers")
        return layers
    if any(not 0 <= f <= 1 for f in config.layer_fractions):
        raise InterpError("steering sweep: layer_fractions must lie in [0, 1]")
    return sorted({min(int(f * n_layers), n_layers - 1) for f in config.layer_fractions})


def run_steering_sweep(
    path: Path,
    *,
    progress: bool = True,
    where: PlacementKeys | None = None,
    models: ModelCache | None = None,
    executor: str | None = None,
    max_memory: int | None = None,
) -> Path:
    """Coefficients x layers of direction steering over a run; results.csv + plots under RUN/steering/sweeps/.

    Per judge and layer: one direction (training items only, cached), then one re-judging per coefficient
    (add mode, coefficient x the direction's norm) and, with `project_out`, one removal point.
    """
    config = load_steering_sweep(path)
    if any(not math.isfinite(c) for c in config.coefficients):
        raise InterpError("steering sweep: coefficients must be finite numbers")
    if not config.coefficients and not config.project_out:
        raise InterpError("the steering sweep has no points: give coefficients or set project_out = true")
    run = read_run(Path(config.run))
    steering_split([i.id for i in run.items], config.train_fraction, config.seed)
    pool = sweep_execution(config, where, models, executor, max_memory).pool(run)
    judges = self_judges(run, config.judges)
    plan = [(judge, layer) for judge in judges for layer in sweep_layers(config, pool.model(judge).n_layers)]
    points = []
    with run.dir.writer():
        for judge, layer in plan:
            direction = compute_direction(
                run,
                judge,
                layer,
                position=config.position,
                split=DirectionSplit(train_fraction=config.train_fraction, seed=config.seed),
                judges=pool,
            )
            probe = {
                "probe_train": direction.accuracy["train"],
                "probe_heldout": direction.accuracy["heldout"],
                "norm": direction.norm,
            }
            modes = [("add", c) for c in config.coefficients] + ([("project_out", 1.0)] if config.project_out else [])
            for mode, coefficient in modes:
                steering = direction_steering(direction, mode, coefficient, config.positions)
                columns = {
                    "layer": layer,
                    "mode": mode,
                    "coefficient": coefficient,
                    "coefficient_abs": steering.coefficient,
                }
                points.append(SweepPoint(judge, Variant(f"sweep-{mode}", (steering,)), columns, probe))
            if (judge, layer) == [step for step in plan if step[0] == judge][-1]:
                pool.release(judge)  # its directions made: let go until its tasks come (under the budget)
        out = sweep_folder(run, config)
        rows = run_points(run, points, pool, out, desc=f"steering sweep {config.name}", progress=progress)
    write_steering_sweep_plots(rows, out)
    return out / "results.csv"
