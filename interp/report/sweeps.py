"""Sweep figures: effect vs layer, vs number of heads (top-k against random k), vs alpha, vs steering coefficient.

The figures read each point as a `SweepRow` (`codec.sweep_rows`): the judge and the results are attributes; what
the point is (its columns: family, target, alpha, layers, ...; a steering sweep's layer, mode and coefficient) stays
the mapping `SweepRow.point`, since each kind of sweep writes its own columns."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from interp.report.figures import save_figure, subplots
from interp.results import codec
from interp.results.rows import SweepRow


def write_sweep_plots(rows: Sequence[dict] | Sequence[SweepRow], out: Path) -> list[Path]:
    """Effect vs layer, effect vs k (top-k against the random-head band), effect vs alpha."""
    rows = codec.sweep_rows(rows)
    written = []
    judges = sorted({r.judge for r in rows})

    def panel(title: str):
        fig, axes = subplots(1, len(judges), figsize=(5 * len(judges), 3.4), squeeze=False)
        fig.suptitle(title, fontsize=10)
        return fig, axes[0]

    layer_rows = [r for r in rows if r.point["family"] == "layer"]
    if layer_rows:
        fig, axes = panel("Effect of the intervention vs layer (change of P(own wins))")
        for ax, judge in zip(axes, judges, strict=False):
            for _, group in _groups([r for r in layer_rows if r.judge == judge], SERIES):
                xs = [int(r.point["layers"]) for r in group]
                _line(ax, xs, group, _series_label(group[0]))
            (
                ax.set_title(judge, fontsize=9),
                ax.set_xlabel("layer"),
                ax.axhline(0, color="k", lw=0.6),
                ax.legend(fontsize=7),
            )
        written += save_figure(fig, out / "effect_vs_layer").values()
    k_rows = [r for r in rows if r.point["family"] in ("top_k", "random_k")]
    if k_rows:
        fig, axes = panel("Effect vs number of heads: top-k by own-minus-other attention vs random k heads")
        for ax, judge in zip(axes, judges, strict=False):
            mine = [r for r in k_rows if r.judge == judge]
            for series, group in _groups([r for r in mine if r.point["family"] == "top_k"], SERIES):
                _line(ax, [int(r.point["k"]) for r in group], group, f"top-k {_series_label(group[0])}")
                randoms = [r for r in mine if r.point["family"] == "random_k" and _series(r, SERIES) == series]
                if randoms:
                    ks = sorted({int(r.point["k"]) for r in randoms})
                    lo = [100 * min(r.effect for r in randoms if int(r.point["k"]) == k) for k in ks]
                    hi = [100 * max(r.effect for r in randoms if int(r.point["k"]) == k) for k in ks]
                    ax.fill_between(
                        ks, lo, hi, alpha=0.2, label=f"random k ({_series_label(group[0])}), min-max over seeds"
                    )
            (
                ax.set_title(judge, fontsize=9),
                ax.set_xlabel("k heads"),
                ax.axhline(0, color="k", lw=0.6),
                ax.legend(fontsize=7),
            )
        written += save_figure(fig, out / "effect_vs_k").values()
    alphas = {r.point["alpha"] for r in rows if "alpha" in r.point}  # node rows have no alpha
    if len(alphas) > 1:
        fig, axes = panel("Effect vs alpha")
        for ax, judge in zip(axes, judges, strict=False):
            for (target, family, layers, heads), group in _groups(
                [r for r in rows if r.judge == judge and "alpha" in r.point], ("target", "family", "layers", "heads")
            ):
                if len({r.point["alpha"] for r in group}) > 1:
                    xs = [r.point["alpha"] for r in group]
                    _line(ax, xs, group, f"{target} {family} {layers or heads or 'all'}"[:40])
            (
                ax.set_title(judge, fontsize=9),
                ax.set_xlabel("alpha"),
                ax.axhline(0, color="k", lw=0.6),
                ax.legend(fontsize=6),
            )
        written += save_figure(fig, out / "effect_vs_alpha").values()
    return written


SERIES = ("target", "alpha", "site", "op", "positions")  # what one line of a figure holds fixed


def _series(row: SweepRow, keys: tuple[str, ...]) -> tuple:
    """The point's values of `keys` ("" where the point has no such column)."""
    return tuple(row.point.get(k, "") for k in keys)


def _series_label(row: SweepRow) -> str:
    """An attention row: its target and alpha; a node row: its site, op and positions."""
    point = row.point
    if point.get("site") not in (None, "", "attention"):
        return f"{point['site']} {point['op']} ({point['positions']})"
    return f"{point['target']}, alpha={point['alpha']:g}"


def _groups(rows: list[SweepRow], keys: tuple[str, ...]) -> Iterator[tuple[tuple, list[SweepRow]]]:
    groups: dict[tuple, list[SweepRow]] = {}
    for row in rows:
        groups.setdefault(_series(row, keys), []).append(row)
    for key, group in groups.items():
        yield key, group


def _line(ax, xs, group: list[SweepRow], label) -> None:
    order = np.argsort(xs)
    xs = np.array(xs)[order]
    ys = np.array([100 * group[i].effect for i in order])
    lo = np.array([100 * group[i].effect_lo for i in order])
    hi = np.array([100 * group[i].effect_hi for i in order])
    ax.plot(xs, ys, marker="o", ms=3, label=label)
    ax.fill_between(xs, lo, hi, alpha=0.15)
    ax.set_ylabel("change of P(own), pts")


def write_steering_sweep_plots(rows: Sequence[dict] | Sequence[SweepRow], out: Path) -> list[Path]:
    """Effect on P(own) and agreement with gold vs coefficient (one line per layer), per judge."""
    rows = codec.sweep_rows(rows)
    judges = sorted({r.judge for r in rows})
    fig, axes = subplots(2, len(judges), figsize=(5 * len(judges), 6.2), squeeze=False)
    fig.suptitle(
        "Direction steering: change of P(own wins) and agreement with gold vs coefficient (x norm)", fontsize=10
    )
    for col, judge in enumerate(judges):
        top, bottom = axes[0][col], axes[1][col]
        mine = [r for r in rows if r.judge == judge]
        for layer in sorted({r.point["layer"] for r in mine}):
            at_layer = [r for r in mine if r.point["layer"] == layer]
            adds = sorted((r for r in at_layer if r.point["mode"] == "add"), key=lambda r: r.point["coefficient"])
            line = None
            if adds:
                xs = [r.point["coefficient"] for r in adds]
                (line,) = top.plot(xs, [100 * r.effect for r in adds], marker="o", ms=3, label=f"layer {layer}")
                top.fill_between(
                    xs,
                    [100 * r.effect_lo for r in adds],
                    [100 * r.effect_hi for r in adds],
                    alpha=0.15,
                    color=line.get_color(),
                )
                bottom.plot(
                    xs,
                    [100 * r.gold_agreement for r in adds],
                    marker="o",
                    ms=3,
                    color=line.get_color(),
                    label=f"layer {layer}",
                )
            for r in at_layer:
                if r.point["mode"] == "project_out":
                    color = line.get_color() if line is not None else None
                    top.axhline(100 * r.effect, ls="--", lw=0.8, color=color, label=f"layer {layer} removal")
        top.axhline(0, color="k", lw=0.6)
        top.set_title(judge, fontsize=9)
        top.set_ylabel("change of P(own), pts")
        top.legend(fontsize=6)
        bottom.set_xlabel("coefficient (x direction norm; < 0 = reversal)")
        bottom.set_ylabel("agreement with gold, %")
    fig.tight_layout()
    return list(save_figure(fig, out / "effect_vs_coefficient").values())
