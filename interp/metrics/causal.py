"""Statistics of the causal test (DESIGN.md section 4): behaviour under a variant, paired effects, the verdict.

Inputs are per-instruction arrays: `p_own[i]` = the judge's P(its own response wins item i), mean over both
orders; `gold_own[i]` = the gold P(the same response wins). Pure functions.
"""

from __future__ import annotations

import numpy as np

from interp.metrics.dbg import dbg, hard_win_rate
from interp.metrics.stats import bootstrap_ci


def agreement_per_item(p_own: np.ndarray, gold_own: np.ndarray) -> np.ndarray:
    """1 where the judge's hard verdict picks the gold winner, 0 where it picks the other, 0.5 if either is a tie."""
    judge_pick, gold_pick = np.sign(p_own - 0.5), np.sign(gold_own - 0.5)
    return np.where(judge_pick == gold_pick, 1.0, np.where((judge_pick == 0) | (gold_pick == 0), 0.5, 0.0))


def gold_agreement(p_own: np.ndarray, gold_own: np.ndarray) -> float:
    """Share of items where the judge's hard verdict picks the gold winner (ties count half)."""
    return float(np.mean(agreement_per_item(p_own, gold_own)))


def paired_effect(before: np.ndarray, after: np.ndarray, *, n_boot: int, seed: int) -> dict:
    """Mean per-instruction change of P(own wins), with a bootstrap interval over instructions."""
    diff = after - before
    lo, hi = bootstrap_ci(lambda idx: float(diff[idx].mean()), len(diff), n_boot=n_boot, seed=seed)
    return {"mean": float(diff.mean()), "ci": [lo, hi]}


def behaviour(p_own: np.ndarray, gold_own: np.ndarray, *, n_boot: int, seed: int) -> dict:
    scores = dbg(p_own, gold_own, n_boot=n_boot, seed=seed)
    return {
        "dbg_hard": scores["dbg_hard"],
        "dbg_soft": scores["dbg_soft"],
        "dbg_ci": list(scores["dbg_ci"]),
        "dbg_soft_ci": list(scores["dbg_soft_ci"]),
        "mean_p_own": float(p_own.mean()),
        "win_rate_own_hard": hard_win_rate(p_own),
        "gold_agreement": gold_agreement(p_own, gold_own),
    }


def causal_verdict(effects: dict[str, dict]) -> tuple[bool, str]:
    """DESIGN.md 4: causal only if the self effect's interval excludes 0 and the effect exceeds every control's.

    Every effect is a change of P(own wins). "Exceeds" is by size: the self effect's smallest size inside its
    interval must be larger than the largest size inside each control's interval, whatever the control's
    sign. A control sets the scale of what masking that much attention does anyway, and its sign is no guide:
    for a judge that only compares the two answers, masking the other one raises P(own) (a signed comparison
    would then call any such judge self-preferring), while on heads that matter for the verdict whatever they
    read, masking either answer can lower P(own) (a comparison of each response's own loss would then call
    it self-preferring).
    """
    main_key = "self" if "self" in effects else next(iter(effects))
    main = effects[main_key]
    lo, hi = main["ci"]
    controls = {k: v for k, v in effects.items() if k != main_key}
    if lo <= 0 <= hi:
        return False, f"no causal effect shown: the {main_key} effect {100 * main['mean']:+.1f} pts has an interval containing 0"
    if not controls:
        return False, f"effect {100 * main['mean']:+.1f} pts [{100 * lo:+.1f}, {100 * hi:+.1f}], but no controls were run (they run for target = \"self\"), so no causal claim"
    smallest = min(abs(lo), abs(hi))
    beyond = all(smallest > max(abs(c["ci"][0]), abs(c["ci"][1])) for c in controls.values())
    control_text = ", ".join(f"{name} {100 * c['mean']:+.1f} [{100 * c['ci'][0]:+.1f}, {100 * c['ci'][1]:+.1f}]" for name, c in controls.items())
    text = f"self-span effect {100 * main['mean']:+.1f} pts [{100 * lo:+.1f}, {100 * hi:+.1f}] vs controls {control_text}"
    if beyond:
        return True, "causal effect on self-preference: " + text
    return False, "no causal effect beyond the controls (by size): " + text


def gold_agreement_ci(p_own: np.ndarray, gold_own: np.ndarray, *, n_boot: int, seed: int) -> list[float]:
    per_item = agreement_per_item(p_own, gold_own)
    return list(bootstrap_ci(lambda idx: float(per_item[idx].mean()), len(per_item), n_boot=n_boot, seed=seed))
