"""How numbers are written for people: the one function per kind, used by the terminal, the report, the verdict
sentences and the CLI (JSON keeps the numbers themselves).

- `pts`: a probability or a change of one, in signed percentage points ("+12.3");
- `pts_ci`, `pts_interval`: an interval in points ("[-2.0, +3.0]"), a value with its interval;
- `pct`: a share as a percentage ("42%"); `share_interval`: a share with its interval ("42% [10%, 70%]");
- `p_value`: a p-value, three decimals, "< 0.001" below that and "< 1e-4" in the far tail (never "0.000");
- `number`: any other number ("0.004", signed on request); `fixed`: to fixed decimals, for aligned columns.

A missing value (None, NaN, infinity) is written "n/a" (an interval: ""); a share's interval that is unbounded
(a bound None or infinite, e.g. Fieller's where the gap is not clear of 0) is written so, "[unbounded]".
"""

from __future__ import annotations

import math
from typing import Sequence


def missing(value) -> bool:
    """None, NaN or infinity: a number that is not there."""
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def pts(value, digits: int = 1) -> str:
    """A probability (or a change of one) in signed percentage points: 0.123 -> "+12.3"."""
    return "n/a" if missing(value) else f"{100 * value:+.{digits}f}"


def pts_ci(ci: Sequence[float] | None, digits: int = 1) -> str:
    """An interval in points, "[-2.0, +3.0]"; "" when there is none."""
    if not ci or len(ci) != 2 or missing(ci[0]) or missing(ci[1]):
        return ""
    return f"[{pts(ci[0], digits)}, {pts(ci[1], digits)}]"


def pts_interval(mean, ci: Sequence[float] | None, digits: int = 1) -> str:
    """A value in points with its interval, "+1.0 [-2.0, +3.0]"; "n/a" when the value is missing."""
    return "n/a" if missing(mean) else f"{pts(mean, digits)} {pts_ci(ci, digits)}".strip()


def pct(value, digits: int = 0) -> str:
    """A share as a percentage: 0.42 -> "42%"."""
    return "n/a" if missing(value) else f"{100 * value:.{digits}f}%"


def _unbounded(bound) -> bool:
    return bound is None or (isinstance(bound, float) and math.isinf(bound))


def share_interval(value, ci: Sequence[float] | None, digits: int = 0) -> str:
    """A share with its interval as percentages, "42% [10%, 70%]"; "n/a" when the share is missing; "42%
    [unbounded]" when the interval has a bound None or infinite ("[-inf, 70%]" when only the low one is)."""
    if missing(value):
        return "n/a"
    if not ci or len(ci) != 2 or any(isinstance(b, float) and math.isnan(b) for b in ci):
        return pct(value, digits)
    low, high = ci
    if _unbounded(low) and _unbounded(high):
        return f"{pct(value, digits)} [unbounded]"
    shown_low = "-inf" if _unbounded(low) else pct(low, digits)
    shown_high = "+inf" if _unbounded(high) else pct(high, digits)
    return f"{pct(value, digits)} [{shown_low}, {shown_high}]"


def fixed(value, digits: int = 2) -> str:
    """A number to `digits` decimals, for aligned columns: 0.5 -> "0.50"."""
    return "n/a" if missing(value) else f"{value:.{digits}f}"


def number(value, digits: int = 3, *, signed: bool = False) -> str:
    """Any other number, to `digits` significant digits: 0.00412 -> "0.00412"; "+0.25" when `signed`."""
    return "n/a" if missing(value) else f"{value:{'+' if signed else ''}.{digits}g}"


def p_value(value) -> str:
    """A p-value: 0.0423 -> "0.042"; below 0.001 "< 0.001", below 1e-4 "< 1e-4" (a p is never zero, so never
    "0.000"; and a far-tail p such as 9e-19 rests on the normal tail alone, so its digits are not printed)."""
    if missing(value):
        return "n/a"
    if value < 1e-4:
        return "< 1e-4"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"
