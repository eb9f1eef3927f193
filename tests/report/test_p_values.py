"""A p-value is written to three decimals and never as "0.000": below 0.001 it is "< 0.001"."""

from __future__ import annotations

from interp.formatting import p_value


def test_small_p_values_are_never_zero():
    assert p_value(0.0001) == "< 0.001" and p_value(1e-12) == "< 0.001"
    assert p_value(0.001) == "0.001" and p_value(0.0423) == "0.042" and p_value(1.0) == "1.000"
    assert p_value(None) == "n/a" and p_value(float("nan")) == "n/a"
