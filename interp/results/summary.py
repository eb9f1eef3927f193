"""A DBG run's scores, as written to `RUN/summary.json`: `RunSummary` with one `JudgeScores` per judge.

Every key a run writes is a field (a file with another key is refused), the nested blocks too: gold's win rates
and its agreement with people (`GoldScores`), the reasoning removed per author (`ReasoningRemoved`), a pointwise
run's scores (`PointwiseJudge`), the graded answers (`Correctness`) and where the models ran (`PlacementRecord`).
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import Field, model_serializer, model_validator

from interp.results.base import ResultModel

Interval = Optional[list[Optional[float]]]


class JudgeScores(ResultModel):
    """One judge's scores: DBG (hard with its bootstrap interval, soft), win rates, position consistency,
    label mass and whether it is reliable enough to read (`unreliable_because` empty)."""

    n_judgments: int = 0
    position_consistency: Optional[float] = None
    win_rate_first_hard: Optional[float] = None
    win_rate_first_soft: Optional[float] = None
    top_not_label: int = 0
    mean_label_mass: Optional[float] = None
    unreliable_because: list[str] = Field(default_factory=list)
    reliable: bool = True
    own_model: Optional[str] = None
    dbg_hard: Optional[float] = None
    dbg_soft: Optional[float] = None
    dbg_ci: Interval = None
    dbg_soft_ci: Interval = None
    win_rate_own_hard: Optional[float] = None
    win_rate_own_soft: Optional[float] = None
    gold_win_rate_hard: Optional[float] = None
    tie_share: Optional[float] = None
    gold_tie_share: Optional[float] = None
    dbg_no_ties: Optional[float] = None
    gold_win_rate_soft: Optional[float] = None
    n: Optional[int] = None  # the items the DBG bootstrap resampled
    own_share: Optional[float] = None  # items whose verdict over both orders is the own answer
    win_rate_own_no_ties: Optional[float] = None
    gold_win_rate_no_ties: Optional[float] = None


class HumanAgreement(ResultModel):
    """One gold judge's (or the gold ensemble's) agreement with human labels on the labelled items, with its
    bootstrap interval, and the first answer's win rate by gold and by people (`interp.metrics.human`)."""

    n: int = 0
    agreement: Optional[float] = None
    agreement_ci: Interval = None
    gold_win_rate_first: Optional[float] = None
    human_win_rate_first: Optional[float] = None
    human_tie_share: Optional[float] = None


class GoldHuman(ResultModel):
    """Gold against people (Table 1): the labelled items, per gold judge and for the ensemble."""

    n_items: int = 0
    judges: dict[str, HumanAgreement] = Field(default_factory=dict)
    ensemble: HumanAgreement = Field(default_factory=HumanAgreement)


class GoldScores(ResultModel):
    """The gold block: its judges, each author's hard and soft win rate by gold, gold against people where the
    run has human labels, and the HTTP gold judges' counters (`checks`)."""

    judges: list[str] = Field(default_factory=list)
    win_rate: dict[str, Optional[float]] = Field(default_factory=dict)  # author -> its hard win rate
    win_rate_soft: dict[str, Optional[float]] = Field(default_factory=dict)
    human: Optional[GoldHuman] = None
    # gold judge -> its counters, as `gold_checks.json` holds them (`GoldChecks.judges`: a backend's own counters)
    checks: Optional[dict[str, dict]] = None


class ReasoningRemoved(ResultModel):
    """Reasoning removed from one author's answers before judging: on how many of the run's items, and the mean
    length removed per answer (`interp.run.reasoning.reasoning_summary`)."""

    n_answers: int = 0
    n_items: int = 0
    mean_chars: float = 0.0
    mean_words: float = 0.0


class PointwiseScores(ResultModel):
    """One judge's 1-5 scores of one author: the mean expected score, how many parsed and their mean."""

    n: int = 0
    mean_expected_score: Optional[float] = None
    n_parsed: int = 0
    mean_parsed_score: Optional[float] = None


class PointwiseJudge(ResultModel):
    """A pointwise judge: its mass on the score labels with the reliability flag it gives, and per author its
    scores (`interp.run.pointwise.pointwise_summary`)."""

    mean_label_mass: Optional[float] = None
    unreliable_because: list[str] = Field(default_factory=list)
    reliable: bool = True
    authors: dict[str, PointwiseScores] = Field(default_factory=dict)


class GradedCount(ResultModel):
    """One author's graded answers and how many were correct."""

    graded: int = 0
    correct: int = 0


class Correctness(ResultModel):
    """The graded answers: per author its counts, and the items without a target (`no_target`). The file holds
    each author at the top level beside `no_target`; they are read into `authors` and written back there."""

    authors: dict[str, GradedCount] = Field(default_factory=dict)
    no_target: int = 0

    @model_validator(mode="before")
    @classmethod
    def _gather_authors(cls, data: Any) -> Any:
        """Every key but `no_target` is an author: read them into `authors`."""
        if not isinstance(data, dict) or "authors" in data:
            return data
        authors = {key: value for key, value in data.items() if key != "no_target"}
        return {key: value for key, value in data.items() if key == "no_target"} | {"authors": authors}

    def __bool__(self) -> bool:
        """Whether the block holds anything: an empty one (`{}`) reads as no grading, as the plain data did."""
        return bool(self.to_json())

    @model_serializer(mode="wrap")
    def _spread_authors(self, handler) -> dict:
        """Written as read: each author at the top level, then `no_target`."""
        data = handler(self)
        return dict(data.get("authors") or {}) | {key: value for key, value in data.items() if key != "authors"}


class PlacementRecord(ResultModel):
    """Where the run's local models ran: the device, the dtype and the device map (`Placement.record`)."""

    device: Optional[str] = None
    dtype: Optional[str] = None
    device_map: Optional[str] = None


class RunSummary(ResultModel):
    """`summary.json`: the run's items, models and tasks, per judge its scores, and gold's win rates."""

    schema_version: int = 1
    n_items: int = 0
    models: list[str] = Field(default_factory=list)
    max_words: Optional[int] = None
    tasks: list[str] = Field(default_factory=list)
    judges: dict[str, JudgeScores] = Field(default_factory=dict)
    gold: GoldScores = Field(default_factory=GoldScores)
    label_handling: Optional[str] = None
    placement: Optional[PlacementRecord] = None
    model_sizes: Optional[dict[str, int]] = None
    reasoning: Optional[dict[str, ReasoningRemoved]] = None  # author -> what was removed from its answers
    empty_answers: Optional[dict[str, list[str]]] = None
    pointwise: Optional[dict[str, PointwiseJudge]] = None  # a pointwise run: per judge and author its 1-5 scores
    correctness: Optional[Correctness] = None  # graded answers: per author graded and correct, and `no_target`
