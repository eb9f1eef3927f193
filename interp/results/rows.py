"""The smaller results: a re-judging variant (`RUN/variants/<key>/variant.json`), one row of a sweep's
`results.csv`, and one row of a localisation table (one method's score for one head)."""

from __future__ import annotations

from typing import Optional

from interp.results.base import ResultModel


class VariantRecord(ResultModel):
    """What one re-judging variant is: its key, the judge, whose answer it reads as own, the backend, and
    the variant as data (attention spec, steering, nodes)."""

    schema_version: int = 1
    key: str
    judge: str
    own: str
    backend: str
    name: Optional[str] = None


SWEEP_RESULT_COLUMNS = (
    "effect",
    "effect_lo",
    "effect_hi",
    "p_value",
    "p_holm",
    "dbg_hard",
    "dbg_lo",
    "dbg_hi",
    "dbg_soft",
    "mean_p_own",
    "gold_agreement",
    "key",
)


class SweepRow(ResultModel):
    """One (judge, point) of a sweep: the point's columns (kept as given), the paired effect on P(own) with
    its interval, the within-judge sign-flip p and its Holm adjustment, and the behaviour under it."""

    judge: str
    effect: Optional[float] = None
    effect_lo: Optional[float] = None
    effect_hi: Optional[float] = None
    p_value: Optional[float] = None
    p_holm: Optional[float] = None
    dbg_hard: Optional[float] = None
    dbg_lo: Optional[float] = None
    dbg_hi: Optional[float] = None
    dbg_soft: Optional[float] = None
    mean_p_own: Optional[float] = None
    gold_agreement: Optional[float] = None
    key: Optional[str] = None

    @property
    def point(self) -> dict:
        """The columns that say what the point is (everything but the results)."""
        return {k: v for k, v in (self.model_extra or {}).items() if v not in (None, "")}


class LocalizeRow(ResultModel):
    """One method's score for one (layer, head): |effect| ranks, effect > 0 favours the own answer."""

    method: str
    layer: int
    head: int
    score: Optional[float]
    effect: Optional[float]
    rank: Optional[int] = None
    single_judge: bool = True
    n_items: Optional[int] = None
