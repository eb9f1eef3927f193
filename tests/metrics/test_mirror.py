"""Breaking the Mirror's shares: counted by hand on a small table, with Wilson intervals checked against the formula."""

from __future__ import annotations

import math

import numpy as np
import pytest

from interp.metrics.mirror import mirror_shares, wilson_interval


def test_unjustified_flipped_and_legitimate_kept_are_counted_per_item():
    before = np.array([0.9, 0.8, 0.7, 0.6, 0.2, 0.5, 0.9])
    after = np.array([0.1, 0.9, 0.4, 0.7, 0.9, 0.1, 0.5])
    gold = np.array([0.2, 0.3, 0.8, 0.9, 0.1, 0.1, 0.5])
    # items 0, 1: unjustified (0 flipped); 2, 3: legitimate (3 kept); 4: picks other; 5: the judge ties; 6: gold ties
    out = mirror_shares(before, after, gold)
    assert (out["unjustified"], out["unjustified_flipped"], out["legitimate"], out["legitimate_kept"]) == (2, 1, 2, 1)
    assert out["unjustified_flipped_share"] == 0.5 and out["legitimate_kept_share"] == 0.5
    assert mirror_shares(before[4:5], after[4:5], gold[4:5])["unjustified_flipped_share"] is None


def test_the_wilson_interval_is_the_textbook_one():
    lo, hi = wilson_interval(5, 10)
    assert (lo, hi) == pytest.approx((0.2366, 0.7634), abs=1e-4)  # the standard table value
    lo, hi = wilson_interval(0, 4)
    assert lo == 0.0 and hi == pytest.approx(1.96**2 / (4 + 1.96**2), abs=1e-3)
    assert wilson_interval(0, 0) is None
    n, k = 200, 194
    lo, hi = wilson_interval(k, n)
    assert lo < k / n < hi <= 1 and not math.isnan(lo)
