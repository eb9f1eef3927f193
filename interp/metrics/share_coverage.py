"""The share interval's coverage, measured: how often `share_removed`'s interval (Fieller's) holds the true
share over simulated judges (`interp.metrics.share.simulate_share_judges`), overall and where the one-sided gap
gate passes, beside the percentile multi-bootstrap it replaced. `python experiments/bench_share_coverage.py`
prints the table of docs/causal-test.md."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from interp.errors import InterpError
from interp.metrics.causal_test import ALPHA
from interp.metrics.families import multi_bootstrap
from interp.metrics.judge_level import crawford_howell, gap_gate_reason, share_statistic
from interp.metrics.share import ShareModel, share_fieller, simulate_share_judges
from interp.metrics.stats import clopper_pearson, ratio_interval_covers


@dataclass(frozen=True)
class ShareCoverage:
    """How often a share interval held the true share over simulated judges, overall and where the gap gate passed."""

    k: int
    method: str  # "fieller" or "percentile" (the old multi-bootstrap)
    coverage: float  # share of simulations whose interval holds the true share
    ci: tuple[float, float]  # Clopper-Pearson 95 %
    n_sims: int
    gated: int  # simulations where the one-sided gap gate passed (a share would be reported)
    coverage_gated: float | None  # coverage among those
    unbounded: int  # Fieller sets that are unbounded (never for the percentile interval)
    unbounded_gated: int  # of those, where the gate passed (a share reported with an unbounded interval)
    dropped: int  # non-finite bootstrap draws dropped (percentile only)

    def to_dict(self) -> dict:
        """The coverage as a JSON-ready dict."""
        return asdict(self)


def share_interval_coverage(
    k: int,
    *,
    method: str = "fieller",
    n_sims: int = 1000,
    seed: int = 0,
    n_boot: int = 500,
    level: float = 0.95,
    **model,
) -> ShareCoverage:
    """How often the share's interval holds the true share over `n_sims` simulated judges with k controls
    (`simulate_share_judges` of `ShareModel(**model)`), overall and where the gap gate passes (one-sided
    Crawford-Howell at 0.05)."""
    if method not in ("fieller", "percentile"):
        raise InterpError(f"share_interval_coverage: method {method!r}: use 'fieller' or 'percentile'")
    rng, truth = np.random.default_rng(seed), model.get("share", 0.5)
    hits, gated, gated_hits, unbounded, unbounded_gated, dropped = 0, 0, 0, 0, 0, 0
    for s in range(n_sims):
        jb, ja, cb, ca = simulate_share_judges(rng, k, ShareModel(**model))
        wide = False
        if method == "fieller":
            interval = share_fieller(jb, ja, cb, ca, level=level)
            hit, wide = ratio_interval_covers(interval, truth), not interval.bounded
        else:
            families = [np.stack([jb, ja])[None], np.stack([cb, ca], axis=1)]
            boot = multi_bootstrap(families, share_statistic, n_boot=n_boot, seed=s, level=level)
            hit, dropped = boot.low <= truth <= boot.high, dropped + boot.n_dropped
        gate = crawford_howell(float(jb.mean()), cb.mean(axis=1), "greater")
        passes = gap_gate_reason(float(jb.mean() - cb.mean()), gate, ALPHA) is None
        hits, gated, gated_hits = hits + hit, gated + passes, gated_hits + (hit and passes)
        unbounded, unbounded_gated = unbounded + wide, unbounded_gated + (wide and passes)
    return ShareCoverage(
        k=k,
        method=method,
        coverage=hits / n_sims,
        ci=clopper_pearson(hits, n_sims),
        n_sims=n_sims,
        gated=gated,
        coverage_gated=gated_hits / gated if gated else None,
        unbounded=unbounded,
        unbounded_gated=unbounded_gated,
        dropped=dropped,
    )
