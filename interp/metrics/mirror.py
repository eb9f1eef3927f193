"""Breaking the Mirror's figures (arXiv 2509.03647) for any intervention: how many of the judge's unjustified
self-preferences it flips, and how many of its legitimate ones it keeps.

Per item, from P(own) averaged over both orders (before and after the intervention) and gold's P(own):
- an *unjustified* case: the judge picks its own answer (P(own) > 0.5) where gold prefers the other (< 0.5);
  it is *flipped* when the intervened judge no longer picks its own answer (P(own) < 0.5);
- a *legitimate* case: the judge picks its own answer and gold agrees (> 0.5); it is *kept* when the intervened
  judge still picks it (> 0.5).

Items where the judge or gold is at 0.5 (the toolkit's one tie rule, `metrics.dbg.tie_sign`) are neither; an
intervened verdict at 0.5 is neither flipped nor kept. Each share comes with a Wilson score interval
(level 1 - `test_alpha`), the interval for a binomial proportion that stays inside [0, 1] and is sound at small n.
That paper reports up to 97 % of unjustified cases flipped by steering Llama-3.1-8B-Instruct; these figures
put ours beside it.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from interp.metrics.dbg import tie_sign


def wilson_interval(successes: int, n: int, test_alpha: float = 0.05) -> tuple[float, float] | None:
    """The Wilson score interval of successes / n (None when n is 0)."""
    if n == 0:
        return None
    z = NormalDist().inv_cdf(1 - test_alpha / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def mirror_shares(before: np.ndarray, after: np.ndarray, gold_own: np.ndarray, *, test_alpha: float = 0.05) -> dict:
    """The unjustified-flipped and legitimate-kept shares (see the module docstring), with counts and intervals."""
    before, after, gold = (tie_sign(np.asarray(x, dtype=float)) for x in (before, after, gold_own))
    picks_own = before > 0
    unjustified = picks_own & (gold < 0)
    legitimate = picks_own & (gold > 0)
    flipped = int((unjustified & (after < 0)).sum())
    kept = int((legitimate & (after > 0)).sum())
    n_unjustified, n_legitimate = int(unjustified.sum()), int(legitimate.sum())
    return {
        "unjustified": n_unjustified,
        "unjustified_flipped": flipped,
        "unjustified_flipped_share": flipped / n_unjustified if n_unjustified else None,
        "unjustified_flipped_ci": wilson_interval(flipped, n_unjustified, test_alpha),
        "legitimate": n_legitimate,
        "legitimate_kept": kept,
        "legitimate_kept_share": kept / n_legitimate if n_legitimate else None,
        "legitimate_kept_ci": wilson_interval(kept, n_legitimate, test_alpha),
        "reference": "Breaking the Mirror (arXiv 2509.03647): up to 97 % of unjustified self-preference flipped",
    }
