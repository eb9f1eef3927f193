"""Gold judges (docs/science.md, Gold): the protocol, the reference-based, recorded, local-model and HTTP judges."""

from interp.run.gold.model import ModelJudge
from interp.run.gold.protocol import (
    TIE_TOLERANCE,
    GoldJudge,
    Pair,
    ReportsChecks,
    aggregate_gold,
    check_gold_judges,
    gold_verdicts,
    run_gold,
    verdict,
)
from interp.run.gold.recorded import RecordedJudge
from interp.run.gold.reference import (
    ReferenceJudge,
    answer_match_score,
    distinct_trigram_ratio,
    normalize_answer,
    reference_score,
    token_f1,
)

__all__ = [
    "TIE_TOLERANCE",
    "GoldJudge",
    "ModelJudge",
    "Pair",
    "ReportsChecks",
    "RecordedJudge",
    "ReferenceJudge",
    "aggregate_gold",
    "answer_match_score",
    "check_gold_judges",
    "distinct_trigram_ratio",
    "gold_verdicts",
    "normalize_answer",
    "reference_score",
    "run_gold",
    "token_f1",
    "verdict",
]
