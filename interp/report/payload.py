"""What a command ends with, as one typed object: `ResultsPayload`, drawn as the terminal tables
(`interp.report.terminal.print_results`) and printed as JSON for `--json` (`interp.report.terminal.payload_json`).

Each part is optional and written only where the command set it (`to_json` leaves out what is unset), in one
order: DBG per judge, the reasoning removed, gold against people, the causal test, a sweep's strongest points,
the files written, a pointwise run's scores, the graded answers, the timings, and a validation's truth table.
"""

from __future__ import annotations

from typing import Optional

from pydantic import Field, model_serializer

from interp.results.base import ResultModel
from interp.results.studies import TruthRow
from interp.results.summary import Correctness, HumanAgreement, Interval


class Estimate(ResultModel):
    """A mean with its 95% interval (None where the result has none)."""

    mean: Optional[float] = None
    ci: Interval = None


class DbgRow(ResultModel):
    """One judge's DBG (hard with its bootstrap interval, soft), ties and DBG without them, position consistency,
    label mass, and whether it is reliable enough to read (`unreliable_because` says why not)."""

    judge: str
    own_model: Optional[str] = None
    dbg_hard: Optional[float] = None
    dbg_ci: Interval = None
    dbg_soft: Optional[float] = None
    tie_share: Optional[float] = None
    dbg_no_ties: Optional[float] = None
    position_consistency: Optional[float] = None
    mean_label_mass: Optional[float] = None
    reliable: bool = True
    unreliable_because: list[str] = Field(default_factory=list)


class HumanRow(HumanAgreement):
    """One gold judge's (or the ensemble's) agreement with human labels, with the first answer's win rates, under
    the gold judge's name (`gold`, written first)."""

    gold: str

    @model_serializer(mode="wrap")
    def _gold_first(self, handler) -> dict:
        data = handler(self)
        return {"gold": data.pop("gold")} | data


class CausalRow(ResultModel):
    """One judge's causal test: the verdict (True, False, or None with its reason) and its words, the
    within-judge change with its interval and p, the between-judge test, and the share of the gap removed."""

    judge: str
    causal: Optional[bool] = None
    reason: Optional[str] = None
    verdict: str = ""
    effect: Optional[Estimate] = None
    p_within: Optional[float] = None
    n_controls: Optional[int] = None
    p_value: Optional[float] = None
    p_holm: Optional[float] = None
    test_alpha: Optional[float] = None
    share_removed: Optional[float] = None
    share_removed_ci: Interval = None
    n_test: Optional[int] = None
    specific: Optional[bool] = None  # the specificity check passed (None: a result from before the check)
    p_specific: Optional[float] = None


class SweepPoint(ResultModel):
    """One sweep point as shown: the judge, the point in words, its effect on P(own) with the interval, DBG
    under it, and the point's sign-flip p with its Holm adjustment."""

    judge: str
    point: str
    effect: Estimate
    dbg_hard: Optional[float] = None
    dbg_ci: Interval = None
    p_value: Optional[float] = None
    p_holm: Optional[float] = None


class SweepTop(ResultModel):
    """A sweep's points: how many there are, and the ones shown (largest drop of P(own) first)."""

    n_points: int
    top: list[SweepPoint] = Field(default_factory=list)


class PointwiseRow(ResultModel):
    """One judge's 1-5 scores of one author, with the judge's reliability flag."""

    judge: str
    author: str
    n: int = 0
    mean_expected_score: Optional[float] = None
    n_parsed: int = 0
    mean_parsed_score: Optional[float] = None
    reliable: bool = True
    unreliable_because: list[str] = Field(default_factory=list)


class TimingsRecord(ResultModel):
    """Where the time went (`Timings.record`): each step's seconds, the total, the torch threads, the peak memory;
    `peak_gpu_gb` where a GPU was used, `wall_s` where the command measured its wall time."""

    steps: dict[str, float] = Field(default_factory=dict)  # step name -> seconds: a command names its own steps
    total_s: Optional[float] = None
    torch_threads: Optional[int] = None
    torch_threads_used: list[int] = Field(default_factory=list)
    peak_rss_gb: Optional[float] = None
    peak_gpu_gb: Optional[float] = None
    wall_s: Optional[float] = None


class ResultsPayload(ResultModel):
    """The results a command ends with: every part it set, nothing else (see the module's docstring)."""

    dbg: Optional[list[DbgRow]] = None
    reasoning: Optional[list[str]] = None
    gold_human: Optional[list[HumanRow]] = None
    causal: Optional[list[CausalRow]] = None
    sweep: Optional[SweepTop] = None
    files: Optional[dict[str, str]] = None  # name -> path: each command names what it wrote (report, results, ...)
    pointwise: Optional[list[PointwiseRow]] = None
    correctness: Optional[Correctness] = None
    timings: Optional[TimingsRecord] = None
    truth_table: Optional[list[TruthRow]] = None  # validate's claims, as `ValidationResult.truth_table` holds them

    def merged(self, other: ResultsPayload) -> ResultsPayload:
        """This payload with every part `other` set put over it; the parts `other` did not set are kept."""
        return self.model_copy(update={name: getattr(other, name) for name in other.model_fields_set})
