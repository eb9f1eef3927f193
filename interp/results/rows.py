"""The smaller results: a re-judging variant (`RUN/variants/<key>/variant.json`), one row of a sweep's
`results.csv`, and one row of a localisation table (one method's score for one head)."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import Field, model_serializer, model_validator

from interp.results.base import ResultModel

VARIANT_FIELDS = ("schema_version", "key", "judge", "own", "backend", "name", "description", "reference", "path")


class VariantRecord(ResultModel):
    """What one re-judging variant is: its key, the judge, whose answer it reads as own, the backend, and
    the variant as data (attention spec, steering, nodes)."""

    schema_version: int = 1
    key: str
    judge: str
    own: str
    backend: str
    name: Optional[str] = None
    description: Optional[str] = None
    reference: Optional[list[str] | str] = None  # the items mean ablations and resampling read ("all": every item)
    path: Optional[str] = None  # how it was judged: "final_cached" (the final row over cached keys) or "full"
    slots: dict[str, Any] = Field(default_factory=dict)  # slot -> its interventions' identity (attention, ...)

    @model_validator(mode="before")
    @classmethod
    def _gather_slots(cls, data: Any) -> Any:
        """A variant file holds each slot (an intervention kind's group, open to a user's kinds) at the top level:
        read them into `slots`."""
        if not isinstance(data, dict) or "slots" in data:
            return data
        slots = {key: value for key, value in data.items() if key not in VARIANT_FIELDS}
        return {key: value for key, value in data.items() if key in VARIANT_FIELDS} | {"slots": slots}

    @model_serializer(mode="wrap")
    def _spread_slots(self, handler) -> dict:
        """Written as read: each slot at the top level."""
        data = handler(self)
        return {key: value for key, value in data.items() if key != "slots"} | dict(data.get("slots") or {})


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
    """One (judge, point) of a sweep: the point (the columns that say what it is: everything but the judge and
    the results, empty cells left out), the paired effect on P(own) with its interval, the within-judge
    sign-flip p and its Holm adjustment, and the behaviour under it."""

    judge: str
    point: dict[str, Any] = Field(default_factory=dict)
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
