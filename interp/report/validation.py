"""The validation section of a run report: "known truth vs the toolkit's verdict" for the organisms."""

from __future__ import annotations

from pathlib import Path

from interp.formatting import pts_interval
from interp.report.html import table_html
from interp.results.studies import ValidationResult
from interp.storage import atomic_write_text
from interp.templating import render

SECTION_TITLE = "Validation on organisms with a known answer (test split)"

_SECTION = (
    "<p>Judges whose answer is known: a null organism (trained on gold verdicts) and a planted one (trained to "
    "prefer SmolLM2's answers where gold prefers the other). Heads and the steering direction were chosen on the "
    "selection split ({{ n_selection }} items); every figure is measured on the test split ({{ n_test }} items), which "
    "training never saw. Agrees: yes / no, or n/a where the truth is not known in advance.</p>{{ truth }}"
    "<h3>Effects on P(own) (test split, points, 95% CI)</h3>{{ effects }}"
)


def _agrees(value: bool | None) -> str:
    return "n/a" if value is None else ("yes" if value else "NO")


def effect_rows(result: ValidationResult) -> list[list[str]]:
    """One row per organism, test and variant: the change of P(own) with its interval."""
    rows = []
    for judge, record in result.organisms.items():
        groups = {
            "causal test (own answer masked at every layer)": record.causal_test.effects,
            "localization (top heads)": record.localization.effects if record.localization else {},
            "positive control": {"both": record.positive_control.effect},
            "layer-band sweep": record.sweep.effects if record.sweep else {},
            "steering levers": record.steering.effects if record.steering else {},
        }
        for group, effects in groups.items():
            rows += [[judge, group, name, pts_interval(effect.mean, effect.ci)] for name, effect in effects.items()]
    return rows


def validation_section(result: ValidationResult, figures: Path) -> Path:
    """Write figures/validation_section.html (title line + body)."""
    truth = table_html(
        ["check", "known truth", "the toolkit's verdict", "agrees"],
        [[r.claim, r.known_truth, r.toolkit, _agrees(r.agrees)] for r in result.truth_table],
    )
    effects = table_html(["judge", "test", "variant", "change of P(own)"], effect_rows(result))
    body = render(
        _SECTION,
        truth=truth,
        effects=effects,
        n_selection=len(result.splits.selection),
        n_test=len(result.splits.test),
    )
    path = Path(figures) / "validation_section.html"
    atomic_write_text(path, SECTION_TITLE + "\n" + body)
    return path
