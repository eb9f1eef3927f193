"""Chen et al. 2025, "Do LLM Evaluators Prefer Themselves for a Reason?" (seed 002): three-way verdicts in
two games, the Eq. 1 hard verdict, the soft verdict, SPR (Eq. 2), JA (Eq. 3), LSPR (Eq. 4), HSPP (Eq. 5),
SPR on D_diff / D_same (App. C.1), the confidence analysis (App. C.4, Table 20), the release-format reader,
per-pair and per-judge tables with bootstrap intervals.

Conventions: ``game1`` shows the judge's own answer in slot A, ``game2`` in slot B; probabilities are over
the labels (A, T, B). Verdicts are coded in the judge's frame: ``SELF = 1`` (own answer preferred),
``TIE = 0``, ``OTHER = -1``. Every rate is a fraction in [0, 1]; the CLI prints percent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from interp.errors import InterpError
from interp.metrics.stats import percentile_interval
from interp.metrics.tables import flag, is_number, iter_jsonl

SELF, TIE, OTHER = 1, 0, -1
LABEL_A, LABEL_T, LABEL_B = 0, 1, 2

VerdictMode = Literal["hard", "soft", "paper"]
VERDICT_MODES: tuple[str, ...] = ("hard", "soft", "paper")
CHEN_METRICS: tuple[str, ...] = ("SPR", "JA", "LSPR", "HSPP", "SPR_diff", "SPR_same")


def _probs_matrix(probs: Sequence[Sequence[float]] | np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(probs, dtype=float)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise InterpError(f"{name}: expected rows of three probabilities (A, T, B), got shape {arr.shape}")
    return arr


def game_labels(probs_atb: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """Per-game hard label: ``argmax over (P(A), P(T), P(B))`` -> 0 = A, 1 = T, 2 = B.

    Chen et al. 2025 App. A ("Verdict generation"): "select the token among the three with the
    highest assigned logit". Exact ties in the maximum are frequent in the released data (bf16
    logits) and go to the first label in A, T, B order, as ``argmax`` does; only this tie-break
    reproduces the paper's tables (e.g. Llama-3.2-3B MATH500 SPR 7.86; tie -> T would give 8.11).
    The released ``game_*_label`` fields agree with this argmax wherever they are A, T or B.
    """
    return np.argmax(_probs_matrix(probs_atb, "game_labels"), axis=1)


# Per-game label -> judge-frame verdict. Game 1: own answer in slot A; game 2: own answer in slot B.
GAME1_TO_VERDICT = np.array([SELF, TIE, OTHER])
GAME2_TO_VERDICT = np.array([OTHER, TIE, SELF])


def aggregate_verdicts(verdict_game1: np.ndarray, verdict_game2: np.ndarray) -> np.ndarray:
    """Chen et al. 2025 Eq. 1: combine the two games' verdicts (judge frame: 1 self, 0 tie, -1 other).

    Both agree -> that verdict; one tie -> the decisive one; decisive but disagreeing -> tie.
    With the integer coding this is exactly ``sign(v1 + v2)``.
    """
    return np.sign(np.asarray(verdict_game1, dtype=int) + np.asarray(verdict_game2, dtype=int))


def hard_verdict(game1_probs: np.ndarray, game2_probs: np.ndarray) -> np.ndarray:
    """Chen et al. 2025 section 2.1, Eq. 1 hard verdict per instance (1 self, 0 tie, -1 other).

    ``v1 = {A: self, T: tie, B: other}[argmax P1]`` (own answer in slot A),
    ``v2 = {A: other, T: tie, B: self}[argmax P2]`` (own answer in slot B), ``v = sign(v1 + v2)``.
    """
    v1 = GAME1_TO_VERDICT[game_labels(game1_probs)]
    v2 = GAME2_TO_VERDICT[game_labels(game2_probs)]
    return aggregate_verdicts(v1, v2)


def soft_verdict_score(game1_probs: np.ndarray, game2_probs: np.ndarray) -> np.ndarray:
    """Soft verdict score ``s = 0.5 * [(P1(A) + P1(T)/2) + (P2(B) + P2(T)/2)]``.

    The judge's tie-split probability of preferring its own answer, averaged over both games.
    Chen et al. 2025 soft verdict as fixed in docs/science.md (the paper's JA and HSPP tables
    are reproduced with it).
    """
    p1 = _probs_matrix(game1_probs, "game1_probs")
    p2 = _probs_matrix(game2_probs, "game2_probs")
    return 0.5 * ((p1[:, 0] + p1[:, 1] / 2.0) + (p2[:, 2] + p2[:, 1] / 2.0))


def soft_verdict(game1_probs: np.ndarray, game2_probs: np.ndarray) -> np.ndarray:
    """Soft verdict: self if ``s > 0.5``, other if ``s < 0.5``, tie if ``s == 0.5`` (s from
    :func:`soft_verdict_score`). Chen et al. 2025 / docs/science.md."""
    return np.sign(soft_verdict_score(game1_probs, game2_probs) - 0.5).astype(int)


def self_probability(game1_probs: np.ndarray, game2_probs: np.ndarray) -> np.ndarray:
    """Confidence of the "prefer itself" judgment: ``0.5 * (P1(A) + P2(B))``.

    Chen et al. 2025 App. C.4, Table 20 ("average verdict confidence (i.e., probability)
    associated with the judgment" self): the probability of the self label, averaged over the two
    games. Reproduces Table 20 (Llama-3.2-3B 31.14 / 30.60, Llama-3.1-8B 57.01 / 48.81,
    Llama-3.1-70B 83.83 / 64.99) on MATH500.
    """
    p1 = _probs_matrix(game1_probs, "game1_probs")
    p2 = _probs_matrix(game2_probs, "game2_probs")
    return 0.5 * (p1[:, 0] + p2[:, 2])


def metric_verdict_kinds(mode: VerdictMode) -> dict[str, str]:
    """Which verdict ("hard" or "soft") each Chen metric uses under ``mode``.

    ``"paper"`` is the mix the paper's tables use: hard (Eq. 1) for SPR, SPR_diff, SPR_same and
    LSPR; soft for JA and HSPP. ``"hard"`` / ``"soft"`` use one verdict for everything.
    """
    if mode == "paper":
        return {"SPR": "hard", "SPR_diff": "hard", "SPR_same": "hard", "LSPR": "hard", "JA": "soft", "HSPP": "soft"}
    if mode in ("hard", "soft"):
        return {metric: mode for metric in CHEN_METRICS}
    raise InterpError(f"unknown verdict mode {mode!r}; use one of {', '.join(VERDICT_MODES)}")


# ---------------------------------------------------------------------------------------------
# Chen et al. 2025: the four metrics as ratio indicators (numerator, denominator per instance)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RateParts:
    """A rate ``sum(numerator) / sum(denominator)`` kept per instance so that it can be summed per
    pair, macro-averaged per judge and bootstrapped without recomputing verdicts."""

    numerator: np.ndarray
    denominator: np.ndarray

    def value(self) -> float:
        """The rate: instances counted in the numerator over those in the denominator (NaN where none is)."""
        den = int(np.count_nonzero(self.denominator))
        return float(np.count_nonzero(self.numerator)) / den if den else math.nan


Flags = Sequence[bool] | np.ndarray


def _bool(a: Flags) -> np.ndarray:
    return np.asarray(a, dtype=bool)


def spr_parts(verdict: np.ndarray) -> RateParts:
    """SPR (Chen et al. 2025 Eq. 2): ``SPR = (1/|D|) sum_{x in D} [v(x) = self]``; ties stay in D."""
    v = np.asarray(verdict)
    return RateParts(v == SELF, np.ones(v.shape, dtype=bool))


def spr_subset_parts(
    verdict: np.ndarray, judge_correct: Flags, evaluatee_correct: Flags, *, subset: Literal["diff", "same"]
) -> RateParts:
    """SPR restricted to D_diff (exactly one answer correct) or D_same (both or neither correct).

    Chen et al. 2025 section 3.2 and App. C.1 (Figure 8):
    ``SPR_diff = sum_{D_diff} [v = self] / |D_diff|``, ``SPR_same`` likewise on D_same.
    """
    v = np.asarray(verdict)
    in_diff = _bool(judge_correct) != _bool(evaluatee_correct)
    den = in_diff if subset == "diff" else ~in_diff
    return RateParts(den & (v == SELF), den)


def ja_parts(verdict: np.ndarray, judge_correct: Flags, evaluatee_correct: Flags) -> RateParts:
    """Judge accuracy (Chen et al. 2025 Eq. 3, section 3):
    ``JA = (1/|D_diff|) sum_{x in D_diff} [v(x) picks the correct answer]``, D_diff = exactly one
    of the two answers correct; a tie is never correct."""
    v = np.asarray(verdict)
    jc, ec = _bool(judge_correct), _bool(evaluatee_correct)
    in_diff = jc != ec
    correct_pick = (jc & (v == SELF)) | (ec & (v == OTHER))
    return RateParts(in_diff & correct_pick, in_diff)


def lspr_parts(verdict: np.ndarray, judge_correct: Flags, evaluatee_correct: Flags) -> RateParts:
    """Legitimate self-preference ratio (Chen et al. 2025 Eq. 4, section 3.2):
    ``LSPR = sum_{D_diff} [v = self and judge correct] / sum_{D_diff} [v = self]`` -- among the
    self verdicts on D_diff, the share where the judge's own answer is the correct one."""
    v = np.asarray(verdict)
    jc, ec = _bool(judge_correct), _bool(evaluatee_correct)
    den = (jc != ec) & (v == SELF)
    return RateParts(den & jc, den)


def hspp_parts(verdict: np.ndarray, judge_correct: Flags, evaluatee_correct: Flags) -> RateParts:
    """Harmful self-preference propensity (Chen et al. 2025 Eq. 5, section 5.1):
    ``HSPP = sum [v = self] / |{x : judge wrong, other right}|`` -- how often the judge prefers its
    own incorrect answer over a correct one."""
    v = np.asarray(verdict)
    den = ~_bool(judge_correct) & _bool(evaluatee_correct)
    return RateParts(den & (v == SELF), den)


def self_preference_ratio(verdict: Sequence[int]) -> float:
    """SPR (Chen et al. 2025 Eq. 2) of one judge-evaluatee set of verdicts; see :func:`spr_parts`."""
    return spr_parts(np.asarray(verdict)).value()


def judge_accuracy(verdict: Sequence[int], judge_correct: Sequence[bool], evaluatee_correct: Sequence[bool]) -> float:
    """JA (Chen et al. 2025 Eq. 3); see :func:`ja_parts`. NaN when D_diff is empty."""
    return ja_parts(np.asarray(verdict), judge_correct, evaluatee_correct).value()


def legitimate_self_preference_ratio(
    verdict: Sequence[int], judge_correct: Sequence[bool], evaluatee_correct: Sequence[bool]
) -> float:
    """LSPR (Chen et al. 2025 Eq. 4); see :func:`lspr_parts`. NaN without self verdicts on D_diff."""
    return lspr_parts(np.asarray(verdict), judge_correct, evaluatee_correct).value()


def harmful_self_preference_propensity(
    verdict: Sequence[int], judge_correct: Sequence[bool], evaluatee_correct: Sequence[bool]
) -> float:
    """HSPP (Chen et al. 2025 Eq. 5); see :func:`hspp_parts`. NaN when the judge is never wrong
    against a correct other answer."""
    return hspp_parts(np.asarray(verdict), judge_correct, evaluatee_correct).value()


# ---------------------------------------------------------------------------------------------
# Chen et al. 2025: records, reader, tables
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chen2025Records:
    """Columnar judgment records in the judge's frame (one row per judge, evaluatee, instance).

    ``game1_probs``: (n, 3) P(A), P(T), P(B) with the judge's own answer in slot A;
    ``game2_probs``: the same with the judge's own answer in slot B.
    """

    judge: np.ndarray
    evaluatee: np.ndarray
    item_id: np.ndarray
    judge_correct: np.ndarray
    evaluatee_correct: np.ndarray
    game1_probs: np.ndarray
    game2_probs: np.ndarray
    source: str = "<memory>"

    def __post_init__(self) -> None:
        n = len(self.judge)
        for name in ("evaluatee", "item_id", "judge_correct", "evaluatee_correct", "game1_probs", "game2_probs"):
            if len(getattr(self, name)) != n:
                raise InterpError(f"{self.source}: column {name} has {len(getattr(self, name))} rows, expected {n}")

    def __len__(self) -> int:
        return len(self.judge)

    def subset(self, mask: np.ndarray) -> "Chen2025Records":
        """The records where `mask` is True."""
        return Chen2025Records(
            judge=self.judge[mask],
            evaluatee=self.evaluatee[mask],
            item_id=self.item_id[mask],
            judge_correct=self.judge_correct[mask],
            evaluatee_correct=self.evaluatee_correct[mask],
            game1_probs=self.game1_probs[mask],
            game2_probs=self.game2_probs[mask],
            source=self.source,
        )

    @classmethod
    def from_rows(
        cls,
        rows: Sequence[tuple[str, str, str, bool, bool, Sequence[float], Sequence[float]]],
        source: str = "<memory>",
    ) -> "Chen2025Records":
        """Build from ``(judge, evaluatee, item_id, judge_correct, evaluatee_correct, game1, game2)``."""
        if not rows:
            raise InterpError(f"{source}: no judgment records")
        judge, evaluatee, item_id, jc, ec, g1, g2 = zip(*rows, strict=False)
        return cls(
            judge=np.array(judge, dtype=object),
            evaluatee=np.array(evaluatee, dtype=object),
            item_id=np.array([str(i) for i in item_id], dtype=object),
            judge_correct=np.array(jc, dtype=bool),
            evaluatee_correct=np.array(ec, dtype=bool),
            game1_probs=_probs_matrix(g1, f"{source}: game1 probabilities"),
            game2_probs=_probs_matrix(g2, f"{source}: game2 probabilities"),
            source=source,
        )


CHEN2025_FIELDS: tuple[str, ...] = (
    "pair",
    "id",
    "judge_correct",
    "evaluatee_correct",
    "game_1_probs_ATB",
    "game_2_probs_ATB",
    "game_1_label",
    "game_2_label",
)


def _prob_triplet(value: object, name: str, where: str) -> list[float]:
    if not isinstance(value, list) or len(value) != 3:
        got = f"{len(value)} entries" if isinstance(value, list) else type(value).__name__
        raise InterpError(f"{where}: field {name!r} must hold exactly three probabilities (A, T, B), got {got}")
    for x in value:
        if not is_number(x) or not (0.0 <= x <= 1.0 + 1e-6):
            raise InterpError(f"{where}: field {name!r} must hold probabilities in [0, 1], got {value!r}")
    return value


def read_chen2025(path: str | Path) -> Chen2025Records:
    """Read and validate the Chen et al. 2025 release format (JSONL, optionally gzip).

    One object a line with ``pair`` (``"{judge}_{evaluatee}"``; the judge name has no
    underscore), ``id``, ``judge_correct``, ``evaluatee_correct``, ``game_1_probs_ATB`` (own
    answer in slot A), ``game_2_probs_ATB`` (own answer in slot B), ``game_1_label``,
    ``game_2_label`` (may be null; not used by the metrics). Any missing field, a probability vector
    without exactly three entries, a bad value, a duplicate (pair, id) or an empty file raises
    :class:`InterpError` whose one-line message names the file and line.
    """
    path = Path(path)
    judges: list[str] = []
    evaluatees: list[str] = []
    ids: list[str] = []
    judge_ok: list[bool] = []
    evaluatee_ok: list[bool] = []
    game1: list[list[float]] = []
    game2: list[list[float]] = []
    seen: dict[tuple[str, str], int] = {}
    for lineno, obj in iter_jsonl(path):
        where = f"{path}, line {lineno}"
        missing = [name for name in CHEN2025_FIELDS if name not in obj]
        if missing:
            raise InterpError(f"{where}: missing field {', '.join(repr(m) for m in missing)}")
        pair = obj["pair"]
        if not isinstance(pair, str) or "_" not in pair.strip("_"):
            raise InterpError(f"{where}: field 'pair' must look like '<judge>_<evaluatee>', got {pair!r}")
        judge, evaluatee = pair.split("_", 1)
        item = obj["id"]
        if not isinstance(item, (str, int)) or isinstance(item, bool):
            raise InterpError(f"{where}: field 'id' must be a string or integer, got {item!r}")
        key = (pair, str(item))
        if key in seen:
            raise InterpError(f"{where}: duplicate record for pair {pair!r}, id {item!r} (first on line {seen[key]})")
        seen[key] = lineno
        judge_ok.append(flag(obj["judge_correct"], "judge_correct", where))
        evaluatee_ok.append(flag(obj["evaluatee_correct"], "evaluatee_correct", where))
        game1.append(_prob_triplet(obj["game_1_probs_ATB"], "game_1_probs_ATB", where))
        game2.append(_prob_triplet(obj["game_2_probs_ATB"], "game_2_probs_ATB", where))
        for label_field in ("game_1_label", "game_2_label"):
            if obj[label_field] is not None and not isinstance(obj[label_field], str):
                raise InterpError(f"{where}: field {label_field!r} must be a string or null")
        judges.append(judge)
        evaluatees.append(evaluatee)
        ids.append(str(item))
    if not judges:
        raise InterpError(f"{path}: no judgment records (empty file)")
    return Chen2025Records(
        judge=np.array(judges, dtype=object),
        evaluatee=np.array(evaluatees, dtype=object),
        item_id=np.array(ids, dtype=object),
        judge_correct=np.array(judge_ok, dtype=bool),
        evaluatee_correct=np.array(evaluatee_ok, dtype=bool),
        game1_probs=np.array(game1, dtype=float),
        game2_probs=np.array(game2, dtype=float),
        source=str(path),
    )


def chen2025_rate_parts(records: Chen2025Records, verdict: VerdictMode = "paper") -> dict[str, RateParts]:
    """Per-instance numerator/denominator indicators of SPR, JA, LSPR, HSPP, SPR_diff, SPR_same
    (Chen et al. 2025 Eq. 2-5, App. C.1), each metric using the verdict that ``verdict`` assigns
    to it (see :func:`metric_verdict_kinds`)."""
    kinds = metric_verdict_kinds(verdict)
    verdicts = {}
    if "hard" in kinds.values():
        verdicts["hard"] = hard_verdict(records.game1_probs, records.game2_probs)
    if "soft" in kinds.values():
        verdicts["soft"] = soft_verdict(records.game1_probs, records.game2_probs)
    jc, ec = records.judge_correct, records.evaluatee_correct
    return {
        "SPR": spr_parts(verdicts[kinds["SPR"]]),
        "JA": ja_parts(verdicts[kinds["JA"]], jc, ec),
        "LSPR": lspr_parts(verdicts[kinds["LSPR"]], jc, ec),
        "HSPP": hspp_parts(verdicts[kinds["HSPP"]], jc, ec),
        "SPR_diff": spr_subset_parts(verdicts[kinds["SPR_diff"]], jc, ec, subset="diff"),
        "SPR_same": spr_subset_parts(verdicts[kinds["SPR_same"]], jc, ec, subset="same"),
    }


@dataclass(frozen=True)
class PairMetrics:
    """Chen et al. 2025 metrics of one (judge, evaluatee) pair; ``counts[m] = (numerator, denominator)``."""

    judge: str
    evaluatee: str
    n_items: int
    n_diff: int
    values: dict[str, float]
    counts: dict[str, tuple[int, int]]


def _group_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniques, codes = np.unique(values.astype(str), return_inverse=True)
    return uniques, codes


def chen2025_pair_table(records: Chen2025Records, verdict: VerdictMode = "paper") -> list[PairMetrics]:
    """Per-pair table: every Chen et al. 2025 metric for each (judge, evaluatee) pair, with its
    numerator and denominator counts (the paper's App. G per-evaluatee tables). A metric whose
    denominator is empty is NaN."""
    parts = chen2025_rate_parts(records, verdict)
    judge_names, judge_code = _group_codes(records.judge)
    evaluatee_names, evaluatee_code = _group_codes(records.evaluatee)
    pair_code = judge_code * len(evaluatee_names) + evaluatee_code
    uniques, codes = np.unique(pair_code, return_inverse=True)
    n_pairs = len(uniques)
    n_items = np.bincount(codes, minlength=n_pairs)
    n_diff = np.bincount(codes, weights=records.judge_correct != records.evaluatee_correct, minlength=n_pairs)
    sums = {
        m: (
            np.bincount(codes, weights=p.numerator, minlength=n_pairs),
            np.bincount(codes, weights=p.denominator, minlength=n_pairs),
        )
        for m, p in parts.items()
    }
    table = []
    for k, key in enumerate(uniques):
        judge = str(judge_names[key // len(evaluatee_names)])
        evaluatee = str(evaluatee_names[key % len(evaluatee_names)])
        counts = {m: (int(num[k]), int(den[k])) for m, (num, den) in sums.items()}
        values = {m: (c[0] / c[1] if c[1] else math.nan) for m, c in counts.items()}
        table.append(PairMetrics(judge, evaluatee, int(n_items[k]), int(n_diff[k]), values, counts))
    return table


def macro_average(values: Sequence[float]) -> float:
    """Unweighted mean over evaluatees (Chen et al. 2025 App. G "Average" column); evaluatees whose
    metric is undefined (empty denominator, NaN) are left out; NaN if none is defined."""
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    return float(arr.mean()) if arr.size else math.nan


def chen2025_judge_table(records: Chen2025Records, verdict: VerdictMode = "paper") -> dict[str, dict]:
    """``{judge: {SPR, JA, LSPR, HSPP, SPR_diff, SPR_same, n_evaluatees}}`` as fractions: each metric
    is the macro-average over the judge's evaluatees of the per-pair value (Chen et al. 2025
    section 2.1 "each judge model evaluates its own response against those of all the evaluatee
    models"; App. G "Average")."""
    by_judge: dict[str, list[PairMetrics]] = {}
    for row in chen2025_pair_table(records, verdict):
        by_judge.setdefault(row.judge, []).append(row)
    out = {}
    for judge, rows in sorted(by_judge.items()):
        entry: dict = {m: macro_average([r.values[m] for r in rows]) for m in CHEN_METRICS}
        entry["n_evaluatees"] = len(rows)
        out[judge] = entry
    return out


def _resample_counts(n_items: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, n_items) multiplicities of a with-replacement resample of item indices."""
    draws = rng.integers(0, n_items, size=(n_boot, n_items))
    offsets = (np.arange(n_boot) * n_items)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=n_boot * n_items).reshape(n_boot, n_items).astype(float)


def chen2025_bootstrap(
    records: Chen2025Records,
    verdict: VerdictMode = "paper",
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, dict[str, tuple[float, float]]]:
    """Percentile bootstrap interval of every judge-level Chen et al. 2025 metric.

    Instructions (problem ids) are resampled with replacement, jointly for all of a judge's
    evaluatees (the pairs share the problems), and the macro-average is recomputed on each
    resample. Each judge uses its own ``default_rng(seed)``, so a judge's interval does not depend
    on which other judges are in the file. Returns ``{judge: {metric: (low, high)}}`` as fractions.
    """
    parts = chen2025_rate_parts(records, verdict)
    out: dict[str, dict[str, tuple[float, float]]] = {}
    judges = records.judge.astype(str)
    for judge in sorted(set(judges.tolist())):
        rows = np.flatnonzero(judges == judge)
        evaluatees, eval_code = _group_codes(records.evaluatee[rows])
        items, item_code = _group_codes(records.item_id[rows])
        n_eval, n_items = len(evaluatees), len(items)
        counts = _resample_counts(n_items, n_boot, np.random.default_rng(seed))
        cell = item_code * n_eval + eval_code
        intervals = {}
        for metric, p in parts.items():
            num = np.bincount(cell, weights=p.numerator[rows], minlength=n_items * n_eval).reshape(n_items, n_eval)
            den = np.bincount(cell, weights=p.denominator[rows], minlength=n_items * n_eval).reshape(n_items, n_eval)
            boot_num, boot_den = counts @ num, counts @ den
            with np.errstate(invalid="ignore", divide="ignore"):
                per_pair = np.where(boot_den > 0, boot_num / np.where(boot_den > 0, boot_den, 1.0), np.nan)
            defined = np.isfinite(per_pair)
            n_defined = defined.sum(axis=1)
            macro = np.where(
                n_defined > 0, np.where(defined, per_pair, 0.0).sum(axis=1) / np.maximum(n_defined, 1), np.nan
            )
            intervals[metric] = percentile_interval(macro, level)
        out[judge] = intervals
    return out


def chen2025_confidence(records: Chen2025Records, verdict: VerdictMode = "paper") -> dict[str, dict]:
    """Confidence analysis, Chen et al. 2025 App. C.4 (Table 20).

    For each judge, the average probability of the "prefer itself" judgment,
    ``0.5 * (P1(A) + P2(B))`` (:func:`self_probability`), pooled over all its evaluatees, on
    - the SPR set: instances with a self verdict (the verdict SPR uses), and
    - the HSPP set: instances where the judge is wrong, the other answer right, and the verdict
      (the one HSPP uses) is self.
    Returns ``{judge: {"SPR_set": mean, "HSPP_set": mean, "gap": SPR_set - HSPP_set, "n_SPR_set",
    "n_HSPP_set"}}`` as fractions (NaN for an empty set). The paper reads a lower confidence on the
    HSPP set as internal doubt when wrongly preferring itself.
    """
    parts = chen2025_rate_parts(records, verdict)
    confidence = self_probability(records.game1_probs, records.game2_probs)
    spr_set = parts["SPR"].numerator
    hspp_set = parts["HSPP"].numerator
    judges = records.judge.astype(str)
    out = {}
    for judge in sorted(set(judges.tolist())):
        mine = judges == judge
        on_spr, on_hspp = confidence[mine & spr_set], confidence[mine & hspp_set]
        spr_mean = float(on_spr.mean()) if on_spr.size else math.nan
        hspp_mean = float(on_hspp.mean()) if on_hspp.size else math.nan
        out[judge] = {
            "SPR_set": spr_mean,
            "HSPP_set": hspp_mean,
            "gap": spr_mean - hspp_mean,
            "n_SPR_set": int(on_spr.size),
            "n_HSPP_set": int(on_hspp.size),
        }
    return out


# ---------------------------------------------------------------------------------------------
# SALIERI (seed 003)
