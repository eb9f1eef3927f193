"""The familiarity lens of a run (`interp metrics familiarity`, `interp.run.familiarity`):

- `FamiliarityScores`: `familiarity/<judge>-<key>.json`, every answer's token log-probabilities under one judge
  (the answer conditioned on its instruction in the answer-generation prompt), keyed by the judge's weights and
  tokenizer and the prompt format; rewritten after each answer, so a killed job keeps what it finished;
- `FamiliarityResult`: `familiarity.json`, the lens per judge (own-minus-other log-probability, P(own)
  against it, DBG within familiarity strata beside plain DBG) and, per organism, the same against its null family.
"""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from interp.results.base import ResultModel


class AnswerLogprob(ResultModel):
    """One answer's tokens under a judge: how many, the sum and mean of their log-probabilities (nats), and the
    hash of the instruction and answer text it was computed on (a changed answer is computed again)."""

    item_id: str
    author: str
    text_hash: str
    n_tokens: int
    sum_logprob: float
    mean_logprob: Optional[float] = None  # None for an empty answer (no token)


class FamiliarityScores(ResultModel):
    """Every answer's log-probabilities under one judge, keyed by `key` (the judge's fingerprint, the prompt
    format and the conditioning)."""

    schema_version: int = 1
    judge: str
    key: str
    judge_fingerprint: str
    conditioning: str
    rows: list[AnswerLogprob] = Field(default_factory=list)


class Estimate(ResultModel):
    """A number with its bootstrap interval (None where it is undefined, e.g. no item in a stratum)."""

    value: Optional[float] = None
    ci: list[Optional[float]] = Field(default_factory=lambda: [None, None])


class Stratum(ResultModel):
    """Items whose own-minus-other log-probability difference falls in one quantile bin."""

    low: float
    high: float
    n: int
    mean_difference: float
    dbg_hard: Estimate
    dbg_soft: Estimate


class JudgeFamiliarity(ResultModel):
    """The familiarity lens of one judge with own answers in the run."""

    own_model: str
    n_items: int
    own_logprob: float
    other_logprob: float
    own_perplexity: float
    other_perplexity: float
    difference: Estimate  # mean over items of own minus other mean token log-probability (nats)
    slope: Estimate  # logistic fit of P(own) on the difference: log-odds per nat
    intercept: Estimate  # the fit's log-odds at difference 0
    p_own_at_zero: Estimate  # the fit's P(own) where both answers are equally familiar
    dbg_hard: Estimate  # plain DBG (the run's definition), here with this lens' bootstrap
    dbg_soft: Estimate
    adjusted_dbg_hard: Estimate  # DBG's per-item part regressed on the difference: its value at difference 0
    adjusted_dbg_soft: Estimate
    matched_dbg_hard: Estimate  # DBG on the matched half: the items with the smallest |difference|
    matched_dbg_soft: Estimate
    matched_n: int
    matched_mean_difference: float  # the residual mismatch of the matched half (0 would be a perfect match)
    matched_mean_abs_difference: float
    strata: list[Stratum] = Field(default_factory=list)


class NullComparison(ResultModel):
    """An organism's DBG against its null family's mean, plain and at equal familiarity (the adjusted DBG)."""

    nulls: list[str]
    gap_hard: Estimate  # DBG(organism) - mean DBG(nulls)
    adjusted_gap_hard: Estimate  # the same of the adjusted DBGs
    explained_share: Estimate  # 1 - adjusted gap / gap: the part of the planted gap familiarity accounts for


class FamiliarityResult(ResultModel):
    """`familiarity.json`: the lens for every judge with own answers, and each organism against its nulls."""

    schema_version: int = 1
    conditioning: str
    n_boot: int
    seed: int
    level: float
    judges: dict[str, JudgeFamiliarity] = Field(default_factory=dict)
    organisms: dict[str, NullComparison] = Field(default_factory=dict)
    keys: dict[str, str] = Field(default_factory=dict)  # judge -> the key of the scores it read
