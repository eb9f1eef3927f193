"""A DBG run's scores, as written to `RUN/summary.json`: `RunSummary` with one `JudgeScores` per judge.

Every key a run writes is a field (a file with another key is refused); the gold block, the placement and the
modes' tables are the nested data they are.
"""

from __future__ import annotations

from typing import Optional

from pydantic import Field

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


class RunSummary(ResultModel):
    """`summary.json`: the run's items, models and tasks, per judge its scores, and gold's win rates."""

    schema_version: int = 1
    n_items: int = 0
    models: list[str] = Field(default_factory=list)
    max_words: Optional[int] = None
    tasks: list[str] = Field(default_factory=list)
    judges: dict[str, JudgeScores] = Field(default_factory=dict)
    gold: dict = Field(default_factory=dict)
    label_handling: Optional[str] = None
    placement: Optional[dict] = None
    model_sizes: Optional[dict[str, int]] = None
    reasoning: Optional[dict] = None
    empty_answers: Optional[dict[str, list[str]]] = None
    pointwise: Optional[dict] = None  # a pointwise run: per judge and author its 1-5 scores
    correctness: Optional[dict] = None  # graded answers: per author graded and correct, and `no_target`
