"""The judge-level test of one change to a judge's verdicts, shared by the causal test (`interp intervene`) and the
restyle test: Crawford-Howell of the judge's change of P(own) against its control judges' changes
(`interp.metrics.judge_level`), the share of its self-preference gap that the change removes, the fields of a
result record that hold them, and Holm over the judges of one command.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from interp.formatting import p_value
from interp.metrics.causal_test import holm, smallest_flip_p, too_few_items
from interp.metrics.judge_level import between_judge_test, share_removed
from interp.metrics.share import share_level
from interp.metrics.specificity import DEFAULT_CHECK, check_specificity_choice, specificity_test


@dataclass(frozen=True)
class JudgeTestOptions:
    """The settings of one judge-level test: its level, the sign flips of the within-judge test, the bootstrap
    draws of the gap's share removed, the seed of both, and the between-judge test's alternative ("less": one-sided
    in the removal direction, the judge's P(own) falling more than its controls', what `interp intervene` tests;
    "two-sided": the restyle test's)."""

    test_alpha: float
    n_flips: int
    n_boot: int
    seed: int
    alternative: str = "two-sided"


def judge_level_test(
    before: np.ndarray,
    after: np.ndarray,
    gold_before: np.ndarray,
    gold_after: np.ndarray,
    control_before: np.ndarray,
    control_after: np.ndarray,
    options: JudgeTestOptions,
):
    """The judge-level test of one change to a judge's verdicts (an intervention on the model, or on the answers
    it reads), from per-item P(own) before and after for the judge and each control judge (`control_*`:
    [control, item], "own" always the tested judge's answer): Crawford-Howell of the judge's change against the
    controls' (`between_judge_test`), and the share of its DBG gap over the controls that the change removes
    (`share_removed`, per-item DBG = P(own) - gold's P(own), gold before and after; None without controls)."""
    test_alpha, n_boot, seed = options.test_alpha, options.n_boot, options.seed
    test = between_judge_test(
        after - before,
        control_after - control_before,
        test_alpha=test_alpha,
        n_flips=options.n_flips,
        n_boot=n_boot,
        seed=seed,
        alternative=options.alternative,
    )
    gap = None
    if len(control_before):
        gap = share_removed(
            before - gold_before,
            after - gold_after,
            control_before - gold_before,
            control_after - gold_after,
            test_alpha=test_alpha,
            n_boot=n_boot,
            seed=seed,
            level=share_level(test_alpha),
        )
    return test, gap


def judge_level_fields(judge: str, test, gap, controls: Sequence[str], n_flips: int, n_items: int) -> dict:
    """The judge-level test's fields of a result.json record (`causal`, `p_value`, `test`, `within_judge`,
    `share_removed`, the gaps, the verdict, ...)."""
    out = test.to_dict()
    out["test"] |= {"controls": list(controls)}
    notes = (
        ["within the judge: " + too_few_items(n_items, n_flips, out["test_alpha"])]
        if smallest_flip_p(n_items, n_flips) > out["test_alpha"]
        else []
    )
    control_mean = float(np.mean(test.control_effects)) if controls else None
    return out | {
        "p_holm": test.p_value,  # one judge; Holm over several replaces it (`holm_judges`)
        "n_test": n_items,
        "notes": notes,
        "verdict": "; ".join([test.verdict(judge), *notes]),
        "effect": {
            "mean": test.within.effect - (control_mean or 0.0),
            "judge": test.within.effect,
            "controls_mean": control_mean,
        },
        "gap_before": gap.gap_before.to_dict() if gap else None,
        "gap_after": gap.gap_after.to_dict() if gap else None,
        "dbg_test_before": gap.test_before.to_dict() if gap else None,
        "share_removed": gap.share_removed.to_dict() if gap and gap.share_removed else None,
        "share_removed_reason": None if gap and gap.share_removed else (gap.reason if gap else "no control judge"),
    }


def holm_judges(result: dict, names: Sequence[str]) -> None:
    """Holm over the judges of one command that have a between-judge test (one judge: p_holm = p_value): the
    decision is p_holm <= test_alpha, and each record keeps its raw p beside the adjusted one."""
    tested = [judge for judge in names if result["judges"][judge]["p_value"] is not None]
    if not tested:
        return
    adjusted = holm([result["judges"][judge]["p_value"] for judge in tested])
    for judge, p in zip(tested, adjusted, strict=False):
        record = result["judges"][judge]
        record["p_holm"], record["causal_unadjusted"] = p, record["causal"]
        record["causal"] = bool(p <= record["test_alpha"])
        if len(tested) > 1:
            record["verdict"] += (
                f"; Holm over {len(tested)} judges: p {p_value(record['p_value'])}, adjusted {p_value(p)} "
                f"-> {'causal' if record['causal'] else 'not causal'}"
            )
    result["multiple_comparisons"] = f"Holm over {len(tested)} judges" if len(tested) > 1 else "none (one judge)"


def own_answer_specificity(judge: tuple, controls: dict, items: Sequence[str], mirror, options: dict) -> dict:
    """The specificity check of one tested judge (`interp.metrics.specificity.specificity_test`) as its result
    record: `judge` its per-item P(own) (before, after), `controls` name -> (before, after) under its own variant,
    `mirror` its unjustified-flipped and legitimate-kept shares (recorded beside the check, descriptive),
    `options` the test's level, bootstrap draws and seed, and `method` the check (a key of
    `interp.metrics.specificity.CHECKS`; default the margin-adjusted test, the only one)."""
    check_specificity_choice(options.get("method", DEFAULT_CHECK))
    check = specificity_test(
        judge[0],
        judge[1],
        {c: before for c, (before, _) in controls.items()},
        {c: after for c, (_, after) in controls.items()},
        items=list(items),
        test_alpha=options["test_alpha"],
        n_boot=options["n_boot"],
        seed=options["seed"],
    )
    shares = mirror.model_dump() if hasattr(mirror, "model_dump") else dict(mirror)
    kept = ("unjustified", "unjustified_flipped_share", "legitimate", "legitimate_kept_share")
    return check.to_dict() | {"mirror": {key: shares.get(key) for key in kept}}


def require_specificity(result: dict, names: Sequence[str]) -> None:
    """Specificity is a required condition of a self-preference verdict: a judge called causal by its (Holm-adjusted)
    between-judge test whose specificity check did not pass (a flattening, or too few pairs to tell) is not causal,
    and its reason and verdict say why. A judge without a between-judge test keeps `causal` None."""
    for judge in names:
        record = result["judges"][judge]
        check = record.get("specificity")
        if check is None or record["causal"] is not True or check["passed"]:
            continue
        record["causal"] = False
        record["reason"] = f"specificity: {check['reason']}"
        record["verdict"] += f"; not causal: {check['reason']}"
