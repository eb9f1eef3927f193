"""The causal-test section of the report: per tested judge, the test that decided it (its name, H0, k control
judges, df) in words generated from the result, a figure of the judge's change of P(own) against each control
judge's with Crawford-Howell's acceptance interval, the decision table, and the effects per variant."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

from interp.formatting import fixed, p_value, pct, pts, pts_interval, share_interval
from interp.metrics.judge_level import crawford_howell_interval
from interp.report.figures import png_data_uri, save_figure, subplots
from interp.report.html import table_html
from interp.results import codec
from interp.results.causal import CausalResult, JudgeTest, MaskedMass
from interp.storage import atomic_write_text
from interp.templating import render

SECTION_TITLE = "Causal test: interventions against control judges"

_INTERVENTION_SECTION = (
    "{% for d in decisions %}<p class='note'>{{ d }}</p>{% endfor %}"
    "<p><img src='{{ image }}' alt='each tested judge&#39;s change of P(own) against each control judge&#39;s'></p>"
    "<p class='note'>{{ caption }}</p>"
    "{{ tests }}"
    "{% for family in families %}<details><summary>{{ family.judge }}: control judges, {{ family.name }} "
    "(k = {{ family.k }})</summary>"
    "<p>{{ family.members | join(', ') }}</p></details>{% endfor %}"
    "{% for v in verdicts %}<p><b>{{ v }}</b></p>{% endfor %}"
    "<details><summary>Effects per judge and masked span</summary>{{ table }}</details>"
    "{% for s in splits %}<p>Tested on: {{ s }}.</p>{% endfor %}"
    "<p class='note'>Responses reused: {{ reused.responses }} (generated: {{ reused.responses_generated "
    "}}); gold verdicts reused: "
    "{{ reused.gold_verdicts }} from {{ reused.gold_judges | join(', ') }} (re-run: {{ "
    "reused.gold_judges_rerun }}). Only judging was re-run.</p>"
)

CAPTION = (
    "One row per tested judge: its mean change of P(own) under the intervention (red, with its 95% bootstrap interval "
    "over items), each control judge's mean change under the same intervention on the same answer (grey, a dot per "
    "judge), and the interval the tested judge's change would have to leave to be called causal at the test's level "
    "(Crawford-Howell, shaded). The spread of the control judges decides, not the item noise."
)


def control_family(names: Sequence[str]) -> str:
    """A short name for a set of control judges: what their names share ("smollm2-135m-null" for its seed
    replicates), else "named control judges"."""
    if not names:
        return "none"
    stems = [Path(name).name for name in names]
    common = os.path.commonprefix(stems).rstrip("-_.0123456789 ") if len(stems) > 1 else stems[0]
    return common if len(common) >= 3 else "named control judges"


def decision_text(judge: str, r: JudgeTest, n_tested: int) -> str:
    """What decided this judge's row, in words generated from the test the result records."""
    t = r.test
    if t is None:
        return (
            f"{judge}: the result records no test; it was written before the causal test was recorded, and "
            "decides nothing."
        )
    if t.design != "between-judge":
        return (
            f"{judge}: decided by an older test ({t.design}); this row is not a Crawford-Howell decision. Run "
            "`interp intervene` again for one."
        )
    if r.p_value is None:
        return (
            f"{judge}: no between-judge test ({r.reason or t.reason}). With k = {t.n_controls} control judges the "
            f"{t.name} test has df = {max(t.n_controls - 1, 0)} and needs k >= 3; the within-judge effect "
            "is descriptive only."
        )
    family = control_family(t.controls)
    holm = f"; Holm over {n_tested} tested judges gives p {p_value(r.p_holm)}" if n_tested > 1 else ""
    rank = (
        " Heads were chosen from data, so the rank among random head sets of the same size joins it: p = "
        f"max(p_CH, p_rank {p_value(t.p_rank)})."
        if t.p_rank is not None
        else ""
    )
    stat = f"t = {fixed(t.t)}, " if t.t is not None else ""
    sided = "one-sided (removal: the judge's P(own) falls more)" if t.alternative == "less" else "two-sided"
    return (
        f"{judge}: {t.name} test of the judge's mean change of P(own) ({pts(t.x)} pts) against k = "
        f"{t.n_controls} control "
        f"judges ({family}: mean {pts(t.control_mean)} pts, SD "
        f"{fixed(100 * t.control_sd, 1) if t.control_sd is not None else 'n/a'} pts). "
        f"H0: {t.h0}. {stat}df = {t.df}, {sided} p {p_value(t.p_value)}.{rank} Decision: causal iff p "
        "(Holm) <= alpha "
        f"{r.test_alpha:g}{holm} -> {'causal' if r.causal else 'not causal'}."
    )


def control_figure(results: Sequence[CausalResult]):
    """Per tested judge: its change of P(own) (red, 95% CI), each control judge's (grey dots) and
    Crawford-Howell's acceptance interval around the controls (shaded), in points."""
    rows = [(judge, r) for result in results for judge, r in result.judges.items()]
    fig, ax = subplots(figsize=(6.5, 0.9 + 0.55 * max(len(rows), 1)))
    drawn_band = False
    for y, (_judge, r) in enumerate(rows):
        controls = r.test.control_effects if r.test is not None else []
        interval = crawford_howell_interval(controls, r.test_alpha) if controls else None
        if interval is not None:
            label = f"not rejected at alpha {r.test_alpha:g} (Crawford-Howell)" if not drawn_band else None
            ax.fill_betweenx(
                [y - 0.3, y + 0.3],
                100 * interval[0],
                100 * interval[1],
                color="tab:gray",
                alpha=0.18,
                lw=0,
                label=label,
            )
            drawn_band = True
        ax.scatter(
            [100 * c for c in controls],
            [y] * len(controls),
            color="tab:gray",
            s=18,
            zorder=3,
            label="control judge" if y == 0 else None,
        )
        effect = r.self_effect
        if effect is not None and effect.mean is not None:
            lo, hi = effect.ci if effect.ci and None not in effect.ci else (effect.mean, effect.mean)
            err = [[100 * (effect.mean - lo)], [100 * (hi - effect.mean)]]
            ax.errorbar(
                100 * effect.mean,
                y,
                xerr=err,
                fmt="o",
                color="tab:red",
                capsize=3,
                zorder=4,
                label="tested judge" if y == 0 else None,
            )
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)), [f"{judge} (p {p_value(r.p_holm)})" for judge, r in rows], fontsize=8)
    ax.set_xlabel("change of P(own response wins) under the intervention, points")
    if rows:
        ax.legend(fontsize=7, loc="best")
    ax.invert_yaxis()
    fig.tight_layout()
    return fig


TEST_HEADER = [
    "judge",
    "test",
    "control judges",
    "changes this judge's verdicts: change of P(own), pts (95% CI, sign-flip p)",
    "p (raw)",
    "p (Holm; decides)",
    "alpha",
    "test items",
    "share of the self-preference gap removed (95% CI)",
    "masked mass moved to the other answer",
    "specific to the own answer (margin-adjusted, one-sided p)",
    "causal effect on self-preference",
]


def test_rows(results: Sequence[CausalResult]) -> list[list[str]]:
    """One row per tested judge: the test that decided it, its control family (name and k), and the decision."""
    rows = []
    for result in results:
        for judge, r in result.judges.items():
            t, within, mass = r.test, r.within_judge, r.masked_mass or MaskedMass()
            test = (
                "none recorded" if t is None else (f"{t.name}, df {t.df}" if t.design == "between-judge" else t.design)
            )
            change = (
                "n/a"
                if within is None
                else pts_interval(within.effect, within.ci)
                + (f" (p {p_value(within.p_value)})" if within.p_value is not None else "")
            )
            controls = r.control_names
            rows.append(
                [
                    judge,
                    test,
                    f"{control_family(controls)} (k = {len(controls)})" if controls else "none",
                    change,
                    p_value(r.p_value),
                    p_value(r.p_holm),
                    f"{r.test_alpha:g}",
                    "n/a" if r.n_test is None else str(r.n_test),
                    "n/a"
                    if r.share_removed is None
                    else share_interval(r.share_removed.estimate, (r.share_removed.low, r.share_removed.high)),
                    pct(mass.share_to_other_answer),
                    _specific(r.specificity),
                    {True: "yes", False: "no", None: f"no verdict: {r.reason}"}[r.causal],
                ]
            )
    return rows


def _specific(check) -> str:
    """The specificity check's cell: passed or not, its p, and where it could not be computed, why."""
    if check is None:
        return "not checked (a result from before the check)"
    if check.p_value is None:
        return f"no: {check.reason}"
    return f"{'yes' if check.passed else 'no'} (p {p_value(check.p_value)})"


def _variant_rows(results: Sequence[CausalResult]) -> list[list[str]]:
    rows = []
    for result in results:
        for judge, r in result.judges.items():
            for name, after in r.variants.items():
                effect = r.effects.get(name)
                spec = {
                    k: v
                    for k, v in (after.get("attention") or {}).items()
                    if v is not None and k not in ("seed", "emphasis")
                }
                rows.append(
                    [
                        judge,
                        name,
                        json.dumps(spec),
                        f"{pts(r.before.dbg_hard)} -> {pts(after.get('dbg_hard'))}",
                        f"{fixed(r.before.mean_p_own, 3)} -> {fixed(after.get('mean_p_own'), 3)}",
                        "n/a" if effect is None else pts_interval(effect.mean, effect.ci, 2),
                        f"{pct(r.before.gold_agreement)} -> {pct(after.get('gold_agreement'))}",
                    ]
                )
    return rows


def intervention_section(results: Sequence[CausalResult | dict], figures: Path) -> Path:
    """Write figures/intervention_section.html (title line + body) and the figure as PNG and PDF."""
    results = [codec.parse(CausalResult, result, "causal result") for result in results]
    paths = save_figure(control_figure(results), figures / "intervention_effects")
    decisions, verdicts, splits, families = [], [], [], []
    for result in results:
        tested = sum(r.p_value is not None for r in result.judges.values())
        for judge, r in result.judges.items():
            decisions.append(decision_text(judge, r, tested))
            verdicts.append(r.verdict)
            if r.control_names:
                families.append(
                    {
                        "judge": judge,
                        "name": control_family(r.control_names),
                        "k": len(r.control_names),
                        "members": r.control_names,
                    }
                )
        splits.append(f"{result.split}, {result.n_items} items")
    header = [
        "judge",
        "target",
        "spec",
        "DBG hard (pts)",
        "mean P(own)",
        "paired change of P(own), pts (95% CI)",
        "agreement with gold",
    ]
    tests = test_rows(results)
    body = render(
        _INTERVENTION_SECTION,
        decisions=decisions,
        image=png_data_uri(paths["png"]),
        caption=CAPTION,
        tests=table_html(TEST_HEADER, tests) if tests else "",
        families=families,
        verdicts=verdicts,
        table=table_html(header, _variant_rows(results)),
        splits=splits,
        reused=results[-1].reused if results else {},
    )
    path = figures / "intervention_section.html"
    atomic_write_text(path, SECTION_TITLE + "\n" + body)
    return path
