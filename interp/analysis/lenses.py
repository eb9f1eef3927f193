"""The seed metrics as lenses on a DBG run's judgment records: SPR-style self-preference, Chen et al. 2025
(with correctness flags), the Preference Leakage Score between two judges that are also the authors, and,
where the run has gold, the unjustified/legitimate self-preference rates and the Evaluator Quality Baseline
(`interp.metrics.bias_lenses`) beside DBG."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from interp.analysis.salieri_run import run_salieri
from interp.core.models import own_model
from interp.errors import InterpError
from interp.metrics.bias_lenses import evaluator_quality_baseline, self_preference_rates
from interp.metrics.chen2025 import (
    GAME1_TO_VERDICT,
    GAME2_TO_VERDICT,
    SELF,
    Chen2025Records,
    chen2025_bootstrap,
    chen2025_judge_table,
    game_labels,
    hard_verdict,
    macro_average,
    self_probability,
)
from interp.metrics.dbg import hard_wins
from interp.metrics.pls import preference_leakage_score
from interp.metrics.stats import bootstrap_ci
from interp.metrics.tables import flag, iter_jsonl
from interp.run.records import JudgmentRecord, read_judgments
from interp.run.relatedness import declared, relation
from interp.run.store import RunDir
from interp.run.summary import judge_verdicts


def _run_names(path: Path, judgments: Sequence[JudgmentRecord]) -> tuple[set[str], set[str]]:
    """(item ids, models) of the run a correctness file belongs to: its judgments' and answers'."""
    items = {j.item_id for j in judgments}
    models = {name for j in judgments for name in (j.model_a, j.model_b)}
    responses = path.parent / "responses.jsonl"
    if responses.is_file():
        for _, obj in iter_jsonl(responses):
            items.add(str(obj.get("item_id")))
            models.add(str(obj.get("model")))
    return items, models


def read_run_correctness(
    path: str | Path, judgments: Sequence[JudgmentRecord] | None = None
) -> dict[tuple[str, str], bool]:
    """Read a DBG run's ``correctness.jsonl`` (``{"item_id", "model", "correct": bool}``) into
    ``{(item_id, model): correct}``. Refused in one line naming the file and line: a missing field, two lines
    for one (item, model) that disagree, and (given the run's `judgments`) an item or model the run does not
    have (its judgments and answers), which would otherwise be dropped unseen."""
    path = Path(path)
    items, models = _run_names(path, judgments) if judgments is not None else (None, None)
    out: dict[tuple[str, str], bool] = {}
    for lineno, obj in iter_jsonl(path):
        where = f"{path}, line {lineno}"
        missing = [name for name in ("item_id", "model", "correct") if name not in obj]
        if missing:
            raise InterpError(f"{where}: missing field {', '.join(repr(m) for m in missing)}")
        key, correct = (str(obj["item_id"]), str(obj["model"])), flag(obj["correct"], "correct", where)
        if items is not None and key[0] not in items:
            raise InterpError(f"{where}: item {key[0]!r} is not one of this run's items")
        if models is not None and key[1] not in models:
            raise InterpError(f"{where}: model {key[1]!r} is not one of this run's models")
        if out.get(key, correct) != correct:
            raise InterpError(f"{where}: item {key[0]!r}, model {key[1]!r} graded again with the other verdict")
        out[key] = correct
    if not out:
        raise InterpError(f"{path}: no correctness records (empty file)")
    return out


def _atb(j: JudgmentRecord) -> list[float]:
    return [j.p_a, 0.0 if j.p_t is None else j.p_t, j.p_b]


def judgments_to_games(
    judgments: Sequence[JudgmentRecord],
) -> dict[tuple[str, str, str, str], tuple[list[float], list[float]]]:
    """Pair up the two orders: ``{(judge, author, other, item): (probs with author in A, probs with
    author in B)}`` for every judgment whose two orders are both present. Probabilities are
    ``[P(A), P(T), P(B)]``, P(T) = 0 when ties were not allowed."""
    by_slot: dict[tuple[str, str, str, str], JudgmentRecord] = {}
    for j in judgments:
        by_slot[(j.judge, j.item_id, j.model_a, j.model_b)] = j
    games = {}
    for (judge, item, first, second), j in by_slot.items():
        swapped = by_slot.get((judge, item, second, first))
        if swapped is None:
            continue
        games[(judge, first, second, item)] = (_atb(j), _atb(swapped))
    return games


def run_self_records(
    judgments: Sequence[JudgmentRecord],
    correctness: Mapping[tuple[str, str], bool] | None = None,
) -> Chen2025Records | None:
    """Turn a DBG run's judgments into Chen-style records for every judge that is also an author:
    game 1 = the order with the judge's own response in slot A, game 2 = in slot B. Correctness
    flags come from ``correctness`` (items without both flags are dropped); without it they are
    all False (only SPR-type metrics are then meaningful). None if no judge judged itself."""
    rows = []
    for (judge, author, other, item), (g1, g2) in sorted(judgments_to_games(judgments).items()):
        if author != own_model(judge):  # an organism judges as its base model
            continue
        if correctness is not None:
            if (item, judge) not in correctness or (item, other) not in correctness:
                continue
            jc, ec = correctness[(item, judge)], correctness[(item, other)]
        else:
            jc = ec = False
        rows.append((judge, other, item, jc, ec, g1, g2))
    return Chen2025Records.from_rows(rows, source="run") if rows else None


def run_self_preference(
    records: Chen2025Records, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> dict[str, dict]:
    """SPR-style self-preference of each judge in a DBG run (fractions).

    Per judge and evaluatee: SPR with the Eq. 1 hard verdict (Chen et al. 2025 Eq. 2), the DBG-style
    hard and soft win rates of the judge's own responses with ``p_own = 0.5 (P(A | own in A) +
    P(B | own in B))`` (DBG paper section 3), and position consistency (same per-game verdict in
    both orders). Judge level: macro-average over evaluatees, with a bootstrap interval over items.
    """
    out = {}
    judges = records.judge.astype(str)
    for judge in sorted(set(judges.tolist())):
        mine = records.subset(judges == judge)
        verdicts = hard_verdict(mine.game1_probs, mine.game2_probs)
        p_own = self_probability(mine.game1_probs, mine.game2_probs)
        v1 = GAME1_TO_VERDICT[game_labels(mine.game1_probs)]
        v2 = GAME2_TO_VERDICT[game_labels(mine.game2_probs)]
        per_evaluatee = {}
        evaluatees = mine.evaluatee.astype(str)
        for evaluatee in sorted(set(evaluatees.tolist())):
            sel = evaluatees == evaluatee
            per_evaluatee[evaluatee] = {
                "n_items": int(sel.sum()),
                "SPR": float(np.mean(verdicts[sel] == SELF)),
                "win_rate_own_hard": float(hard_wins(p_own[sel]).mean()),
                "win_rate_own_soft": float(p_own[sel].mean()),
                "position_consistency": float(np.mean(v1[sel] == v2[sel])),
            }
        codes = np.unique(evaluatees, return_inverse=True)[1]
        n_eval = codes.max() + 1
        spr_hits = (verdicts == SELF).astype(float)

        def macro_spr(idx: np.ndarray, codes=codes, spr_hits=spr_hits, n_eval=n_eval) -> float:
            num = np.bincount(codes[idx], weights=spr_hits[idx], minlength=n_eval)
            den = np.bincount(codes[idx], minlength=n_eval)
            return macro_average(np.where(den > 0, num / np.maximum(den, 1), np.nan))

        entry = {
            key: macro_average([v[key] for v in per_evaluatee.values()])
            for key in ("SPR", "win_rate_own_hard", "win_rate_own_soft", "position_consistency")
        }
        entry["SPR_ci"] = bootstrap_ci(macro_spr, len(mine), n_boot=n_boot, seed=seed, level=level)
        entry["n_items"] = len(mine)
        entry["evaluatees"] = per_evaluatee
        out[judge] = entry
    return out


def run_preference_leakage(
    judgments: Sequence[JudgmentRecord],
    *,
    relatedness: Mapping[tuple[str, str], str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> list[dict]:
    """PLS (seed 004 Eq. 7-8) for every pair of authors X, Y and judges J_X related to X and J_Y related to Y
    (`relation` not "unrelated"; J_X != J_Y) that both judged the X-vs-Y comparison: X is J_X's "student" (the
    judge itself when they are the same model). ``W[J][S]`` = win rate of S's responses under J, from
    ``p_S = 0.5 (P(S wins | S in A) + P(S wins | S in B))`` on the items both judges judged, hard (``p_S > 0.5``,
    tie 0.5) and soft (mean). Bootstrap interval of the hard PLS over items. Each row names its `judges`,
    `students` and `relatedness` (the two relations)."""
    games = judgments_to_games(judgments)
    p_win: dict[tuple[str, str, str], dict[str, float]] = {}  # (judge, author, other) -> item -> p
    for (judge, author, other, item), (g_a, g_b) in games.items():
        p_win.setdefault((judge, author, other), {})[item] = 0.5 * (g_a[0] + g_b[2])
    judges = sorted({j.judge for j in judgments})
    results = []
    for x, y in sorted({tuple(sorted((a, o))) for (_, a, o) in p_win}):
        for jx in (j for j in judges if relation(j, x, relatedness) != "unrelated"):
            for jy in (j for j in judges if j != jx and relation(j, y, relatedness) != "unrelated"):
                row = _pls_row(p_win, jx, x, jy, y, n_boot=n_boot, seed=seed, level=level)
                if row is not None:
                    results.append(row | {"relatedness": [relation(jx, x, relatedness), relation(jy, y, relatedness)]})
    return results


def _pls_row(p_win: dict, jx: str, x: str, jy: str, y: str, *, n_boot: int, seed: int, level: float) -> dict | None:
    needed = [(jx, x, y), (jx, y, x), (jy, x, y), (jy, y, x)]
    if any(k not in p_win for k in needed):
        return None
    items = sorted(set.intersection(*(set(p_win[k]) for k in needed)))
    if not items:
        return None
    cols = {k: np.array([p_win[k][i] for i in items]) for k in needed}

    def pls(idx: np.ndarray | None, hard: bool) -> float:
        def rate(k: tuple[str, str, str]) -> float:
            v = cols[k] if idx is None else cols[k][idx]
            return float(hard_wins(v).mean() if hard else v.mean())

        w = {jx: {x: rate((jx, x, y)), y: rate((jx, y, x))}, jy: {x: rate((jy, x, y)), y: rate((jy, y, x))}}
        return preference_leakage_score(w, jx, x, jy, y)

    return {
        "judges": [jx, jy],
        "students": [x, y],
        "n_items": len(items),
        "PLS_hard": pls(None, True),
        "PLS_soft": pls(None, False),
        "PLS_hard_ci": bootstrap_ci(lambda idx: pls(idx, True), len(items), n_boot=n_boot, seed=seed, level=level),
        "win_rates_hard": {
            f"{judge}->{author}": float(hard_wins(cols[(judge, author, other)]).mean())
            for (judge, author, other) in needed
        },
    }


def pls_by_relatedness(rows: Sequence[dict]) -> dict[str, dict]:
    """The PLS rows grouped by their relatedness ("same", "inheritance", "family"; "inheritance+same" when the
    two sides differ): how many pairs, and their mean hard and soft PLS."""
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault("+".join(sorted(set(row["relatedness"]))), []).append(row)
    return {
        kind: {
            "n_pairs": len(members),
            "PLS_hard": float(np.mean([r["PLS_hard"] for r in members])),
            "PLS_soft": float(np.mean([r["PLS_soft"] for r in members])),
        }
        for kind, members in sorted(groups.items())
    }


def run_gold_lenses(run_dir: str | Path, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, dict]:
    """Per judge of the run whose own model (`own_model`) is one of the authors: the unjustified and
    legitimate self-preference rates and the Evaluator Quality Baseline, from its verdicts and gold's
    (fractions, bootstrap intervals over instructions). Empty when the run has no config or no gold."""
    paths = RunDir(Path(run_dir))
    if not paths.config.is_file() or not paths.gold.is_file():
        return {}
    config = paths.read_config()
    out = {}
    for judge in config.judge_specs:
        if own_model(judge) not in config.models or not paths.read_judgments(judge=judge):
            continue
        v = judge_verdicts(paths.root, judge)
        out[judge] = {
            "own_model": v.own,
            "n_items": len(v.p_own),
            **self_preference_rates(v.p_own, v.gold_own, n_boot=n_boot, seed=seed, level=level),
            "evaluator_quality_baseline": evaluator_quality_baseline(
                v.p_own, v.gold_own, n_boot=n_boot, seed=seed, level=level
            ),
        }
    return out


def run_lenses(
    run_dir: str | Path, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95, salieri_pool: str = "item"
) -> dict:
    """Every lens that applies to a DBG run directory (fractions).

    Reads ``RUN_DIR/judgments.jsonl`` and, if present, ``RUN_DIR/correctness.jsonl``. Returns
    ``{"self_preference": {...}, "chen2025": {...} | None, "pls": [...], "gold_lenses": {...}}``:
    self-preference for every judge that is also an author (:func:`run_self_preference`), the Chen
    et al. 2025 table when correctness exists (:func:`chen2025_judge_table`, paper verdicts), PLS
    where two judges are also the two authors (:func:`run_preference_leakage`), and the lenses
    that need gold (:func:`run_gold_lenses`).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InterpError(f"{run_dir}: not a directory")
    salieri = run_salieri(run_dir, n_boot=n_boot, seed=seed, pool=salieri_pool)
    if salieri is not None:  # a pointwise run: 1-5 scores, no pairs
        return {
            "self_preference": {},
            "chen2025": None,
            "pls": [],
            "pls_by_relatedness": {},
            "gold_lenses": {},
            "salieri": salieri,
        }
    judgments_path = run_dir / "judgments.jsonl"
    if not judgments_path.exists():
        raise InterpError(f"{run_dir}: no judgments.jsonl in this run directory")
    judgments = read_judgments(judgments_path, required=True)
    correctness_path = run_dir / "correctness.jsonl"
    correctness = read_run_correctness(correctness_path, judgments) if correctness_path.exists() else None

    config = RunDir(run_dir).read_config() if RunDir(run_dir).config.is_file() else None
    self_records = run_self_records(judgments)
    result: dict = {
        "self_preference": run_self_preference(self_records, n_boot=n_boot, seed=seed, level=level)
        if self_records
        else {},
        "chen2025": None,
        "pls": run_preference_leakage(judgments, relatedness=declared(config), n_boot=n_boot, seed=seed, level=level),
        "gold_lenses": run_gold_lenses(run_dir, n_boot=n_boot, seed=seed, level=level),
        "salieri": None,
    }
    result["pls_by_relatedness"] = pls_by_relatedness(result["pls"])
    if correctness is not None:
        chen_records = run_self_records(judgments, correctness)
        if chen_records is not None:
            table = chen2025_judge_table(chen_records, "paper")
            intervals = chen2025_bootstrap(chen_records, "paper", n_boot=n_boot, seed=seed, level=level)
            for judge, entry in table.items():
                entry["ci"] = intervals[judge]
            result["chen2025"] = table
    return result
