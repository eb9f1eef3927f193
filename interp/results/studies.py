"""The files the studies built on the causal test write, one model each, with the nested tables typed as the
submodels below (read by attribute: `table.rows[0].effect.ci`):

- `ValidationResult`: `OUT/validation.json` of `interp organism validate` (known truth against the verdicts);
- `RestyleResult`: `OUT/restyle.json` of `interp restyle` (DBG before and after a rewrite, per judge);
- `SteeringTable`: `RUN/steering/tables/<key>/table.json` (the five-row steering table per judge);
- `AttentionSummary`: `RUN/figures/attention_summary.json` (top heads, the length regression, the files);
- `OrganismMetrics`: `OUT/organism_metrics.json` of `interp organism evaluate` (metrics per judge);
- `DirectionSidecar`: a steering direction's `.json` beside its tensors (`interp.locate.directions`).

A submodel's fields are declared in the order its writer sets the keys, and only what was set is written
(`ResultModel.to_json`), so a file reads back and is written again byte for byte. A number a caller chose (a
setting) is `Number`: an int stays an int in the file. Where a mapping stays a dict, its comment says why.
"""

from __future__ import annotations

from typing import Optional, Union

from pydantic import Field

from interp.metrics.judge_level import WithinJudge
from interp.results.base import ResultModel
from interp.results.causal import (
    Behaviour,
    BetweenTest,
    GapGate,
    JudgeEffect,
    MaskedMass,
    MirrorShares,
    PairedEffect,
    Reused,
    Share,
    TestClaim,
)

Number = Union[int, float]
"""A number as its writer gave it (a float field would write a caller's `4` as `4.0`)."""
Interval = list[Optional[float]]
"""A [low, high] interval (None: not computed)."""


# ---- validation.json ------------------------------------------------------------------------------


class ValidationSplits(ResultModel):
    """The item ids of the selection split (heads and direction chosen on it) and of the test split (measured on)."""

    selection: list[str] = Field(default_factory=list)
    test: list[str] = Field(default_factory=list)
    chosen_on: Optional[str] = None
    measured_on: Optional[str] = None


class ValidationJudgeTest(ResultModel):
    """An organism's causal test (or its top-heads localization) as validation.json keeps it: the fields of its
    `JudgeTest` in `result.json` that the validation reads, in this order."""

    verdict: str = ""
    causal: Optional[bool] = None
    reason: Optional[str] = None
    p_value: Optional[float] = None
    p_holm: Optional[float] = None
    test_alpha: Optional[float] = None
    effect: Optional[JudgeEffect] = None
    n_test: Optional[int] = None
    test: Optional[BetweenTest] = None
    within_judge: Optional[WithinJudge] = None
    gap_before: Optional[Share] = None
    gap_after: Optional[Share] = None
    share_removed: Optional[Share] = None
    share_removed_reason: Optional[str] = None
    controls: Optional[dict[str, dict]] = None  # `JudgeTest.controls` as written (control -> its record)
    masked_mass: Optional[MaskedMass] = None  # as `JudgeTest.masked_mass`
    before: Optional[Behaviour] = None  # the judge's behaviour (`interp.metrics.behaviour.behaviour`), as `JudgeTest`
    variants: Optional[dict[str, dict]] = None  # variant -> its record and behaviour, as `JudgeTest`
    effects: dict[str, PairedEffect] = Field(default_factory=dict)


class PositiveControl(ResultModel):
    """Both answers masked at every layer: the change of P(own), and the organism's behaviour before and after
    (behaviour records of `interp.engine.judges.evaluate`, kept as they are)."""

    effect: Optional[PairedEffect] = None
    before: dict = Field(default_factory=dict)
    after: dict = Field(default_factory=dict)


class BandSweep(ResultModel):
    """The planted organism's target x layer-band sweep: each band's change of P(own), the variants' records (as
    `evaluate` writes them) and the finding."""

    effects: dict[str, PairedEffect] = Field(default_factory=dict)
    variants: dict[str, dict] = Field(default_factory=dict)
    finding: str = ""


class LeverDirection(ResultModel):
    """Where the validation's steering direction lies: its layer, its probe accuracy and its training items."""

    layer: Optional[int] = None
    probe_accuracy: dict[str, Optional[float]] = Field(default_factory=dict)  # train, heldout, *_paired
    train_items: Optional[str] = None


class SteeringLevers(ResultModel):
    """The planted organism's steering levers on the test items: the direction, each lever's change of P(own)
    and its behaviour after (`dbg_hard`, `dbg_ci`, `mean_p_own`, `gold_agreement`, as `behaviour` names them)."""

    direction: Optional[LeverDirection] = None
    effects: dict[str, PairedEffect] = Field(default_factory=dict)
    after: dict[str, dict] = Field(default_factory=dict)


class Figure7Layer(ResultModel):
    """One layer of Figure 7: own and other attention, their difference and its interval."""

    layer: Optional[Number] = None
    own: Optional[float] = None
    other: Optional[float] = None
    diff: Optional[float] = None
    ci_low: Optional[float] = None
    ci_high: Optional[float] = None


class ValidationOrganism(ResultModel):
    """What the toolkit found for one organism on the test split."""

    metrics: dict = Field(default_factory=dict)  # `judge_metrics` (compare_judges' record, as organism_metrics.json)
    unreliable_because: list[str] = Field(default_factory=list)
    top_heads_selection: list[list[Number]] = Field(default_factory=list)  # [layer, head, own - other]
    figure7_own_minus_other: list[Figure7Layer] = Field(default_factory=list)
    causal_test: Optional[ValidationJudgeTest] = None
    localization: Optional[ValidationJudgeTest] = None
    positive_control: Optional[PositiveControl] = None
    sweep: Optional[BandSweep] = None
    steering: Optional[SteeringLevers] = None


class TruthRow(ResultModel):
    """One check: the claim, its known truth, the toolkit's verdict and whether they agree (None: not scored)."""

    claim: str = ""
    known_truth: str = ""
    toolkit: str = ""
    agrees: Optional[bool] = None


class ValidationResult(ResultModel):
    """`validation.json`: the plan, the run, the split, per organism what the toolkit found, the legitimate gap
    and the truth table (known truth against the toolkit's verdict, one row per claim)."""

    schema_version: int = 1
    plan: dict = Field(default_factory=dict)  # `ValidationPlan`'s fields as run (a dataclass of the study's own)
    run_dir: str = ""
    splits: ValidationSplits = Field(default_factory=ValidationSplits)
    organisms: dict[str, ValidationOrganism] = Field(default_factory=dict)
    legitimate_gap: Optional[dict] = None  # `interp.organisms.evaluate.legitimate_gap`'s record, as it returns it
    truth_table: list[TruthRow] = Field(default_factory=list)


# ---- restyle.json -----------------------------------------------------------------------------------


class RewriterRecord(ResultModel):
    """What determines the rewrites (`interp.run.rewriting.Rewriter.record`): the style, the kind of rewriter
    (normaliser, local, server), its name, the prompt's version and text, the weights' fingerprint, the server."""

    style: str = ""
    kind: str = ""
    rewriter: Optional[str] = None
    prompt_version: Optional[int] = None
    prompt: Optional[str] = None
    fingerprint: Optional[str] = None
    url: Optional[str] = None


class EmbedderRecord(ResultModel):
    """The model whose mean-pooled hidden states give the similarity of an original to its rewrite."""

    model: str = ""
    pooling: Optional[str] = None
    proxy_for: Optional[str] = None


class RestyleClaim(TestClaim):
    """The judge-level test a restyle makes (the claim, each judge's control judges) and its level."""

    alpha: Optional[float] = None


class Similarity(ResultModel):
    """Cosine similarity of originals to their rewrites (one author's, or all): count, mean, minimum, the rewrites
    below `threshold` (their ids; a judge's record leaves them out) and, per author, the unrelated yardstick."""

    n: int = 0
    mean: Optional[float] = None
    min: Optional[float] = None
    n_flagged: int = 0
    flagged: Optional[list[str]] = None
    threshold: Optional[float] = None
    unrelated_mean: Optional[float] = None  # an original against another item's original of the same author


class RestyleSimilarity(ResultModel):
    """The semantic check of a restyle: per author and overall."""

    per_author: dict[str, Similarity] = Field(default_factory=dict)
    overall: Optional[Similarity] = None


class JudgeLevelTest(ResultModel):
    """The between-judge test of a restyle, in the order `interp.metrics.judge_level` writes it: Crawford-Howell of
    the judge's change (`x`) against its k control judges' (`control_effects`), t with df = k - 1. The fields of
    `interp.results.causal.BetweenTest` in restyle.json's order (`alternative` and `p_rank_controls` before
    `control_effects`): read as `BetweenTest`, a file would be written back with those keys moved."""

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
    alternative: Optional[str] = None
    p_rank_controls: Optional[float] = None
    control_effects: list[float] = Field(default_factory=list)
    p_rank: Optional[float] = None
    controls: list[str] = Field(default_factory=list)


class GapInterval(ResultModel):
    """A DBG gap or the share of it removed, as `interp.metrics` writes it: a bootstrap interval (`n_boot`,
    `n_dropped`) or Fieller's set for the ratio (`kind`, `df`, `t`, `bounded`): `interp.results.causal.Share` in
    the order restyle.json holds it (`bounded` last)."""

    estimate: Optional[float] = None
    low: Optional[float] = None
    high: Optional[float] = None
    level: Optional[float] = None
    n_boot: Optional[int] = None
    n_dropped: Optional[int] = None
    kind: Optional[str] = None  # bounded | two rays | whole line
    df: Optional[float] = None
    t: Optional[float] = None
    bounded: Optional[bool] = None


class RestyleJudge(ResultModel):
    """One judge of a restyle: DBG and P(own) before and after, the judge-level test's fields (`causal`, `p_value`,
    `test`, `within_judge`, the gaps and the share removed, the verdict) and its own answers' similarity."""

    own: str = ""
    dbg_before: Optional[float] = None
    dbg_after: Optional[float] = None
    dbg_before_ci: Interval = Field(default_factory=list)
    dbg_after_ci: Interval = Field(default_factory=list)
    dbg_soft_before: Optional[float] = None
    dbg_soft_after: Optional[float] = None
    p_own_before: Optional[float] = None
    p_own_after: Optional[float] = None
    causal: Optional[bool] = None
    p_value: Optional[float] = None
    test_alpha: float = 0.05
    reason: Optional[str] = None
    test: JudgeLevelTest = Field(default_factory=JudgeLevelTest)
    within_judge: Optional[WithinJudge] = None
    p_holm: Optional[float] = None
    n_test: Optional[int] = None
    notes: list[str] = Field(default_factory=list)
    verdict: str = ""
    effect: Optional[JudgeEffect] = None
    gap_before: Optional[GapInterval] = None
    gap_after: Optional[GapInterval] = None
    dbg_test_before: Optional[GapGate] = None  # the gap gate's test record, as `JudgeTest.dbg_test_before`
    share_removed: Optional[GapInterval] = None
    share_removed_reason: Optional[str] = None
    similarity: Optional[Similarity] = None
    causal_unadjusted: Optional[bool] = None  # the decision before Holm over the judges


class RestyleResult(ResultModel):
    """`restyle.json`: the source and derived runs, the rewriter, the semantic check and per judge DBG before
    and after with the between-judge test of the change."""

    schema_version: int = 1
    source_run: str
    derived_run: str
    key: str
    restyle: RewriterRecord = Field(default_factory=RewriterRecord)
    gold_judges: list[str] = Field(default_factory=list)
    embedder: EmbedderRecord = Field(default_factory=EmbedderRecord)
    threshold: float
    n_items: int
    test: RestyleClaim = Field(default_factory=RestyleClaim)
    similarity: RestyleSimilarity = Field(default_factory=RestyleSimilarity)
    judges: dict[str, RestyleJudge] = Field(default_factory=dict)
    multiple_comparisons: Optional[str] = None  # Holm over the judges, where more than one was tested
    projection: Optional[str] = None  # the projection the similarity figure used
    figures: dict[str, str] = Field(default_factory=dict)


# ---- steering's table.json -------------------------------------------------------------------------


class TableSettings(ResultModel):
    """The settings of a steering table (`interp.studies.steering.SteeringSettings`, and the backend) as run."""

    layer: Optional[int] = None  # None: the middle block
    position: str = "spans"
    coefficient: Number = -1.0
    coefficient_units: Optional[str] = None
    emphasis_alpha: Number = 4.0
    k_heads: Optional[int] = None
    positions: str = "all"
    train_fraction: Number = 0.7
    seed: int = 0
    backend: Optional[str] = None


class ProbeAccuracy(ResultModel):
    """A direction's probe accuracy on its training and held-out items, and the paired accuracies."""

    train: Optional[float] = None
    heldout: Optional[float] = None
    train_paired: Optional[float] = None
    heldout_paired: Optional[float] = None


class ProbeCounts(ResultModel):
    """How many items and examples a direction was computed from (train) and scored on (held out)."""

    train_items: int = 0
    heldout_items: int = 0
    train_examples: int = 0
    heldout_examples: int = 0


class DirectionProbe(ResultModel):
    """Where a judge's steering direction lies and how well it separates own from other
    (`SteeringDirection.probe_record`)."""

    layer: int
    position: str
    norm: Optional[float] = None
    accuracy: ProbeAccuracy = Field(default_factory=ProbeAccuracy)
    n: ProbeCounts = Field(default_factory=ProbeCounts)
    train_ids: list[str] = Field(default_factory=list)
    heldout_ids: list[str] = Field(default_factory=list)
    mean_item_ids: list[str] = Field(default_factory=list)
    path: Optional[str] = None


class SteeringRow(ResultModel):
    """One row of the steering table: a judge under one intervention (or none), its behaviour, the paired change
    of P(own) against no intervention and the agreement with gold."""

    judge: str
    intervention: str
    description: str = ""
    variant: Optional[dict] = None  # `Variant.identity()`: the key's input, grouped by slot as every key was made
    dbg_hard: Optional[float] = None
    dbg_ci: Interval = Field(default_factory=list)
    dbg_soft: Optional[float] = None
    mean_p_own: Optional[float] = None
    win_rate_own_hard: Optional[float] = None
    effect: PairedEffect = Field(default_factory=PairedEffect)
    gold_agreement: Optional[float] = None
    gold_agreement_ci: Interval = Field(default_factory=list)
    n_items: int = 0
    mirror: Optional[MirrorShares] = None


class SteeringTable(ResultModel):
    """`table.json`: the run, the settings, each judge's probe and the rows (one per judge and intervention)."""

    schema_version: int = 1
    run_dir: str
    n_items: int
    settings: TableSettings = Field(default_factory=TableSettings)
    probe: dict[str, DirectionProbe] = Field(default_factory=dict)
    rows: list[SteeringRow] = Field(default_factory=list)
    reused: Reused = Field(default_factory=Reused)


# ---- attention_summary.json -------------------------------------------------------------------------


class TopHeadMean(ResultModel):
    """A top head by own-minus-other attention, per-token mean."""

    layer: int
    head: int
    own_minus_other_mean: Optional[float] = None


class TopHeadMass(ResultModel):
    """A top head by own-minus-other attention mass."""

    layer: int
    head: int
    own_minus_other_mass: Optional[float] = None


class LengthFit(ResultModel):
    """One judge's and statistic's OLS fit of own-minus-other attention on own-minus-other length
    (`interp.analysis.attention_stats.length_regression`; a non-finite number is None)."""

    judge: str = ""
    stat: str = ""
    slope: Optional[float] = None
    intercept: Optional[float] = None
    r: Optional[float] = None
    n: Optional[Number] = None
    mean_diff: Optional[float] = None
    mean_length_diff: Optional[float] = None


class AttentionSummary(ResultModel):
    """`attention_summary.json`: the judges and authors, per judge its top heads (by per-token mean and by mass),
    the length regression and the files written beside it (relative to the run)."""

    schema_version: int = 1
    judges: list[str] = Field(default_factory=list)
    authors: list[str] = Field(default_factory=list)
    readout: Optional[str] = None
    n_items: int = 0
    empty_spans: dict[str, int] = Field(default_factory=dict)
    top_heads: dict[str, list[TopHeadMean]] = Field(default_factory=dict)
    top_heads_mass: dict[str, list[TopHeadMass]] = Field(default_factory=dict)
    length_regression: list[LengthFit] = Field(default_factory=list)
    n_boot: Optional[int] = None
    seed: Optional[int] = None
    files: dict[str, str] = Field(default_factory=dict)


class OrganismMetrics(ResultModel):
    """`organism_metrics.json`: the metrics of each judge of one evaluation (`compare_judges`), by judge. A file
    written before its schema version held the judges at the top level (migrated by the codec)."""

    schema_version: int = 1
    # judge -> `compare_judges`' record: its keys follow the metrics that evaluation ran (pointwise or pairwise,
    # with or without human labels), so the record stays the dict it is
    judges: dict[str, dict] = Field(default_factory=dict)


class DirectionSidecar(ResultModel):
    """A steering direction's sidecar (`RUN/steering/directions/<judge>-L<layer>-<position>-<key>.json`, beside
    its tensors): whose direction, at which layer and position, the split it was computed on, its norm, midpoint
    and accuracies, and the backend and model that read the residuals."""

    schema_version: int = 1
    judge: str
    layer: int
    position: str
    seed: int
    train_fraction: float
    norm: Optional[float] = None
    midpoint: float
    d_model: Optional[int] = None
    train_ids: list[str] = Field(default_factory=list)
    heldout_ids: list[str] = Field(default_factory=list)
    mean_item_ids: list[str] = Field(default_factory=list)
    accuracy: dict = Field(default_factory=dict)
    n: dict = Field(default_factory=dict)
    backend: Optional[str] = None
    model: Optional[str] = None
