"""Ablation sweeps: many intervention specs over one run, each re-judged, effects in one CSV with plots.

A sweep config (TOML) names a finished run and the axes to sweep:

    run = "runs/demo"                 # run directory (relative to the working directory)
    name = "ablation"                 # results go to RUN/sweeps/NAME/
    judges = ["smollm2-135m-instruct"]  # default: every judge that is also an author
    targets = ["self", "other", "random"]
    alphas = [0.0]
    [layers]
    each = true                       # one point per single layer (all heads)
    bands = [[0, 10], [10, 20]]       # [start, end) layer bands (all heads)
    [heads]
    top_k = [1, 2, 4]                 # top-k heads by own-minus-other attention (from the run's attention maps)
    random_seeds = [0, 1, 2]          # random k-head sets of the same sizes, one per seed

Every point is an `AttentionIntervention`; its judgments are kept under RUN/sweeps/NAME/points/<id>/ so a
killed sweep resumes where it stopped. `results.csv` has one row per (judge, point).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from tqdm.auto import tqdm

from interp.backends import make_backend
from interp.causal import behaviour, load_run, own_probabilities, paired_effect, rejudge
from interp.errors import InterpError
from interp.models import load_model
from interp.runs import load_toml_config
from interp.storage import atomic_write_text, read_jsonl


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LayerAxes(_Strict):
    each: bool = False
    bands: list[tuple[int, int]] = Field(default_factory=list)


class HeadAxes(_Strict):
    top_k: list[int] = Field(default_factory=list)
    random_seeds: list[int] = Field(default_factory=list)


class SweepConfig(_Strict):
    run: str
    name: str = "sweep"
    judges: list[str] | None = None
    targets: list[str] = Field(default_factory=lambda: ["self"])
    alphas: list[float] = Field(default_factory=lambda: [0.0])
    queries: str = "outside"
    layers: LayerAxes = LayerAxes()
    heads: HeadAxes = HeadAxes()
    all_layers: bool = False  # also one point on every layer and head
    backend: str | None = None


def load_sweep_config(path: Path) -> SweepConfig:
    return load_toml_config(path, SweepConfig, "sweep config")


@dataclass(frozen=True)
class Point:
    family: str  # all | layer | band | top_k | random_k
    layers: tuple[int, ...] | None
    heads: tuple[tuple[int, tuple[int, ...]], ...] | None  # (layer, heads) pairs
    k: int | None
    seed: int | None

    def describe(self) -> dict:
        return {
            "family": self.family,
            "layers": " ".join(map(str, self.layers)) if self.layers else "",
            "heads": " ".join(f"{l}.{h}" for l, hs in self.heads for h in hs) if self.heads else "",
            "k": self.k if self.k is not None else "",
            "seed": self.seed if self.seed is not None else "",
        }


def sweep_points(config: SweepConfig, run_dir: Path, judge: str, n_layers: int, n_heads: int) -> list[Point]:
    points: list[Point] = []
    if config.all_layers:
        points.append(Point("all", None, None, None, None))
    if config.layers.each:
        points += [Point("layer", (layer,), None, None, None) for layer in range(n_layers)]
    points += [Point("band", tuple(range(start, min(end, n_layers))), None, None, None) for start, end in config.layers.bands]
    if config.heads.top_k or config.heads.random_seeds:
        from interp.attention_maps import top_heads

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


def point_spec(point: Point, target: str, alpha: float, queries: str):
    from hooks.spec import AttentionIntervention

    heads = dict(point.heads) if point.heads else None
    return AttentionIntervention(target=target, alpha=alpha, layers=point.layers, heads=heads, queries=queries)


def _point_id(judge: str, spec) -> str:
    return hashlib.sha256((judge + json.dumps(spec.to_dict(), sort_keys=True)).encode()).hexdigest()[:16]


def run_sweep(config_path: Path, *, progress: bool = True, loaded: dict | None = None) -> Path:
    from hooks.spec import validate_against

    config = load_sweep_config(config_path)
    run = load_run(Path(config.run))
    judges = config.judges if config.judges is not None else [j for j in run.config.judge_specs if j in run.config.models]
    out = run.paths.root / "sweeps" / config.name
    loaded = loaded if loaded is not None else {}
    plan = []
    for judge in judges:
        if judge not in loaded:
            loaded[judge] = load_model(judge)
        model = loaded[judge]
        for point in sweep_points(config, run.paths.root, judge, model.n_layers, model.n_heads):
            for target in config.targets:
                for alpha in config.alphas:
                    spec = point_spec(point, target, alpha, config.queries)
                    validate_against(spec, model.n_layers, model.n_heads)
                    plan.append((judge, point, spec))
    rows = []
    runners = {}
    for judge, point, spec in tqdm(plan, desc=f"sweep {config.name}", disable=not progress):
        if judge not in runners:
            runners[judge] = make_backend(loaded[judge], config.backend or run.config.backend)
        before = own_probabilities([r for r in read_jsonl(run.paths.judgments) if r["judge"] == judge], run, judge)
        path = out / "points" / _point_id(judge, spec) / "judgments.jsonl"
        atomic_write_text(path.parent / "spec.toml", spec.to_toml())
        after = rejudge(run, judge, runners[judge], spec, path, progress=False)
        gold_own = run.gold_first if judge == run.config.models[0] else 1 - run.gold_first
        effect = paired_effect(before, after, n_boot=run.config.n_boot, seed=run.config.seed)
        scores = behaviour(after, gold_own, n_boot=run.config.n_boot, seed=run.config.seed)
        rows.append(
            {"judge": judge, "target": spec.target, "alpha": spec.alpha}
            | point.describe()
            | {
                "effect": effect["mean"],
                "effect_lo": effect["ci"][0],
                "effect_hi": effect["ci"][1],
                "dbg_hard": scores["dbg_hard"],
                "dbg_soft": scores["dbg_soft"],
                "mean_p_own": scores["mean_p_own"],
                "gold_agreement": scores["gold_agreement"],
            }
        )
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(out / "results.csv", buffer.getvalue())
    write_sweep_plots(rows, out)
    return out / "results.csv"


def write_sweep_plots(rows: list[dict], out: Path) -> list[Path]:
    """Effect vs layer, effect vs k (top-k against the random-head band), effect vs alpha."""
    import matplotlib.pyplot as plt

    from interp.plots import save_figure

    written = []
    judges = sorted({r["judge"] for r in rows})

    def panel(title: str):
        fig, axes = plt.subplots(1, len(judges), figsize=(5 * len(judges), 3.4), squeeze=False)
        fig.suptitle(title, fontsize=10)
        return fig, axes[0]

    layer_rows = [r for r in rows if r["family"] == "layer"]
    if layer_rows:
        fig, axes = panel("Effect of the intervention vs layer (change of P(own wins))")
        for ax, judge in zip(axes, judges):
            for (target, alpha), group in _groups([r for r in layer_rows if r["judge"] == judge], ("target", "alpha")):
                xs = [int(r["layers"]) for r in group]
                _line(ax, xs, group, f"{target}, alpha={alpha:g}")
            ax.set_title(judge, fontsize=9), ax.set_xlabel("layer"), ax.axhline(0, color="k", lw=0.6), ax.legend(fontsize=7)
        written += save_figure(fig, out / "effect_vs_layer").values()
    k_rows = [r for r in rows if r["family"] in ("top_k", "random_k")]
    if k_rows:
        fig, axes = panel("Effect vs number of heads: top-k by own-minus-other attention vs random k heads")
        for ax, judge in zip(axes, judges):
            mine = [r for r in k_rows if r["judge"] == judge]
            for (target, alpha), group in _groups([r for r in mine if r["family"] == "top_k"], ("target", "alpha")):
                _line(ax, [int(r["k"]) for r in group], group, f"top-k {target}, alpha={alpha:g}")
                randoms = [r for r in mine if r["family"] == "random_k" and r["target"] == target and r["alpha"] == alpha]
                if randoms:
                    ks = sorted({int(r["k"]) for r in randoms})
                    lo = [100 * min(r["effect"] for r in randoms if int(r["k"]) == k) for k in ks]
                    hi = [100 * max(r["effect"] for r in randoms if int(r["k"]) == k) for k in ks]
                    ax.fill_between(ks, lo, hi, alpha=0.2, label=f"random k ({target}), min-max over seeds")
            ax.set_title(judge, fontsize=9), ax.set_xlabel("k heads"), ax.axhline(0, color="k", lw=0.6), ax.legend(fontsize=7)
        written += save_figure(fig, out / "effect_vs_k").values()
    alphas = {r["alpha"] for r in rows}
    if len(alphas) > 1:
        fig, axes = panel("Effect vs alpha")
        for ax, judge in zip(axes, judges):
            for (target, family, layers, heads), group in _groups([r for r in rows if r["judge"] == judge], ("target", "family", "layers", "heads")):
                if len({r["alpha"] for r in group}) > 1:
                    _line(ax, [r["alpha"] for r in group], group, f"{target} {family} {layers or heads or 'all'}"[:40])
            ax.set_title(judge, fontsize=9), ax.set_xlabel("alpha"), ax.axhline(0, color="k", lw=0.6), ax.legend(fontsize=6)
        written += save_figure(fig, out / "effect_vs_alpha").values()
    return written


def _groups(rows: list[dict], keys: tuple[str, ...]) -> Iterator[tuple[tuple, list[dict]]]:
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    for key, group in groups.items():
        yield key, group


def _line(ax, xs, group, label) -> None:
    order = np.argsort(xs)
    xs = np.array(xs)[order]
    ys = np.array([100 * group[i]["effect"] for i in order])
    lo = np.array([100 * group[i]["effect_lo"] for i in order])
    hi = np.array([100 * group[i]["effect_hi"] for i in order])
    ax.plot(xs, ys, marker="o", ms=3, label=label)
    ax.fill_between(xs, lo, hi, alpha=0.15)
    ax.set_ylabel("change of P(own), pts")
