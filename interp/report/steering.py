"""The steering section of the report: the steering table, probe accuracy of the direction, and the split."""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Sequence

from interp.report.figures import png_data_uri, save_figure
from interp.report.html import table_html
from interp.report.interventions import effect_figure
from interp.storage import atomic_write_text

SECTION_TITLE = "Steering: emphasis and a self-recognition direction"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


_POSITION_TEXT = {
    "spans": "mean residual after the block over the judge's own response span minus the same over the other response span",
    "final": "residual after the block at the final position of the prompts with the judge's own response minus the same "
    "with the own response replaced by the item's reference answer",
}


def pct0(x: float | None) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{100 * x:.0f}%"


def _pts(x: float) -> str:
    return "nan" if x is None or not math.isfinite(x) else f"{100 * x:+.1f}"


def interval_text(mean: float, ci: Sequence[float]) -> str:
    return f"{_pts(mean)} [{_pts(ci[0])}, {_pts(ci[1])}]"


def steering_section(table: dict, figures: Path) -> Path:
    """Write figures/steering_section.html: title line, then the table, probe accuracy and the split."""
    figures = Path(figures)
    results = [{"judges": {}}]
    for r in table["rows"]:
        if r["intervention"] != "none":
            results[0]["judges"].setdefault(r["judge"], {"effects": {}})["effects"][r["intervention"]] = r["effect"]
    image = ""
    if results[0]["judges"]:
        paths = save_figure(effect_figure(results), figures / "steering_effects")
        image = f"<p><img src='{png_data_uri(paths['png'])}' alt='steering effects'></p>"
    rows = [
        [
            r["judge"],
            r["intervention"],
            r["description"],
            interval_text(r["dbg_hard"], r["dbg_ci"]),
            f"{r['mean_p_own']:.3f}",
            interval_text(r["effect"]["mean"], r["effect"]["ci"]),
            f"{100 * r['gold_agreement']:.0f}% [{100 * r['gold_agreement_ci'][0]:.0f}, {100 * r['gold_agreement_ci'][1]:.0f}]",
        ]
        for r in table["rows"]
    ]
    header = ["judge", "intervention", "what", "DBG hard, pts (95% CI)", "mean P(own)", "paired change of P(own), pts (95% CI)", "agreement with gold (95% CI)"]
    probe_rows = [
        [
            judge,
            p["layer"],
            p["position"],
            f"{p['norm']:.3g}",
            f"{100 * p['accuracy']['train']:.0f}% (n = {_count(p['n']['train_examples'], 'example')}, {_count(p['n']['train_items'], 'item')})",
            f"{100 * p['accuracy']['heldout']:.0f}% (n = {_count(p['n']['heldout_examples'], 'example')}, {_count(p['n']['heldout_items'], 'item')})"
            if math.isfinite(p["accuracy"]["heldout"])
            else "n/a",
            f"{pct0(p['accuracy'].get('train_paired'))} / {pct0(p['accuracy'].get('heldout_paired'))}",
        ]
        for judge, p in table["probe"].items()
    ]
    s = table["settings"]
    splits = "".join(
        f"<p class='note'>{html.escape(judge)}: the direction was computed from the {_count(p['n']['train_items'], 'training item')} only "
        f"({html.escape(', '.join(p['train_ids']))}); held out: {_count(p['n']['heldout_items'], 'item')} ({html.escape(', '.join(p['heldout_ids']))}). "
        f"Seeded split: seed {s['seed']}, train fraction {s['train_fraction']:g}.</p>"
        for judge, p in table["probe"].items()
    )
    reused = table["reused"]
    body = (
        image
        + table_html(header, rows)
        + "<p class='note'>DBG and agreement with gold use the run's fixed gold verdicts; the paired change of P(own response wins) "
        "is per instruction against no intervention, with a bootstrap interval over instructions. A steering that just flips verdicts "
        "shows up as lower agreement with gold.</p>"
        + "<h3>Self-recognition direction: probe accuracy</h3>"
        + table_html(["judge", "layer", "position", "norm", "probe accuracy, train", "probe accuracy, held-out", "paired accuracy, train / held-out"], probe_rows)
        + f"<p class='note'>Direction ({html.escape(s['position'])}): {_POSITION_TEXT[s['position']]}, difference of means over the "
        "training items. An example is classified as own when its projection on the direction exceeds the midpoint of the two "
        "training class means; paired accuracy: share of prompts where the own example projects higher than the other one.</p>"
        + splits
        + f"<p class='note'>Reversal coefficient {s['coefficient']:+g} x the direction's norm; emphasis alpha {s['emphasis_alpha']:g}; "
        f"edits at {s['positions']} positions. Responses reused: {reused['responses']} (generated: {reused['responses_generated']}); "
        f"gold verdicts reused: {reused['gold_verdicts']}. Only judging was re-run.</p>"
    )
    path = figures / "steering_section.html"
    atomic_write_text(path, SECTION_TITLE + "\n" + body)
    return path
