"""Scores of a run (docs/science.md, DBG): per judge, win rates for its own responses, DBG against gold."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np

from interp.config import RunConfig
from interp.core.models import own_model
from interp.data import Item
from interp.errors import InterpError
from interp.metrics.dbg import (
    dbg_scores,
    hard_win_rate,
    hard_wins,
    judge_reliability,
    p_own_from_first,
    position_consistency,
    soft_win_rate,
    swap_verdicts,
    tie_scores,
)
from interp.metrics.human import human_agreement
from interp.results import codec
from interp.results.run_files import GoldChecks
from interp.results.summary import RunSummary
from interp.run.correctness import grade_run_answers
from interp.run.gold import aggregate_gold
from interp.run.gold.human import human_labels
from interp.run.pointwise import pointwise_summary, read_pointwise
from interp.run.reasoning import reasoning_summary
from interp.run.records import JudgmentRecord
from interp.run.store import RunDir, empty_answers


def p_first_model_wins(
    records: Sequence[JudgmentRecord], items: Sequence[Item], first_model: str
) -> tuple[np.ndarray, np.ndarray]:
    """Per item, P(first model's response wins) in order ab (it is in slot A) and in order ba (slot B).

    With ties allowed (A/T/B) a tie counts half for each side.
    """
    by_key = {(r.item_id, r.order): r for r in records}
    ab, ba = [], []
    for item in items:
        try:
            r_ab, r_ba = by_key[(item.id, "ab")], by_key[(item.id, "ba")]
        except KeyError:
            raise InterpError(f"item {item.id!r} has not been judged in both orders; resume the run") from None
        if r_ab.model_a != first_model or r_ba.model_b != first_model:
            raise InterpError(f"item {item.id!r}: slot authors do not match the run's model order")
        tie_ab, tie_ba = (r_ab.p_t or 0.0) / 2, (r_ba.p_t or 0.0) / 2
        ab.append(r_ab.p_a + tie_ab)
        ba.append(r_ba.p_b + tie_ba)
    return np.array(ab), np.array(ba)


def p_first_model(records: Sequence[JudgmentRecord], items: Sequence[Item], first_model: str) -> np.ndarray:
    """Per item, P(first model's response wins), the mean over both orders (position bias averaged out)."""
    ab, ba = p_first_model_wins(records, items, first_model)
    return (ab + ba) / 2


class JudgeVerdicts(NamedTuple):
    """One judge's verdicts on the items of a run, beside gold's."""

    own: str  # the judge's own model (`own_model`: an organism's base)
    ab: np.ndarray  # per item, P(first model's answer wins) with it in slot A
    ba: np.ndarray  # ... in slot B
    p_own: np.ndarray  # per item, P(own answer wins), mean over both orders
    gold_own: np.ndarray  # gold's P(own answer wins)
    slot_a_rate: float  # share of all the judge's judgments in the run that pick slot A


def judge_verdicts(run_dir: Path, judge: str, items: Sequence[str] | None = None) -> JudgeVerdicts:
    """`judge`'s verdicts in `run_dir`, on the items with ids `items` (all when None); judgments read once.
    The judge's own model must be one of the run's two authors, and the run must have gold."""
    paths = RunDir(Path(run_dir))
    config = paths.read_config()
    chosen = None if items is None else set(items)
    items = [item for item in paths.read_items() if chosen is None or item.id in chosen]
    first_model = config.models[0]
    own = own_model(judge)
    if own not in config.models:
        raise InterpError(
            f"judge {judge!r}: its own model {own!r} is not one of the run's authors ({', '.join(config.models)})"
        )
    judgments = paths.read_judgments(judge=judge)
    ab, ba = p_first_model_wins(judgments, items, first_model)
    gold = paths.read_gold()
    if not gold:
        raise InterpError(f"run directory {paths.root} has no gold verdicts (gold.jsonl)")
    gold_first = np.array(aggregate_gold({name: [v[i.id] for i in items] for name, v in gold.items()}))
    p_own = p_own_from_first((ab + ba) / 2, own, first_model)
    gold_own = p_own_from_first(gold_first, own, first_model)
    slot_a = float(np.mean(hard_wins(np.array([r.p_a for r in judgments]))))  # a tie picks neither slot: half
    return JudgeVerdicts(own, ab, ba, p_own, gold_own, slot_a)


def judge_scores(
    records: Sequence[JudgmentRecord],
    items: Sequence[Item],
    models: Sequence[str],
    judge: str,
    gold_first: np.ndarray,
    *,
    n_boot: int,
    seed: int,
) -> dict:
    """One judge's scores in summary.json: position consistency, win rates, DBG against gold and its intervals."""
    ab, ba = p_first_model_wins(records, items, models[0])
    first = (ab + ba) / 2
    scores = {
        "n_judgments": len(records),
        "position_consistency": position_consistency(ab, ba),
        "win_rate_first_hard": hard_win_rate(first),
        "win_rate_first_soft": soft_win_rate(first),
        "top_not_label": int(sum(r.top_is_label is False for r in records)),
        "mean_label_mass": float(
            np.mean([r.label_mass for r in records if r.label_mass is not None] or [float("nan")])
        ),
    }
    # Too weak a judge: its DBG is reported, flagged, never read as evidence (thresholds in metrics.dbg).
    scores["unreliable_because"] = judge_reliability(scores["position_consistency"], scores["mean_label_mass"])
    scores["reliable"] = not scores["unreliable_because"]
    own = own_model(judge)  # an organism's own answers are its base model's
    if own in models:
        p_own = p_own_from_first(first, own, models[0])
        gold_own = p_own_from_first(gold_first, own, models[0])
        scores["own_model"] = own
        scores |= dbg_scores(p_own, gold_own, n_boot=n_boot, seed=seed)
        own_orders = p_own_from_first(ab, own, models[0]), p_own_from_first(ba, own, models[0])
        scores |= tie_scores(swap_verdicts(*own_orders), gold_own)  # Figure 8: ties, and the rates without them
        scores["dbg_ci"] = list(scores["dbg_ci"])
        scores["dbg_soft_ci"] = list(scores["dbg_soft_ci"])
    return scores


def compute_summary(
    config: RunConfig, records: Sequence[JudgmentRecord], items: Sequence[Item], gold: dict[str, list[float]]
) -> dict:
    """summary.json of a run's judgments: every judge's scores against the aggregated gold."""
    models = list(config.models)
    gold_first = np.array(aggregate_gold(gold))
    judges = {}
    for judge in config.judge_specs if config.mode == "pairwise" else ():  # pointwise: `write_summary`
        judge_records = [r for r in records if r.judge == judge]
        judges[judge] = judge_scores(
            judge_records, items, models, judge, gold_first, n_boot=config.n_boot, seed=config.seed
        )
    gold_hard = hard_win_rate(gold_first)
    summary = {
        "n_items": len(items),
        "models": models,
        "max_words": config.max_words,
        "tasks": sorted({item.task for item in items}),
        "judges": judges,
        "gold": {
            "judges": list(gold),
            "win_rate": {models[0]: gold_hard, models[1]: 1 - gold_hard},
            "win_rate_soft": {models[0]: soft_win_rate(gold_first), models[1]: 1 - soft_win_rate(gold_first)},
        },
        "label_handling": "P(label) sums the single-token spellings 'A' and ' A' (likewise B, T), "
        "renormalised over the labels",
    }
    if config.gold.human:
        summary["gold"]["human"] = gold_against_humans(
            gold, human_labels(config.gold.human, items, models), items, n_boot=config.n_boot, seed=config.seed
        )
    return summary


def gold_against_humans(
    gold: dict[str, list[float]], human: dict[str, float], items: Sequence[Item], *, n_boot: int, seed: int
) -> dict:
    """Table 1: on the items people labelled, each gold judge's and the ensemble's agreement with them."""
    rows = [index for index, item in enumerate(items) if item.id in human]
    labels = [human[items[index].id] for index in rows]
    picked = {name: [values[index] for index in rows] for name, values in gold.items()}
    per_judge = {name: human_agreement(values, labels, n_boot=n_boot, seed=seed) for name, values in picked.items()}
    return {
        "n_items": len(rows),
        "judges": per_judge,
        "ensemble": human_agreement(aggregate_gold(picked), labels, n_boot=n_boot, seed=seed),
    }


def write_summary(
    config: RunConfig,
    paths: RunDir,
    items: Sequence[Item],
    gold: dict[str, list[float]],
    placement: dict | None = None,
    sizes: dict[str, int] | None = None,
) -> RunSummary:
    """summary.json (through the codec: a `RunSummary`); `placement` records where the run's local models ran (device,
    dtype, device map), `sizes` the parameter count of each local model of the run (`model_sizes`: runs compared across
    sizes)."""
    summary = compute_summary(config, paths.read_judgments(), items, gold)
    if placement is not None:
        summary["placement"] = placement
    if sizes:
        summary["model_sizes"] = dict(sizes)
    if paths.gold_checks.exists():
        summary["gold"]["checks"] = codec.read_file(paths.gold_checks, GoldChecks).judges
    reasoning = reasoning_summary(paths.read_reasoning(), len(items))
    if reasoning:  # reasoning removed from answers before judging (Table 2): per author, how much
        summary["reasoning"] = reasoning
    if (
        config.mode == "pointwise"
    ):  # SALIERI's 1-5 scores per judge and author (the SALIERI score: `interp metrics run`)
        summary["pointwise"] = pointwise_summary(read_pointwise(paths.pointwise), config.models)
    if config.grader != "none":  # Chen et al.'s graders: per author, how many answers were graded and correct
        summary["correctness"] = grade_run_answers(
            paths.correctness, items, paths.read_responses(), config.models, config.grader
        )
    if config.empty_answers == "judge":  # judged as they are, and counted: model -> item ids
        summary["empty_answers"] = {
            model: sorted(ids) for model, ids in empty_answers(paths.read_responses(), items).items()
        }
    return codec.write_summary(paths.summary, summary)
