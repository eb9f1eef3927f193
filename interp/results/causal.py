"""The causal test of one intervention over a run, as written to `RUN/interventions/<label>-<key>/result.json`.

`CausalResult` holds the design, the items, the reused inputs and one `JudgeTest` per tested judge. A
`JudgeTest` carries its decision (`causal`, `p_value`, `p_holm`, `test_alpha`), the test that made it
(`test`: Crawford-Howell against k control judges, df = k - 1, with each control judge's effect), the
within-judge effect (`within_judge`, a sign-flip test), and the descriptive numbers beside them. Every
key a writer sets is a field, the nested records too (the design, a judge's behaviour, the gap gate, the mirror
shares, the random head sets), each declared in the order its writer sets its keys, so a file reads and writes
back as the same bytes. Three stay mappings, open to what a user adds: the spec (its keys are its kind's,
a user's node kinds included) and each variant's record and a control's variant record (a slot per intervention
kind).
"""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from interp.metrics.judge_level import WithinJudge
from interp.results.base import ResultModel

TEST_NAME = "Crawford-Howell"
TEST_H0 = (
    "the tested judge's mean change of P(own) is one more draw from the control judges' normal distribution "
    "(it behaves as one more control)"
)


class PairedEffect(ResultModel):
    """A paired change of P(own wins): its mean over items and its 95% bootstrap interval."""

    mean: Optional[float] = None
    ci: Optional[list[Optional[float]]] = None


class Share(ResultModel):
    """A share with its interval (the share of the self-preference gap an intervention removes): a bootstrap
    interval, or Fieller's set for the ratio."""

    estimate: Optional[float] = None
    low: Optional[float] = None
    high: Optional[float] = None
    level: Optional[float] = None
    n_boot: Optional[int] = None
    n_dropped: Optional[int] = None  # resamples whose statistic was not finite
    # Fieller's set (`interp.metrics.stats.RatioInterval`): its shape, and the t quantile it used
    kind: Optional[str] = None  # bounded | two rays | whole line
    bounded: Optional[bool] = None
    df: Optional[float] = None
    t: Optional[float] = None


class TestDesignRecord(ResultModel):
    """The design a causal test ran under (`interp.causal.design.TestDesign.record`): how the heads were chosen,
    the level and flips, and the control judges; `site` and `op` only where the heads' outputs were acted on."""

    heads: Optional[str] = None  # spec | all-layers | top-heads
    top_k: Optional[int] = None
    selection_share: Optional[float] = None
    split_seed: Optional[int] = None
    control_judges: Optional[list[str]] = None  # None: automatic
    random_head_sets: Optional[int] = None  # None: the fewest that can reach the level after Holm
    layer_matched: Optional[bool] = None
    test_alpha: Optional[float] = None
    n_flips: Optional[int] = None
    span_controls: Optional[bool] = None
    site: Optional[str] = None
    op: Optional[str] = None
    specificity: Optional[str] = None  # the specificity check; None: the default, margin-adjusted


class Behaviour(ResultModel):
    """A judge's behaviour on own-answer pairs (`interp.metrics.behaviour.behaviour`): DBG hard and soft with their
    intervals, the mean P(own), the hard win rate of its own answer and the agreement with gold."""

    dbg_hard: Optional[float] = None
    dbg_soft: Optional[float] = None
    dbg_ci: Optional[list[Optional[float]]] = None
    dbg_soft_ci: Optional[list[Optional[float]]] = None
    mean_p_own: Optional[float] = None
    win_rate_own_hard: Optional[float] = None
    gold_agreement: Optional[float] = None


class GapGate(ResultModel):
    """The gap gate (`interp.metrics.judge_level.CrawfordHowell`, one-sided): the judge's DBG (`x`) against its k
    control judges' before the intervention; the share removed is reported only where it rejects."""

    x: Optional[float] = None
    k: Optional[int] = None
    control_mean: Optional[float] = None
    control_sd: Optional[float] = None
    t: Optional[float] = None
    df: Optional[int] = None
    p_value: Optional[float] = None
    effect_sd: Optional[float] = None
    reason: Optional[str] = None
    alternative: Optional[str] = None
    p_rank_controls: Optional[float] = None


class MirrorShares(ResultModel):
    """The unjustified-flipped and legitimate-kept shares with counts and intervals (`interp.metrics.mirror`)."""

    unjustified: int = 0
    unjustified_flipped: int = 0
    unjustified_flipped_share: Optional[float] = None
    unjustified_flipped_ci: Optional[list[Optional[float]]] = None  # None: no unjustified pair to flip
    legitimate: int = 0
    legitimate_kept: int = 0
    legitimate_kept_share: Optional[float] = None
    legitimate_kept_ci: Optional[list[Optional[float]]] = None  # None: no legitimate pair to keep
    reference: Optional[str] = None


class SpecificityMirror(ResultModel):
    """The mirror shares recorded beside the specificity check (descriptive, not in the decision)."""

    unjustified: int = 0
    unjustified_flipped_share: Optional[float] = None
    legitimate: int = 0
    legitimate_kept_share: Optional[float] = None


class Specificity(ResultModel):
    """The specificity check a self-preference verdict needs (`interp.metrics.specificity.specificity_test`): the
    tested judge's own-answer log-odds at a clean margin of 0 after the edit (`judge_intercept`, d) against its
    controls' (one-sided Crawford-Howell with the judge's excess variance), whether it passed and why, and the
    pairs each line used. A file from before the check has none (`JudgeTest.specificity` None)."""

    method: str = "margin-adjusted"
    passed: bool = False
    reason: str = ""
    statistic: Optional[float] = None
    t: Optional[float] = None
    df: int = 0
    p_value: Optional[float] = None
    test_alpha: float = 0.05
    alternative: str = "less"
    judge_intercept: Optional[float] = None
    judge_slope: Optional[float] = None
    judge_variance: Optional[float] = None
    excess_variance: Optional[float] = None
    control_intercepts: dict[str, float] = Field(default_factory=dict)
    control_slopes: dict[str, float] = Field(default_factory=dict)
    control_mean: Optional[float] = None
    control_sd: Optional[float] = None
    n_pairs: int = 0
    control_pairs: dict[str, int] = Field(default_factory=dict)
    controls_left_out: dict[str, str] = Field(default_factory=dict)
    pairs: list[str] = Field(default_factory=list)
    mirror: Optional[SpecificityMirror] = None


class RandomHeadSets(ResultModel):
    """--top-heads: each random head set's effect (the judge's mean change of P(own) minus its controls'), and
    whether the sets kept the chosen heads' layers."""

    effects: list[float] = Field(default_factory=list)
    layer_matched: Optional[bool] = None


class BetweenTest(ResultModel):
    """The between-judge test that decides: Crawford-Howell of the judge's mean change (`x`) against its k
    control judges' (`control_effects`), t with df = k - 1; `p_rank` with random head sets."""

    design: str = "between-judge"
    n_controls: int = 0
    x: Optional[float] = None
    control_mean: Optional[float] = None
    control_sd: Optional[float] = None
    t: Optional[float] = None
    df: int = 0
    p_value: Optional[float] = None
    effect_sd: Optional[float] = None
    reason: Optional[str] = None
    control_effects: list[float] = Field(default_factory=list)
    p_rank: Optional[float] = None
    controls: list[str] = Field(default_factory=list)
    random_head_sets: Optional[int] = None
    random_sets_skipped: bool = False
    alternative: Optional[str] = None  # two-sided unless asked: "greater" (the gap gate), "less" (intervene's removal)
    p_two_sided: Optional[float] = None  # beside a one-sided p: the two-sided p of its t (intervene, issue 81)
    p_rank_controls: Optional[float] = None  # the rank-based check against the controls
    control_judge: Optional[str] = None  # a file before the between-judge design: its one control judge
    n_flips: Optional[int] = None  # a file before the between-judge design: the sign-flip resamples

    @property
    def name(self) -> str:
        return TEST_NAME

    @property
    def h0(self) -> str:
        return TEST_H0


class ControlRecord(ResultModel):
    """One control judge under the same intervention on the same answer: before, after and its effect."""

    before: Behaviour = Field(default_factory=Behaviour)
    after: dict = Field(
        default_factory=dict
    )  # its variant's record and the behaviour under it, as `JudgeTest.variants`
    effect: Optional[PairedEffect] = None


class JudgeEffect(ResultModel):
    """The judge's change minus the controls' mean change (`mean`), and both parts."""

    mean: Optional[float] = None
    judge: Optional[float] = None
    controls_mean: Optional[float] = None
    ci: Optional[list[Optional[float]]] = None  # a file before the between-judge design


class MaskedMass(ResultModel):
    """Where a mask of the own answer moved its attention, at the masked heads and the final position on the test
    items (`interp.causal.masked_mass.mass_moved`): the share the other answer received, the mean own mass removed,
    and where that holds."""

    share_to_other_answer: Optional[float] = None
    mean_own_mass_removed: Optional[float] = None
    where: Optional[str] = None


class JudgeTest(ResultModel):
    """One tested judge: the decision, the test that made it, and what the intervention did."""

    causal: Optional[bool] = None
    causal_unadjusted: Optional[bool] = None
    p_value: Optional[float] = None
    p_holm: Optional[float] = None
    test_alpha: float = 0.05
    reason: Optional[str] = None
    verdict: str = ""
    notes: list[str] = Field(default_factory=list)
    n_test: Optional[int] = None
    test: Optional[BetweenTest] = None
    within_judge: Optional[WithinJudge] = None
    effect: Optional[JudgeEffect] = None
    effects: dict[str, PairedEffect] = Field(default_factory=dict)
    before: Behaviour = Field(default_factory=Behaviour)
    # variant name -> its record (a slot per kind: attention, steering, nodes, a user's own) and the behaviour under it
    variants: dict[str, dict] = Field(default_factory=dict)
    own: Optional[str] = None
    share_removed: Optional[Share] = None
    share_removed_reason: Optional[str] = None
    gap_before: Optional[Share] = None
    gap_after: Optional[Share] = None
    masked_mass: Optional[MaskedMass] = None
    controls: dict[str, ControlRecord] = Field(default_factory=dict)
    per_item_delta: dict[str, float] = Field(default_factory=dict)
    dbg_test_before: Optional[GapGate] = None  # the gap gate: the judge's gap against its controls before
    mirror: Optional[MirrorShares] = None  # unjustified flipped and legitimate kept shares
    null: Optional[str] = None  # how the controls' sets were chosen (matched, or the judge's own set)
    control_sets: Optional[dict[str, dict]] = None  # control -> its variant's identity
    selection_items: Optional[list[str]] = None
    test_items: Optional[list[str]] = None
    random_head_sets: Optional[RandomHeadSets] = None  # --top-heads: the random head sets' effects
    specificity: Optional[Specificity] = None  # the check a verdict needs; None in a file from before it

    @property
    def control_names(self) -> list[str]:
        """The control judges, in the order tested."""
        return list(self.test.controls) if self.test is not None and self.test.controls else list(self.controls)

    @property
    def self_effect(self) -> Optional[PairedEffect]:
        """The judge's own change of P(own) with its interval: the within-judge effect."""
        if self.within_judge is not None:
            return PairedEffect(mean=self.within_judge.effect, ci=self.within_judge.ci)
        return self.effects.get("self")


class Reused(ResultModel):
    """What the test read from the run instead of making it again."""

    responses: int = 0
    responses_generated: int = 0
    gold_verdicts: int = 0
    gold_judges_rerun: int = 0
    gold_judges: list[str] = Field(default_factory=list)


class TestClaim(ResultModel):
    """What the test claims and against which control judges (per tested judge)."""

    kind: str = "between-judge"
    claim: str = ""
    controls: dict[str, list[str]] = Field(default_factory=dict)
    min_controls: int = 3


class CausalResult(ResultModel):
    """`result.json` of one causal test: the design, the items and one `JudgeTest` per tested judge."""

    schema_version: int = 1
    spec: dict = Field(default_factory=dict)  # the intervention's keys (`to_dict`): its kind's, a user's own kinds too
    design: TestDesignRecord = Field(default_factory=TestDesignRecord)
    run_dir: str = ""
    n_items: int = 0
    split: str = "all items"
    selection_items: list[str] = Field(default_factory=list)
    test_items: list[str] = Field(default_factory=list)
    backend: Optional[str] = None
    test: Optional[TestClaim] = None
    reused: Reused = Field(default_factory=Reused)
    judges: dict[str, JudgeTest] = Field(default_factory=dict)
    multiple_comparisons: Optional[str] = None
    variant_keys: Optional[dict[str, dict[str, str]]] = None  # judge -> variant name -> its key
    control_variant_keys: Optional[dict[str, dict[str, str]]] = None  # judge -> control -> its variant's key
