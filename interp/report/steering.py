"""The steering section of the report: the steering table, the effects figure, probe accuracy of the direction, and the
split."""

from __future__ import annotations

import math
from pathlib import Path

from interp.formatting import pct, pts_interval
from interp.report.figures import png_data_uri, save_figure, subplots
from interp.report.html import table_html
from interp.results.causal import PairedEffect
from interp.results.studies import DirectionProbe, SteeringRow, SteeringTable
from interp.storage import atomic_write_text
from interp.templating import render

SECTION_TITLE = "Steering: emphasis and a self-recognition direction"


def effect_figure(rows: list[tuple[str, str, PairedEffect]]):
    """Paired change of P(own wins) per judge and steering variant (`rows`: judge, variant, its effect), with
    bootstrap intervals."""
    fig, ax = subplots(figsize=(6.5, 0.6 + 0.45 * len(rows)))
    for y, (_judge, name, effect) in enumerate(rows):
        lo, hi = effect.ci
        color = "tab:red" if name in ("self", "target") else "tab:gray"
        ax.errorbar(
            100 * effect.mean,
            y,
            xerr=[[100 * (effect.mean - lo)], [100 * (hi - effect.mean)]],
            fmt="o",
            color=color,
            capsize=3,
        )
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)), [f"{judge}: {name}" for judge, name, _ in rows], fontsize=8)
    ax.set_xlabel("change of P(own response wins), points (95% bootstrap CI)")
    ax.invert_yaxis()
    fig.tight_layout()
    return fig


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


_POSITION_TEXT = {
    "spans": "mean residual after the block over the judge's own response span minus the same over the other "
    "response span",
    "final": "residual after the block at the final position of the prompts with the judge's own response minus the "
    "same "
    "with the own response replaced by the item's reference answer",
}


_STEERING_SECTION = (
    "{% if image %}<p><img src='{{ image }}' alt='steering effects'></p>{% endif %}{{ table }}"
    "<p class='note'>DBG and agreement with gold use the run's fixed gold verdicts; the paired change of "
    "P(own response wins) "
    "is per instruction against no intervention, with a bootstrap interval over instructions. A steering "
    "that just flips verdicts "
    "shows up as lower agreement with gold.</p>"
    "<h3>Self-recognition direction: probe accuracy</h3>{{ probe_table }}"
    "<p class='note'>Direction ({{ s.position }}): {{ position_text }}, difference of means over the "
    "training items. An example is classified as own when its projection on the direction exceeds the "
    "midpoint of the two "
    "training class means; paired accuracy: share of prompts where the own example projects higher than "
    "the other one.</p>"
    "{% for p in splits %}<p class='note'>{{ p.judge }}: the direction was computed from the {{ p.train }} only "
    "({{ p.train_ids }}); held out: {{ p.heldout }} ({{ p.heldout_ids }}). "
    "Seeded split: seed {{ s.seed }}, train fraction {{ train_fraction }}.</p>{% endfor %}"
    "<p class='note'>Reversal coefficient {{ coefficient }} x the direction's norm; emphasis alpha {{ "
    "emphasis_alpha }}; "
    "edits at {{ s.positions }} positions. Responses reused: {{ reused.responses }} (generated: {{ "
    "reused.responses_generated }}); "
    "gold verdicts reused: {{ reused.gold_verdicts }}. Only judging was re-run.</p>"
)


def steering_section(table: SteeringTable, figures: Path) -> Path:
    """Write figures/steering_section.html: title line, then the table, probe accuracy and the split."""
    figures = Path(figures)
    s = table.settings
    body = render(
        _STEERING_SECTION,
        image=_effects_image(table, figures),
        table=table_html(_HEADER, [_steering_row(r) for r in table.rows]),
        probe_table=table_html(_PROBE_HEADER, [_probe_row(judge, p) for judge, p in table.probe.items()]),
        position_text=_POSITION_TEXT[s.position],
        splits=[_split(judge, p) for judge, p in table.probe.items()],
        s=s,
        coefficient=f"{s.coefficient:+g}",
        emphasis_alpha=f"{s.emphasis_alpha:g}",
        train_fraction=f"{s.train_fraction:g}",
        reused=table.reused,
    )
    path = figures / "steering_section.html"
    atomic_write_text(path, SECTION_TITLE + "\n" + body)
    return path


_HEADER = [
    "judge",
    "intervention",
    "what",
    "DBG hard, pts (95% CI)",
    "mean P(own)",
    "paired change of P(own), pts (95% CI)",
    "agreement with gold (95% CI)",
]
_PROBE_HEADER = [
    "judge",
    "layer",
    "position",
    "norm",
    "probe accuracy, train",
    "probe accuracy, held-out",
    "paired accuracy, train / held-out",
]


def _effects_image(table: SteeringTable, figures: Path) -> str | None:
    """The effects figure of the interventions (none: no row but the baseline), as a data URI."""
    rows = [(r.judge, r.intervention, r.effect) for r in table.rows if r.intervention != "none"]
    if not rows:
        return None
    return png_data_uri(save_figure(effect_figure(rows), figures / "steering_effects")["png"])


def _steering_row(r: SteeringRow) -> list:
    """One row of the steering table: a judge under one intervention."""
    lo, hi = r.gold_agreement_ci
    return [
        r.judge,
        r.intervention,
        r.description,
        pts_interval(r.dbg_hard, r.dbg_ci),
        f"{r.mean_p_own:.3f}",
        pts_interval(r.effect.mean, r.effect.ci),
        f"{pct(r.gold_agreement)} [{pct(lo)}, {pct(hi)}]",
    ]


def _probe_row(judge: str, p: DirectionProbe) -> list:
    """One row of the probe table: the judge's direction and its accuracy on the training and held-out items."""
    accuracy, n = p.accuracy, p.n
    return [
        judge,
        p.layer,
        p.position,
        f"{p.norm:.3g}",
        f"{pct(accuracy.train)} (n = {_count(n.train_examples, 'example')}, {_count(n.train_items, 'item')})",
        f"{pct(accuracy.heldout)} (n = {_count(n.heldout_examples, 'example')}, {_count(n.heldout_items, 'item')})"
        if math.isfinite(accuracy.heldout)
        else "n/a",
        f"{pct(accuracy.train_paired)} / {pct(accuracy.heldout_paired)}",
    ]


def _split(judge: str, p: DirectionProbe) -> dict:
    """The judge's training and held-out items, for the note under the probe table."""
    return {
        "judge": judge,
        "train": _count(p.n.train_items, "training item"),
        "train_ids": ", ".join(p.train_ids),
        "heldout": _count(p.n.heldout_items, "item"),
        "heldout_ids": ", ".join(p.heldout_ids),
    }
