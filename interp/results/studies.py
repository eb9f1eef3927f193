"""The files the studies built on the causal test write, one model each, with the fields every reader uses typed
and each study's own tables kept as the nested data they are:

- `ValidationResult`: `OUT/validation.json` of `interp organism validate` (known truth against the verdicts);
- `RestyleResult`: `OUT/restyle.json` of `interp restyle` (DBG before and after a rewrite, per judge);
- `SteeringTable`: `RUN/steering/tables/<key>/table.json` (the five-row steering table per judge);
- `AttentionSummary`: `RUN/figures/attention_summary.json` (top heads, the length regression, the files);
- `OrganismMetrics`: `OUT/organism_metrics.json` of `interp organism evaluate` (metrics per judge);
- `DirectionSidecar`: a steering direction's `.json` beside its tensors (`interp.locate.directions`).
"""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from interp.results.base import ResultModel


class ValidationResult(ResultModel):
    """`validation.json`: the plan, the run, the split, per organism what the toolkit found, the legitimate gap
    and the truth table (known truth against the toolkit's verdict, one row per claim)."""

    schema_version: int = 1
    plan: dict = Field(default_factory=dict)
    run_dir: str = ""
    splits: dict = Field(default_factory=dict)
    organisms: dict[str, dict] = Field(default_factory=dict)
    legitimate_gap: Optional[dict] = None
    truth_table: list[dict] = Field(default_factory=list)


class RestyleResult(ResultModel):
    """`restyle.json`: the source and derived runs, the rewriter, the semantic check and per judge DBG before
    and after with the between-judge test of the change."""

    schema_version: int = 1
    source_run: str
    derived_run: str
    key: str
    restyle: dict = Field(default_factory=dict)
    gold_judges: list[str] = Field(default_factory=list)
    embedder: dict = Field(default_factory=dict)
    threshold: float
    n_items: int
    test: dict = Field(default_factory=dict)
    similarity: dict = Field(default_factory=dict)
    judges: dict[str, dict] = Field(default_factory=dict)
    multiple_comparisons: Optional[str] = None  # Holm over the judges, where more than one was tested
    projection: Optional[str] = None  # the projection the similarity figure used
    figures: dict[str, str] = Field(default_factory=dict)


class SteeringTable(ResultModel):
    """`table.json`: the run, the settings, each judge's probe and the rows (one per judge and intervention)."""

    schema_version: int = 1
    run_dir: str
    n_items: int
    settings: dict = Field(default_factory=dict)
    probe: dict[str, dict] = Field(default_factory=dict)
    rows: list[dict] = Field(default_factory=list)
    reused: dict = Field(default_factory=dict)


class AttentionSummary(ResultModel):
    """`attention_summary.json`: the judges and authors, per judge its top heads (by per-token mean and by mass),
    the length regression and the files written beside it (relative to the run)."""

    schema_version: int = 1
    judges: list[str] = Field(default_factory=list)
    authors: list[str] = Field(default_factory=list)
    readout: Optional[str] = None
    n_items: int = 0
    empty_spans: dict[str, int] = Field(default_factory=dict)
    top_heads: dict[str, list[dict]] = Field(default_factory=dict)
    top_heads_mass: dict[str, list[dict]] = Field(default_factory=dict)
    length_regression: list[dict] = Field(default_factory=list)
    n_boot: Optional[int] = None
    seed: Optional[int] = None
    files: dict[str, str] = Field(default_factory=dict)


class OrganismMetrics(ResultModel):
    """`organism_metrics.json`: the metrics of each judge of one evaluation (`compare_judges`), by judge. A file
    written before its schema version held the judges at the top level (migrated by the codec)."""

    schema_version: int = 1
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
