"""The causal-test section of the report: paired effects per judge and target with intervals, and verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from interp.formatting import p_value, pct, pts, pts_interval
from interp.report.figures import png_data_uri, save_figure, subplots
from interp.report.html import table_html
from interp.storage import atomic_write_text
from interp.templating import render

SECTION_TITLE = "Causal test: attention interventions with controls"

_INTERVENTION_SECTION = (
    "{{ tests }}<p class='note'>The decision: a two-sided sign-flip permutation test of the per-item contrast (the judge's "
    "change of P(own) minus the control judge's under the same mask), and for chosen heads the rank among random head sets of "
    "the same size; p = the larger of the two; several judges Holm-corrected. Measured on organisms, two null judges "
    "of different training seeds are told apart in half of the null replicates: against one control judge, a 'causal' row "
    "says the two judges differ, not yet that the judge prefers itself. See docs/causal-test.md.</p>"
    "<p><img src='{{ image }}' alt='intervention effects'></p>{{ table }}{% for v in verdicts %}<p><b>{{ v }}</b></p>{% endfor %}"
    "{% for s in splits %}<p>Tested on: {{ s }}.</p>{% endfor %}"
    "<p class='note'>Responses reused: {{ reused.responses }} (generated: {{ reused.responses_generated }}); gold verdicts reused: "
    "{{ reused.gold_verdicts }} from {{ reused.gold_judges | join(', ') }} (re-run: {{ reused.gold_judges_rerun }}). Only judging was re-run.</p>"
)


def effect_figure(results: Sequence[dict]):
    """Paired change of P(own wins) per judge and target, with bootstrap intervals."""
    rows = [(judge, name, effect) for result in results for judge, r in result["judges"].items() for name, effect in r["effects"].items()]
    fig, ax = subplots(figsize=(6.5, 0.6 + 0.45 * len(rows)))
    for y, (judge, name, effect) in enumerate(rows):
        lo, hi = effect["ci"]
        color = "tab:red" if name in ("self", "target") else "tab:gray"
        ax.errorbar(100 * effect["mean"], y, xerr=[[100 * (effect["mean"] - lo)], [100 * (hi - effect["mean"])]], fmt="o", color=color, capsize=3)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)), [f"{judge}: {name}" for judge, name, _ in rows], fontsize=8)
    ax.set_xlabel("change of P(own response wins), points (95% bootstrap CI)")
    ax.invert_yaxis()
    fig.tight_layout()
    return fig


def test_rows(results: Sequence[dict]) -> list[list[str]]:
    """One row per tested judge: the decision with its numbers (results written before the test have none)."""
    rows = []
    for result in results:
        for judge, r in result["judges"].items():
            if "p_value" not in r:
                continue
            test, mass, within = r["test"], r.get("masked_mass") or {}, r.get("within_judge") or {}
            share = r.get("share_removed")
            rows.append(
                [
                    judge,
                    pts_interval(within.get("effect"), within.get("ci")) + (f" (p {p_value(within['p_value'])})" if within.get("p_value") is not None else ""),
                    ", ".join(test.get("controls") or []) or "none",
                    p_value(r["p_value"]),
                    p_value(r.get("p_holm")),
                    f"{r.get('test_alpha', r.get('alpha')):g}",
                    str(r["n_test"]),
                    "n/a" if share is None else f"{pct(share['estimate'])} [{pct(share['low'])}, {pct(share['high'])}]",
                    pct(mass.get("share_to_other_answer")),
                    {True: "yes", False: "no", None: f"no verdict: {r.get('reason')}"}[r["causal"]],
                ]
            )
    return rows


def intervention_section(results: Sequence[dict], figures: Path) -> Path:
    """Write figures/intervention_section.html (title line + body) and the effect plot as PNG and PDF."""
    paths = save_figure(effect_figure(results), figures / "intervention_effects")
    rows, verdicts, splits = [], [], []
    for result in results:
        for judge, r in result["judges"].items():
            before = r["before"]
            for name, after in r["variants"].items():
                effect = r["effects"][name]
                rows.append(
                    [
                        judge,
                        name,
                        json.dumps({k: v for k, v in (after["attention"] or {}).items() if v is not None and k not in ("seed", "emphasis")}),
                        f"{pts(before['dbg_hard'])} -> {pts(after['dbg_hard'])}",
                        f"{before['mean_p_own']:.3f} -> {after['mean_p_own']:.3f}",
                        pts_interval(effect["mean"], effect["ci"], 2),
                        f"{pct(before['gold_agreement'])} -> {pct(after['gold_agreement'])}",
                    ]
                )
            verdicts.append(r["verdict"])
        reused = result["reused"]
        splits.append(f"{result.get('split', 'all items')}, {result['n_items']} items")
    table = table_html(["judge", "target", "spec", "DBG hard (pts)", "mean P(own)", "paired change of P(own), pts (95% CI)", "agreement with gold"], rows)
    header = [
        "judge",
        "changes this judge's verdicts: change of P(own), pts (95% CI, sign-flip p)",
        "control judges",
        "self-preference: Crawford-Howell p (raw)",
        "p (Holm; decides)",
        "alpha",
        "test items",
        "share of the self-preference gap removed (95% CI)",
        "masked mass moved to the other answer",
        "causal effect on self-preference",
    ]
    tests = test_rows(results)
    body = render(_INTERVENTION_SECTION, tests=table_html(header, tests) if tests else "", image=png_data_uri(paths["png"]), table=table, verdicts=verdicts, splits=splits, reused=reused)
    path = figures / "intervention_section.html"
    atomic_write_text(path, SECTION_TITLE + "\n" + body)
    return path
