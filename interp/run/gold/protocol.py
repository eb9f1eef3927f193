"""Gold judges: the reference verdicts that DBG subtracts from a judge's self-preference (docs/science.md, Gold).

A gold judge is anything with a `name` and `p_slot_a(pairs) -> [P(response_a is better)]`. Judges without
probabilities answer 1.0 / 0.0 (and 0.5 for an exact tie); `aggregate_gold` averages over judges per pair,
as the paper does. `gold_verdicts` runs one judge and checks its answer; `run_gold` runs several.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence, runtime_checkable

from interp.data import Item
from interp.errors import InterpError

# Scores closer than this count as a tie (chrF is a float; equal texts can differ in the last bits).
TIE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Pair:
    """Two responses to one item; slot A is `response_a`."""

    item: Item
    response_a: str
    response_b: str


@runtime_checkable
class GoldJudge(Protocol):
    """What a gold judge is: a name, and P(slot A wins) for each pair."""

    name: str

    def p_slot_a(self, pairs: Sequence[Pair]) -> list[float]:
        """P(response_a is better) per pair, in [0, 1]."""
        ...


@runtime_checkable
class ReportsChecks(Protocol):
    """A gold judge that counts what went wrong while judging (kept in the run's gold_checks.json)."""

    stats: dict[str, int]


def verdict(score_a: float, score_b: float) -> float:
    """1.0 if A scores higher, 0.0 if B does, 0.5 for a tie."""
    if score_a > score_b + TIE_TOLERANCE:
        return 1.0
    if score_b > score_a + TIE_TOLERANCE:
        return 0.0
    return 0.5


def check_gold_judges(judges: Sequence[GoldJudge]) -> None:
    """At least one judge, and no two with the same name (their verdicts are stored by name)."""
    if not judges:
        raise InterpError("no gold judge configured: enable [gold] reference or add models, http or recorded judges")
    names = [judge.name for judge in judges]
    for name in names:
        if names.count(name) > 1:
            raise InterpError(f"two gold judges are named {name!r}; give each a distinct name")


def gold_verdicts(judge: GoldJudge, pairs: Sequence[Pair]) -> list[float]:
    """One judge's P(first wins) per pair, checked for count and range."""
    values = [float(p) for p in judge.p_slot_a(pairs)]
    if len(values) != len(pairs):
        raise InterpError(f"gold judge {judge.name!r} returned {len(values)} verdicts for {len(pairs)} pairs")
    aggregate_gold({judge.name: values})  # validates the range
    return values


def run_gold(judges: Sequence[GoldJudge], pairs: Sequence[Pair]) -> dict[str, list[float]]:
    """Each judge's P(first wins) per pair, keyed by judge name, checked for length and range."""
    check_gold_judges(judges)
    return {judge.name: gold_verdicts(judge, pairs) for judge in judges}


def aggregate_gold(per_judge: Mapping[str, Sequence[float]]) -> list[float]:
    """Mean over judges of P(first wins), per pair (paper: judges without probabilities count 1.0 / 0.0)."""
    if not per_judge:
        raise InterpError("no gold judge verdicts to aggregate")
    lengths = {name: len(values) for name, values in per_judge.items()}
    if len(set(lengths.values())) != 1:
        raise InterpError(f"gold judges disagree on the number of pairs: {lengths}")
    for name, values in per_judge.items():
        for index, value in enumerate(values):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and 0.0 <= value <= 1.0):
                raise InterpError(f"gold judge {name!r}, pair {index}: P(first wins) must be in [0, 1], got {value!r}")
    columns = list(per_judge.values())
    return [sum(column[index] for column in columns) / len(columns) for index in range(len(columns[0]))]
