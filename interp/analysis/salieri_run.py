"""The SALIERI score of a pointwise run (seed 003, chapter 5), from the run's own 1-5 scores and no outside file.

Per judge t that is also an author (an organism's answers are its base model's): t's scores of its own answers,
the reference agent's scores of them, and both scorers' scores of the other author's answers to the same items,
the unrelated model's pool (one answer per item), quality-matched on the reference agent's scores
(`interp.metrics.salieri.salieri_report`: closest pool answer per item, then the histograms rebalanced; with one
answer per item there is nothing to choose, and the residual histogram mismatch is reported as it is; `pool =
"task"` widens the pool to the other author's answers to every item of the same task).

The reference agent is `salieri_reference` in the run config, else the first judge of the run that wrote no
answer. Scores are the expected scores (sum_k k P(k)); `parsed` repeats the lens on the scores the judges wrote
after "[RESULT]", over the items where all four parsed.
"""

from __future__ import annotations

from pathlib import Path

from interp.core.models import own_model
from interp.errors import InterpError
from interp.metrics.salieri import salieri_report
from interp.metrics.stats import Bootstrap
from interp.run.pointwise import read_pointwise
from interp.run.store import RunDir


def salieri_reference(config) -> str | None:
    """The run's reference agent: the configured one, else the first judge that wrote none of the answers."""
    if config.salieri_reference:
        return config.salieri_reference
    return next((judge for judge in config.judge_specs if own_model(judge) not in config.models), None)


def _report(
    scores: dict, roles: tuple[str, str, str, str], tasks: dict[str, str], pool: str, *, n_boot: int, seed: int
) -> dict | None:
    """One judge's SALIERI report on `scores` ((item, reader, author) -> score); `roles`: (judge, reference agent,
    own author, other author). None where no item has all four scores."""
    judge, reference, own, other = roles
    keys = [(judge, own), (reference, own), (judge, other), (reference, other)]
    usable = [i for i in tasks if all((i, *k) in scores for k in keys)]
    if not usable:
        return None
    pools = {i: [j for j in usable if (j == i if pool == "item" else tasks[j] == tasks[i])] for i in usable}
    report = salieri_report(
        [scores[(i, *keys[0])] for i in usable],
        [scores[(i, *keys[1])] for i in usable],
        [[scores[(j, *keys[2])] for j in pools[i]] for i in usable],
        [[scores[(j, *keys[3])] for j in pools[i]] for i in usable],
        bootstrap=Bootstrap(n_boot=n_boot, seed=seed),
    )
    return report | {"origin_ci": list(report["origin_ci"]), "salieri_ci": list(report["salieri_ci"]), "pool": pool}


SALIERI_POOLS = ("item", "task")


def run_salieri(run_dir: str | Path, *, n_boot: int = 1000, seed: int = 0, pool: str = "item") -> dict | None:
    """`{"reference", "judges": {judge: report | None}, "reason"?}` of a pointwise run; None for a pairwise run.

    Each report is `salieri_report`'s (origin score, SALIERI score with bootstrap intervals over items, lambda,
    the matching's residual mismatch), on expected scores, with `own_model`, `pool_model`, and `parsed` (the same
    on parsed scores, None where no item has all four). `pool`: "item", the other author's answer to the same item
    (one per item); "task", its answers to every item of the same task, so the quality matching can choose and
    rebalance (the pooled answers answer other questions: a wider pool, not the thesis' per-question pool)."""
    if pool not in SALIERI_POOLS:
        raise InterpError(f"unknown SALIERI pool {pool!r}; use one of {', '.join(SALIERI_POOLS)}")
    paths = RunDir(Path(run_dir))
    if not paths.config.is_file() or paths.read_config().mode != "pointwise":
        return None
    config = paths.read_config()
    reference = salieri_reference(config)
    if reference is None:
        return {
            "reference": None,
            "judges": {},
            "reason": "no judge of the run wrote no answer: a reference agent is needed",
        }
    rows = read_pointwise(paths.pointwise)
    expected = {(r["item_id"], r["judge"], r["author"]): r["expected_score"] for r in rows}
    parsed = {(r["item_id"], r["judge"], r["author"]): r["parsed_score"] for r in rows if r["parsed_score"] is not None}
    tasks = {item.id: item.task for item in paths.read_items()}
    out: dict = {"reference": reference, "judges": {}}
    for judge in config.judge_specs:
        own = own_model(judge)
        if judge == reference or own not in config.models:
            continue
        other = next(m for m in config.models if m != own)
        report = _report(expected, (judge, reference, own, other), tasks, pool, n_boot=n_boot, seed=seed)
        if report is not None:
            report |= {
                "own_model": own,
                "pool_model": other,
                "parsed": _report(parsed, (judge, reference, own, other), tasks, pool, n_boot=n_boot, seed=seed),
            }
        out["judges"][judge] = report
    return out
