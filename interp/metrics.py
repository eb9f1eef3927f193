"""The seed metrics family over judgment records: one set of records, several lenses.

Pure functions (numpy, no model code). Every rate is returned as a fraction in [0, 1]; the CLI
(`interp metrics`) prints percent. Papers (texts in ``../shared/seeds/``):

- DBG paper (seed 000, sections 2-3): hard and soft win rates, DBG = judge win rate - gold win rate.
- Chen et al. 2025, "Do LLM Evaluators Prefer Themselves for a Reason?" (seed 002): three-way verdicts
  in two games, Eq. 1 hard verdict, soft verdict, SPR (Eq. 2), JA (Eq. 3), LSPR (Eq. 4), HSPP (Eq. 5),
  SPR on D_diff / D_same (App. C.1), the confidence analysis (App. C.4, Table 20).
- SALIERI (seed 003, thesis chapters 3-5): origin bias score, quality-matched pairing, SALIERI score,
  detectable ratio lambda.
- Preference Leakage Score (seed 004, Eq. 7-8 and App. B.2).

Conventions for Chen et al. records: ``game1`` shows the judge's own answer in slot A, ``game2`` in
slot B; probabilities are over the labels (A, T, B). Verdicts are coded in the judge's frame:
``SELF = 1`` (own answer preferred), ``TIE = 0``, ``OTHER = -1``.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from interp.errors import InterpError

SELF, TIE, OTHER = 1, 0, -1
LABEL_A, LABEL_T, LABEL_B = 0, 1, 2

VerdictMode = Literal["hard", "soft", "paper"]
VERDICT_MODES: tuple[str, ...] = ("hard", "soft", "paper")
CHEN_METRICS: tuple[str, ...] = ("SPR", "JA", "LSPR", "HSPP", "SPR_diff", "SPR_same")
TiePolicy = Literal["half", "exclude", "loss"]
TIE_POLICIES: tuple[str, ...] = ("half", "exclude", "loss")


# ---------------------------------------------------------------------------------------------
# DBG pipeline basics (seed 000)
# ---------------------------------------------------------------------------------------------


def _probability_array(p: Sequence[float], name: str) -> np.ndarray:
    arr = np.asarray(p, dtype=float).reshape(-1)
    if arr.size == 0:
        raise InterpError(f"{name}: no instructions (empty probability list)")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0) or np.any(arr > 1.0):
        raise InterpError(f"{name}: probabilities must be finite numbers in [0, 1]")
    return arr


def _hard_wins(arr: np.ndarray) -> np.ndarray:
    return np.where(arr > 0.5, 1.0, np.where(arr == 0.5, 0.5, 0.0))


def hard_win_rate(p: Sequence[float]) -> float:
    """Hard win rate ``w = (1/n) sum_i [p_i > 0.5] + 0.5 [p_i = 0.5]``.

    ``p_i`` is P(the response wins instruction i), already averaged over both orders. DBG paper
    (seed 000) section 3, "w_J(A) = share of instructions where judge J picks A's response"
    (the paper's implementation); an exact 0.5 is a tie and counts half.
    """
    return float(_hard_wins(_probability_array(p, "hard_win_rate")).mean())


def soft_win_rate(p: Sequence[float]) -> float:
    """Soft win rate ``w = E_x[P(wins)] = (1/n) sum_i p_i``. DBG paper (seed 000) section 3, soft twin."""
    return float(_probability_array(p, "soft_win_rate").mean())


def bootstrap_ci(
    stat: Callable[[np.ndarray], float],
    n: int,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval over instructions.

    Draws ``n_boot`` index arrays of length ``n`` from 0..n-1 with replacement (seeded
    ``numpy.random.default_rng(seed)``), evaluates ``stat(indices)`` on each and returns the
    ``(1-level)/2`` and ``(1+level)/2`` percentiles. Resamples where ``stat`` is NaN are ignored;
    if all are NaN the interval is ``(nan, nan)``. Used for every rate in this module (DBG paper
    section 3: "a bootstrap confidence interval over instructions").
    """
    if n <= 0:
        raise InterpError("bootstrap_ci: need at least one instruction")
    if n_boot <= 0:
        raise InterpError("bootstrap_ci: n_boot must be positive")
    if not 0.0 < level < 1.0:
        raise InterpError(f"bootstrap_ci: level must be in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(n_boot, n))
    values = np.array([stat(draws[b]) for b in range(n_boot)], dtype=float)
    return _percentile_interval(values, level)


def _percentile_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return (math.nan, math.nan)
    alpha = (1.0 - level) / 2.0
    low, high = np.percentile(finite, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return (float(low), float(high))


def dbg(
    judge_p_own: Sequence[float],
    gold_p_own: Sequence[float],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """Distance-to-gold bias ``DBG = w_J(own) - w_gold(own)`` in hard and soft form.

    ``judge_p_own[i]``: the judge's P(its own model's response wins instruction i), mean over the
    two orders; ``gold_p_own[i]``: the gold ensemble's mean P(the same response wins). Hard form
    uses :func:`hard_win_rate`, soft form :func:`soft_win_rate`. Positive = self-preference.
    DBG paper (seed 000) section 3 / DESIGN.md section 1. Confidence intervals resample
    instructions jointly for judge and gold (paired bootstrap). All rates are fractions.
    """
    judge = _probability_array(judge_p_own, "judge_p_own")
    gold = _probability_array(gold_p_own, "gold_p_own")
    if judge.size != gold.size:
        raise InterpError(
            f"dbg: judge_p_own has {judge.size} instructions but gold_p_own has {gold.size}"
        )
    judge_hard, gold_hard = _hard_wins(judge), _hard_wins(gold)
    hard_diff = judge_hard - gold_hard
    soft_diff = judge - gold
    n = judge.size
    return {
        "dbg_hard": float(hard_diff.mean()),
        "dbg_soft": float(soft_diff.mean()),
        "dbg_ci": bootstrap_ci(
            lambda idx: float(hard_diff[idx].mean()), n, n_boot=n_boot, seed=seed, level=level
        ),
        "dbg_soft_ci": bootstrap_ci(
            lambda idx: float(soft_diff[idx].mean()), n, n_boot=n_boot, seed=seed, level=level
        ),
        "win_rate_own_hard": float(judge_hard.mean()),
        "win_rate_own_soft": float(judge.mean()),
        "gold_win_rate_hard": float(gold_hard.mean()),
        "gold_win_rate_soft": float(gold.mean()),
        "n": int(n),
    }


def position_consistency(p_a_order1: Sequence[float], p_a_order2: Sequence[float]) -> float:
    """Share of pairs whose hard verdict is the same in both orders.

    ``p_a_order1[i]`` = P(response X wins) with X in slot A, ``p_a_order2[i]`` = P(X wins) with X
    in slot B (already mapped to X). Verdict per order: ``sign(p - 0.5)`` (X wins / tie / Y wins);
    consistency = ``(1/n) sum_i [sign(p1_i - 0.5) = sign(p2_i - 0.5)]``. DBG paper (seed 000)
    section 2: every pair is judged in both orders to expose position bias.
    """
    first = _probability_array(p_a_order1, "p_a_order1")
    second = _probability_array(p_a_order2, "p_a_order2")
    if first.size != second.size:
        raise InterpError(
            f"position_consistency: {first.size} pairs in order 1 but {second.size} in order 2"
        )
    return float(np.mean(np.sign(first - 0.5) == np.sign(second - 0.5)))


# ---------------------------------------------------------------------------------------------
# Chen et al. 2025 (seed 002): verdicts
# ---------------------------------------------------------------------------------------------


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
_GAME1_TO_VERDICT = np.array([SELF, TIE, OTHER])
_GAME2_TO_VERDICT = np.array([OTHER, TIE, SELF])


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
    v1 = _GAME1_TO_VERDICT[game_labels(game1_probs)]
    v2 = _GAME2_TO_VERDICT[game_labels(game2_probs)]
    return aggregate_verdicts(v1, v2)


def soft_verdict_score(game1_probs: np.ndarray, game2_probs: np.ndarray) -> np.ndarray:
    """Soft verdict score ``s = 0.5 * [(P1(A) + P1(T)/2) + (P2(B) + P2(T)/2)]``.

    The judge's tie-split probability of preferring its own answer, averaged over both games.
    Chen et al. 2025 soft verdict as fixed in DESIGN.md section 2 (the paper's JA and HSPP tables
    are reproduced with it).
    """
    p1 = _probs_matrix(game1_probs, "game1_probs")
    p2 = _probs_matrix(game2_probs, "game2_probs")
    return 0.5 * ((p1[:, 0] + p1[:, 1] / 2.0) + (p2[:, 2] + p2[:, 1] / 2.0))


def soft_verdict(game1_probs: np.ndarray, game2_probs: np.ndarray) -> np.ndarray:
    """Soft verdict: self if ``s > 0.5``, other if ``s < 0.5``, tie if ``s == 0.5`` (s from
    :func:`soft_verdict_score`). Chen et al. 2025 / DESIGN.md section 2."""
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
        den = int(np.count_nonzero(self.denominator))
        return float(np.count_nonzero(self.numerator)) / den if den else math.nan


Flags = Sequence[bool] | np.ndarray


def _bool(a: Flags) -> np.ndarray:
    return np.asarray(a, dtype=bool)


def spr_parts(verdict: np.ndarray) -> RateParts:
    """SPR (Chen et al. 2025 Eq. 2): ``SPR = (1/|D|) sum_{x in D} [v(x) = self]``; ties stay in D."""
    v = np.asarray(verdict)
    return RateParts(v == SELF, np.ones(v.shape, dtype=bool))


def spr_subset_parts(verdict: np.ndarray, judge_correct: Flags, evaluatee_correct: Flags, *, subset: Literal["diff", "same"]) -> RateParts:
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


def legitimate_self_preference_ratio(verdict: Sequence[int], judge_correct: Sequence[bool], evaluatee_correct: Sequence[bool]) -> float:
    """LSPR (Chen et al. 2025 Eq. 4); see :func:`lspr_parts`. NaN without self verdicts on D_diff."""
    return lspr_parts(np.asarray(verdict), judge_correct, evaluatee_correct).value()


def harmful_self_preference_propensity(verdict: Sequence[int], judge_correct: Sequence[bool], evaluatee_correct: Sequence[bool]) -> float:
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
        judge, evaluatee, item_id, jc, ec, g1, g2 = zip(*rows)
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


def _open_text(path: Path) -> Iterator[str]:
    try:
        with path.open("rb") as probe:
            magic = probe.read(2)
    except OSError as exc:
        raise InterpError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    opener = gzip.open if magic == b"\x1f\x8b" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            yield from handle
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InterpError(f"{path}: cannot read ({exc})") from exc


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for every non-blank line of a JSONL file (plain or gzip).

    Raises :class:`InterpError` naming the file and line for invalid JSON or a non-object line.
    """
    path = Path(path)
    for lineno, raw in enumerate(_open_text(path), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InterpError(f"{path}, line {lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise InterpError(f"{path}, line {lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _flag(value: object, name: str, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if _is_number(value) and value in (0, 1):
        return bool(value)
    raise InterpError(f"{where}: field {name!r} must be true or false, got {value!r}")


def _prob_triplet(value: object, name: str, where: str) -> list[float]:
    if not isinstance(value, list) or len(value) != 3:
        got = f"{len(value)} entries" if isinstance(value, list) else type(value).__name__
        raise InterpError(f"{where}: field {name!r} must hold exactly three probabilities (A, T, B), got {got}")
    for x in value:
        if not _is_number(x) or not (0.0 <= x <= 1.0 + 1e-6):
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
        judge_ok.append(_flag(obj["judge_correct"], "judge_correct", where))
        evaluatee_ok.append(_flag(obj["evaluatee_correct"], "evaluatee_correct", where))
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
            macro = np.where(n_defined > 0, np.where(defined, per_pair, 0.0).sum(axis=1) / np.maximum(n_defined, 1), np.nan)
            intervals[metric] = _percentile_interval(macro, level)
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
# ---------------------------------------------------------------------------------------------


def standardized_score(scores: Sequence[float], norm_model_scores: Sequence[Sequence[float]] | None = None) -> float:
    """SALIERI thesis Eq. 3.3-3.4: ``X'_{a,t} = mean(scores) - (1/n) sum_i mean(norm_i)``.

    ``scores``: agent a's pointwise scores of model t's responses; ``norm_model_scores``: agent a's
    scores of each norm model's responses (one sequence per norm model). Without norm models the
    baseline is 0 (raw mean).
    """
    arr = np.asarray(scores, dtype=float)
    if arr.size == 0:
        raise InterpError("standardized_score: no scores")
    baseline = 0.0
    if norm_model_scores:
        baseline = float(np.mean([np.mean(np.asarray(s, dtype=float)) for s in norm_model_scores]))
    return float(arr.mean()) - baseline


def origin_bias(
    judge_scores_own: Sequence[float],
    reference_scores_own: Sequence[float],
    *,
    judge_baseline: float = 0.0,
    reference_baseline: float = 0.0,
) -> float:
    """The "origin" self-enhancement bias score, SALIERI thesis Eq. 3.1 / 3.7:
    ``beta_hat_{t,t} = X'_{t,t} - X'_{r,t}`` -- the target model's (standardized) mean score of its
    own responses minus the reference agent's. Confounded by quality: in expectation it equals
    ``beta_{t,t} - (1 - lambda_t) X'_{r,t}``. Baselines are the norm-model means of Eq. 3.4."""
    return (float(np.mean(judge_scores_own)) - judge_baseline) - (float(np.mean(reference_scores_own)) - reference_baseline)


def salieri_bias(
    judge_scores_own: Sequence[float],
    reference_scores_own: Sequence[float],
    judge_scores_paired: Sequence[float],
    reference_scores_paired: Sequence[float],
) -> float:
    """SALIERI score, thesis Eq. 5.1-5.2 (chapter 5.2):
    ``beta = (X'_{t,t} - X'_{r,t}) - (X'_{t,p} - X'_{r,p})``, where p is an unrelated model whose
    responses are quality-matched to t's (:func:`match_quality`). Quality matching makes the
    ``(1 - lambda_t) X'_r`` terms cancel; the norm-model baselines cancel as well."""
    own = float(np.mean(judge_scores_own)) - float(np.mean(reference_scores_own))
    paired = float(np.mean(judge_scores_paired)) - float(np.mean(reference_scores_paired))
    return own - paired


def detectable_ratio(
    judge_scores_a: Sequence[float],
    reference_scores_a: Sequence[float],
    judge_scores_b: Sequence[float],
    reference_scores_b: Sequence[float],
) -> float:
    """lambda, the proportion of response quality the target model can detect (SALIERI thesis
    section 3.3.2): ``lambda_t = (X'_{t,b} - X'_{t,a}) / (X'_{r,b} - X'_{r,a})`` for two response
    sets a, b of different quality -- the judge's score difference over the reference agent's.
    1 = the judge sees all of the quality difference, 0 = none (NaN if the reference sees none)."""
    reference_gap = float(np.mean(reference_scores_b)) - float(np.mean(reference_scores_a))
    if reference_gap == 0.0:
        return math.nan
    return (float(np.mean(judge_scores_b)) - float(np.mean(judge_scores_a))) / reference_gap


@dataclass(frozen=True)
class QualityMatch:
    """Result of :func:`match_quality`.

    ``chosen[i]``: index of the pool response paired with item i; ``paired_scores[i]`` its
    reference score. ``histogram_mismatch``: items whose score bin could not be balanced (half
    the L1 distance between the two bin histograms; 0 = identical histograms).
    ``mean_abs_gap``: mean per-item |paired reference score - target reference score|.
    """

    chosen: np.ndarray
    paired_scores: np.ndarray
    histogram_mismatch: int
    mean_abs_gap: float
    target_histogram: dict[float, int] = field(default_factory=dict)
    paired_histogram: dict[float, int] = field(default_factory=dict)


def match_quality(
    target_reference_scores: Sequence[float],
    pool_reference_scores: Sequence[Sequence[float]],
    *,
    resolution: float = 1.0,
) -> QualityMatch:
    """Quality-matched pairing of SALIERI (thesis section 5.3.1, step 3).

    For each item i pick one response from the unrelated model's pool for that item so that
    (1) the histogram of paired reference scores equals the histogram of the target's reference
    scores as far as the pool allows, and (2) within that, per-item gaps
    ``sum_i |r_pair(i) - r_target(i)|`` are as small as possible ("make the overall score
    distribution as consistent as possible ... strive to make the scores for each question as close
    as possible").

    Algorithm: start from the closest pool response per item (ties -> lower score), then
    rebalance with successive shortest paths on the score bins: an edge s -> s' moves one item
    from bin s to a pool response in bin s' at its extra gap cost; each augmenting path (Bellman-Ford,
    so chains of moves are allowed) shifts one unit from a surplus bin to a deficit bin at least
    cost. Stops when no surplus bin can reach a deficit bin; the rest is reported as
    ``histogram_mismatch``. Scores are binned as ``round(score / resolution)``.
    """
    target = np.asarray(target_reference_scores, dtype=float)
    if target.size == 0:
        raise InterpError("match_quality: no target items")
    if len(pool_reference_scores) != target.size:
        raise InterpError(f"match_quality: {target.size} target items but {len(pool_reference_scores)} pool lists")
    pools = [np.asarray(p, dtype=float) for p in pool_reference_scores]
    for i, pool in enumerate(pools):
        if pool.size == 0:
            raise InterpError(f"match_quality: item {i} has no pool responses")

    def to_bin(x: np.ndarray | float) -> np.ndarray:
        return np.round(np.asarray(x, dtype=float) / resolution).astype(int)

    bins = np.unique(np.concatenate([to_bin(target)] + [to_bin(p) for p in pools]))
    bin_index = {int(b): k for k, b in enumerate(bins)}
    n_items, n_bins = target.size, len(bins)
    # cost[i, k] = smallest gap for item i using a pool response in bin k; best[i, k] its index.
    cost = np.full((n_items, n_bins), np.inf)
    best = np.full((n_items, n_bins), -1, dtype=int)
    for i, pool in enumerate(pools):
        gaps = np.abs(pool - target[i])
        for j, b in enumerate(to_bin(pool)):
            k = bin_index[int(b)]
            if gaps[j] < cost[i, k] or (gaps[j] == cost[i, k] and pool[j] < pool[best[i, k]]):
                cost[i, k], best[i, k] = gaps[j], j
    current = np.argmin(cost, axis=1)  # closest per item; argmin takes the lowest bin on ties
    target_count = np.bincount([bin_index[int(b)] for b in to_bin(target)], minlength=n_bins)

    while True:
        surplus = np.bincount(current, minlength=n_bins) - target_count
        if not (surplus > 0).any() or not (surplus < 0).any():
            break
        # edge_cost[s, s2]: cheapest move of one item from bin s to bin s2; edge_item: which item.
        extra = cost - cost[np.arange(n_items), current][:, None]
        edge_cost = np.full((n_bins, n_bins), np.inf)
        edge_item = np.full((n_bins, n_bins), -1, dtype=int)
        for s in range(n_bins):
            members = np.flatnonzero(current == s)
            if members.size == 0:
                continue
            sub = extra[members]
            pick = np.argmin(sub, axis=0)
            edge_cost[s] = sub[pick, np.arange(n_bins)]
            edge_item[s] = members[pick]
        np.fill_diagonal(edge_cost, np.inf)
        dist = np.where(surplus > 0, 0.0, np.inf)
        parent = np.full(n_bins, -1, dtype=int)
        for _ in range(n_bins - 1):
            relaxed = dist[:, None] + edge_cost
            via = np.argmin(relaxed, axis=0)
            candidate = relaxed[via, np.arange(n_bins)]
            improve = candidate < dist - 1e-12
            if not improve.any():
                break
            dist[improve], parent[improve] = candidate[improve], via[improve]
        reachable_deficits = np.flatnonzero((surplus < 0) & np.isfinite(dist))
        if reachable_deficits.size == 0:
            break
        sink = reachable_deficits[np.argmin(dist[reachable_deficits])]
        moves = []
        node = sink
        for _ in range(n_bins):  # a shortest path visits each bin at most once
            prev = parent[node]
            if prev < 0:
                break
            moves.append((edge_item[prev, node], node))
            node = prev
        for item, new_bin in moves:
            current[item] = new_bin

    chosen = best[np.arange(n_items), current]
    paired = np.array([pools[i][chosen[i]] for i in range(n_items)])
    final_count = np.bincount(current, minlength=n_bins)
    mismatch = int(np.abs(final_count - target_count).sum() // 2)
    return QualityMatch(
        chosen=chosen,
        paired_scores=paired,
        histogram_mismatch=mismatch,
        mean_abs_gap=float(np.mean(np.abs(paired - target))),
        target_histogram={float(bins[k] * resolution): int(c) for k, c in enumerate(target_count) if c},
        paired_histogram={float(bins[k] * resolution): int(c) for k, c in enumerate(final_count) if c},
    )


def salieri_report(
    judge_scores_own: Sequence[float],
    reference_scores_own: Sequence[float],
    pool_judge_scores: Sequence[Sequence[float]],
    pool_reference_scores: Sequence[Sequence[float]],
    *,
    judge_baseline: float = 0.0,
    reference_baseline: float = 0.0,
    resolution: float = 1.0,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """Full SALIERI lens for one target model (judge) on one dataset (thesis chapters 3-5).

    Inputs per item i: the judge's and the reference agent's scores of the judge's own response,
    and, for the unrelated model's pool of responses to item i, the judge's and the reference
    agent's scores of each. Returns the origin score (Eq. 3.7), the SALIERI score (Eq. 5.1-5.2)
    with the pool quality-matched by :func:`match_quality`, bootstrap intervals of both
    (items resampled, the pairing kept), lambda (:func:`detectable_ratio`) estimated on the pool --
    per item its lowest-scored (set b) versus highest-scored (set a) response by the reference,
    over items whose pool spans more than one score -- and the matching diagnostics.
    """
    judge_own = np.asarray(judge_scores_own, dtype=float)
    ref_own = np.asarray(reference_scores_own, dtype=float)
    n = judge_own.size
    if n == 0:
        raise InterpError("salieri: no items")
    if ref_own.size != n or len(pool_judge_scores) != n or len(pool_reference_scores) != n:
        raise InterpError("salieri: own scores and pools must cover the same items")
    pool_judge = [np.asarray(p, dtype=float) for p in pool_judge_scores]
    pool_ref = [np.asarray(p, dtype=float) for p in pool_reference_scores]
    for i in range(n):
        if pool_judge[i].size != pool_ref[i].size:
            raise InterpError(f"salieri: item {i} has {pool_judge[i].size} judge scores but {pool_ref[i].size} reference scores in the pool")
    match = match_quality(ref_own, pool_ref, resolution=resolution)
    judge_pair = np.array([pool_judge[i][match.chosen[i]] for i in range(n)])
    ref_pair = match.paired_scores
    own_gap = judge_own - ref_own
    pair_gap = judge_pair - ref_pair
    origin = float(own_gap.mean()) - judge_baseline + reference_baseline
    shift = reference_baseline - judge_baseline

    high_j, high_r, low_j, low_r = [], [], [], []
    for i in range(n):
        if pool_ref[i].max() > pool_ref[i].min():
            hi, lo = int(np.argmax(pool_ref[i])), int(np.argmin(pool_ref[i]))
            high_j.append(pool_judge[i][hi])
            high_r.append(pool_ref[i][hi])
            low_j.append(pool_judge[i][lo])
            low_r.append(pool_ref[i][lo])
    lam = detectable_ratio(high_j, high_r, low_j, low_r) if high_j else math.nan

    return {
        "n_items": int(n),
        "origin": origin,
        "origin_ci": bootstrap_ci(lambda idx: float(own_gap[idx].mean()) + shift, n, n_boot=n_boot, seed=seed, level=level),
        "salieri": float(own_gap.mean() - pair_gap.mean()),
        "salieri_ci": bootstrap_ci(
            lambda idx: float(own_gap[idx].mean() - pair_gap[idx].mean()), n, n_boot=n_boot, seed=seed, level=level
        ),
        "lambda": lam,
        "judge_mean_own": float(judge_own.mean()),
        "reference_mean_own": float(ref_own.mean()),
        "judge_mean_paired": float(judge_pair.mean()),
        "reference_mean_paired": float(ref_pair.mean()),
        "histogram_mismatch": match.histogram_mismatch,
        "mean_abs_gap": match.mean_abs_gap,
        "target_histogram": match.target_histogram,
        "paired_histogram": match.paired_histogram,
    }


# ---------------------------------------------------------------------------------------------
# Preference Leakage Score (seed 004)
# ---------------------------------------------------------------------------------------------


def win_rate_with_ties(wins: float, ties: float, losses: float, tie_policy: TiePolicy = "half") -> float:
    """Win rate from win/tie/loss counts (or shares) under a tie policy.

    ``"half"``: ``(wins + ties/2) / (wins + ties + losses)`` (a tie is half a win);
    ``"exclude"``: ``wins / (wins + losses)`` (ties dropped); ``"loss"``: ``wins / total`` (a tie is
    not a win). Preference Leakage (seed 004) section 4.2: Arena-Hard has ties, AlpacaEval 2.0
    has none, so the choice matters only with ties.
    """
    if tie_policy == "half":
        total = wins + ties + losses
        return (wins + ties / 2.0) / total if total else math.nan
    if tie_policy == "exclude":
        total = wins + losses
        return wins / total if total else math.nan
    if tie_policy == "loss":
        total = wins + ties + losses
        return wins / total if total else math.nan
    raise InterpError(f"unknown tie policy {tie_policy!r}; use one of {', '.join(TIE_POLICIES)}")


def preference_leakage_score(
    win_rates: Mapping[str, Mapping[str, float]],
    judge_i: str,
    student_i: str,
    judge_j: str,
    student_j: str,
) -> float:
    """Preference Leakage Score, seed 004 Eq. 7-8 as worked in App. B.2 (Table 5).

    ``W[judge][student]``: win rate of ``student`` under ``judge``; ``student_i`` is related to
    ``judge_i`` (distilled from it, or the judge itself), ``student_j`` to ``judge_j``.
    ``PLS = 0.5 * [(W[i][si] - W[j][si]) / (W[i][si] + W[j][si]) + (W[j][sj] - W[i][sj]) / (W[j][sj] + W[i][sj])]``
    which is ``(WR(i,i) - AVG)/AVG`` with ``AVG`` the two judges' mean win rate of the same
    student. Scale-free (percent or fraction in, fraction out). Worked check: 55.1, 36.8, 63.2,
    44.9 -> 0.184.
    """
    try:
        own_i, other_i = win_rates[judge_i][student_i], win_rates[judge_j][student_i]
        own_j, other_j = win_rates[judge_j][student_j], win_rates[judge_i][student_j]
    except KeyError as exc:
        raise InterpError(f"preference_leakage_score: no win rate for {exc.args[0]!r}") from None
    terms = []
    for own, other in ((own_i, other_i), (own_j, other_j)):
        total = own + other
        terms.append((own - other) / total if total else math.nan)
    return 0.5 * (terms[0] + terms[1])


# ---------------------------------------------------------------------------------------------
# DBG run records -> lenses
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairwiseJudgment:
    """One line of a DBG run's ``judgments.jsonl``: the judge's probabilities with ``model_a``'s
    response in slot A and ``model_b``'s in slot B (``p_t`` None when ties were not allowed)."""

    judge: str
    item_id: str
    order: str
    model_a: str
    model_b: str
    p_a: float
    p_b: float
    p_t: float | None


RUN_JUDGMENT_FIELDS = ("judge", "item_id", "order", "model_a", "model_b", "p_a", "p_b")


def read_run_judgments(path: str | Path) -> list[PairwiseJudgment]:
    """Read and validate a DBG run's ``judgments.jsonl`` (``{"judge", "item_id", "order": "ab"|"ba",
    "model_a", "model_b", "p_a", "p_b", "p_t": float|null}``). Errors name the file and line."""
    path = Path(path)
    out: list[PairwiseJudgment] = []
    seen: dict[tuple, int] = {}
    for lineno, obj in iter_jsonl(path):
        where = f"{path}, line {lineno}"
        missing = [name for name in RUN_JUDGMENT_FIELDS if name not in obj]
        if missing:
            raise InterpError(f"{where}: missing field {', '.join(repr(m) for m in missing)}")
        for name in ("judge", "model_a", "model_b"):
            if not isinstance(obj[name], str) or not obj[name]:
                raise InterpError(f"{where}: field {name!r} must be a non-empty string")
        if obj["model_a"] == obj["model_b"]:
            raise InterpError(f"{where}: model_a and model_b are both {obj['model_a']!r}")
        if obj["order"] not in ("ab", "ba"):
            raise InterpError(f"{where}: field 'order' must be 'ab' or 'ba', got {obj['order']!r}")
        item = obj["item_id"]
        if not isinstance(item, (str, int)) or isinstance(item, bool):
            raise InterpError(f"{where}: field 'item_id' must be a string or integer")
        probs = {}
        for name in ("p_a", "p_b", "p_t"):
            value = obj.get(name)
            if value is None and name == "p_t":
                probs[name] = None
                continue
            if not _is_number(value) or not (0.0 <= value <= 1.0 + 1e-6):
                raise InterpError(f"{where}: field {name!r} must be a probability in [0, 1], got {value!r}")
            probs[name] = float(value)
        key = (obj["judge"], str(item), obj["model_a"], obj["model_b"])
        if key in seen:
            raise InterpError(f"{where}: duplicate judgment (first on line {seen[key]})")
        seen[key] = lineno
        out.append(PairwiseJudgment(obj["judge"], str(item), obj["order"], obj["model_a"], obj["model_b"], probs["p_a"], probs["p_b"], probs["p_t"]))
    if not out:
        raise InterpError(f"{path}: no judgment records (empty file)")
    return out


def read_run_correctness(path: str | Path) -> dict[tuple[str, str], bool]:
    """Read a DBG run's ``correctness.jsonl`` (``{"item_id", "model", "correct": bool}``) into
    ``{(item_id, model): correct}``. Errors name the file and line."""
    path = Path(path)
    out: dict[tuple[str, str], bool] = {}
    for lineno, obj in iter_jsonl(path):
        where = f"{path}, line {lineno}"
        missing = [name for name in ("item_id", "model", "correct") if name not in obj]
        if missing:
            raise InterpError(f"{where}: missing field {', '.join(repr(m) for m in missing)}")
        out[(str(obj["item_id"]), str(obj["model"]))] = _flag(obj["correct"], "correct", where)
    if not out:
        raise InterpError(f"{path}: no correctness records (empty file)")
    return out


def _atb(j: PairwiseJudgment) -> list[float]:
    return [j.p_a, 0.0 if j.p_t is None else j.p_t, j.p_b]


def judgments_to_games(judgments: Sequence[PairwiseJudgment]) -> dict[tuple[str, str, str, str], tuple[list[float], list[float]]]:
    """Pair up the two orders: ``{(judge, author, other, item): (probs with author in A, probs with
    author in B)}`` for every judgment whose two orders are both present. Probabilities are
    ``[P(A), P(T), P(B)]``, P(T) = 0 when ties were not allowed."""
    by_slot: dict[tuple[str, str, str, str], PairwiseJudgment] = {}
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
    judgments: Sequence[PairwiseJudgment],
    correctness: Mapping[tuple[str, str], bool] | None = None,
) -> Chen2025Records | None:
    """Turn a DBG run's judgments into Chen-style records for every judge that is also an author:
    game 1 = the order with the judge's own response in slot A, game 2 = in slot B. Correctness
    flags come from ``correctness`` (items without both flags are dropped); without it they are
    all False (only SPR-type metrics are then meaningful). None if no judge judged itself."""
    rows = []
    for (judge, author, other, item), (g1, g2) in sorted(judgments_to_games(judgments).items()):
        if author != judge:
            continue
        if correctness is not None:
            if (item, judge) not in correctness or (item, other) not in correctness:
                continue
            jc, ec = correctness[(item, judge)], correctness[(item, other)]
        else:
            jc = ec = False
        rows.append((judge, other, item, jc, ec, g1, g2))
    return Chen2025Records.from_rows(rows, source="run") if rows else None


def run_self_preference(records: Chen2025Records, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, dict]:
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
        v1 = _GAME1_TO_VERDICT[game_labels(mine.game1_probs)]
        v2 = _GAME2_TO_VERDICT[game_labels(mine.game2_probs)]
        per_evaluatee = {}
        evaluatees = mine.evaluatee.astype(str)
        for evaluatee in sorted(set(evaluatees.tolist())):
            sel = evaluatees == evaluatee
            per_evaluatee[evaluatee] = {
                "n_items": int(sel.sum()),
                "SPR": float(np.mean(verdicts[sel] == SELF)),
                "win_rate_own_hard": float(_hard_wins(p_own[sel]).mean()),
                "win_rate_own_soft": float(p_own[sel].mean()),
                "position_consistency": float(np.mean(v1[sel] == v2[sel])),
            }
        codes = np.unique(evaluatees, return_inverse=True)[1]
        n_eval = codes.max() + 1
        spr_hits = (verdicts == SELF).astype(float)

        def macro_spr(idx: np.ndarray) -> float:
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
    judgments: Sequence[PairwiseJudgment], *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> list[dict]:
    """PLS (seed 004 Eq. 7-8) for every pair of authors X, Y that are both judges of the X-vs-Y
    comparison (the student of judge X is X itself). ``W[J][S]`` = win rate of S's responses under
    J, from ``p_S = 0.5 (P(S wins | S in A) + P(S wins | S in B))`` on the items both judges judged,
    hard (``p_S > 0.5``, tie 0.5) and soft (mean). Bootstrap interval of the hard PLS over items."""
    games = judgments_to_games(judgments)
    p_win: dict[tuple[str, str, str], dict[str, float]] = {}  # (judge, author, other) -> item -> p
    for (judge, author, other, item), (g_a, g_b) in games.items():
        p_win.setdefault((judge, author, other), {})[item] = 0.5 * (g_a[0] + g_b[2])
    judges = {j.judge for j in judgments}
    results = []
    for x, y in sorted({tuple(sorted((a, o))) for (_, a, o) in p_win}):
        if x not in judges or y not in judges:
            continue
        needed = [(x, x, y), (x, y, x), (y, x, y), (y, y, x)]
        if any(k not in p_win for k in needed):
            continue
        items = sorted(set.intersection(*(set(p_win[k]) for k in needed)))
        if not items:
            continue
        cols = {k: np.array([p_win[k][i] for i in items]) for k in needed}

        def pls(idx: np.ndarray | None, hard: bool) -> float:
            def rate(k: tuple[str, str, str]) -> float:
                v = cols[k] if idx is None else cols[k][idx]
                return float(_hard_wins(v).mean() if hard else v.mean())

            w = {x: {x: rate((x, x, y)), y: rate((x, y, x))}, y: {x: rate((y, x, y)), y: rate((y, y, x))}}
            return preference_leakage_score(w, x, x, y, y)

        results.append(
            {
                "judges": [x, y],
                "n_items": len(items),
                "PLS_hard": pls(None, True),
                "PLS_soft": pls(None, False),
                "PLS_hard_ci": bootstrap_ci(lambda idx: pls(idx, True), len(items), n_boot=n_boot, seed=seed, level=level),
                "win_rates_hard": {
                    f"{judge}->{author}": float(_hard_wins(cols[(judge, author, other)]).mean())
                    for (judge, author, other) in needed
                },
            }
        )
    return results


def run_lenses(run_dir: str | Path, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """Every lens that applies to a DBG run directory (fractions).

    Reads ``RUN_DIR/judgments.jsonl`` and, if present, ``RUN_DIR/correctness.jsonl``. Returns
    ``{"self_preference": {...}, "chen2025": {...} | None, "pls": [...]}``: self-preference for
    every judge that is also an author (:func:`run_self_preference`), the Chen et al. 2025 table
    when correctness exists (:func:`chen2025_judge_table`, paper verdicts), and PLS where two
    judges are also the two authors (:func:`run_preference_leakage`).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InterpError(f"{run_dir}: not a directory")
    judgments_path = run_dir / "judgments.jsonl"
    if not judgments_path.exists():
        raise InterpError(f"{run_dir}: no judgments.jsonl in this run directory")
    judgments = read_run_judgments(judgments_path)
    correctness_path = run_dir / "correctness.jsonl"
    correctness = read_run_correctness(correctness_path) if correctness_path.exists() else None

    self_records = run_self_records(judgments)
    result: dict = {
        "self_preference": run_self_preference(self_records, n_boot=n_boot, seed=seed, level=level) if self_records else {},
        "chen2025": None,
        "pls": run_preference_leakage(judgments, n_boot=n_boot, seed=seed, level=level),
    }
    if correctness is not None:
        chen_records = run_self_records(judgments, correctness)
        if chen_records is not None:
            table = chen2025_judge_table(chen_records, "paper")
            intervals = chen2025_bootstrap(chen_records, "paper", n_boot=n_boot, seed=seed, level=level)
            for judge, entry in table.items():
                entry["ci"] = intervals[judge]
            result["chen2025"] = table
    return result


# ---------------------------------------------------------------------------------------------
# Table readers for the PLS and SALIERI inputs (CSV or JSONL)
# ---------------------------------------------------------------------------------------------


def read_table_rows(path: str | Path, required: Sequence[str]) -> list[tuple[int, dict]]:
    """Rows of a CSV (``.csv``, header on line 1) or JSONL file (anything else, gzip allowed) as
    ``(line_number, row)``; every row must have the ``required`` columns with a non-empty value.
    Errors (and an empty file) raise :class:`InterpError` naming the file and line."""
    import csv

    path = Path(path)
    rows: list[tuple[int, dict]] = []
    if path.suffix.lower() == ".csv":
        lines = list(_open_text(path))
        reader = csv.DictReader(lines)
        header = reader.fieldnames or []
        absent = [c for c in required if c not in header]
        if header and absent:
            raise InterpError(f"{path}, line 1: missing column {', '.join(repr(c) for c in absent)}")
        for row in reader:
            rows.append((reader.line_num, {k: v for k, v in row.items() if k is not None}))
    else:
        rows = list(iter_jsonl(path))
    if not rows:
        raise InterpError(f"{path}: no rows (empty file)")
    for lineno, row in rows:
        missing = [c for c in required if row.get(c) in (None, "")]
        if missing:
            raise InterpError(f"{path}, line {lineno}: missing field {', '.join(repr(m) for m in missing)}")
    return rows


def _number(value: object, name: str, where: str) -> float:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InterpError(f"{where}: field {name!r} must be a number, got {value!r}") from None
    if not _is_number(value) or not math.isfinite(value):
        raise InterpError(f"{where}: field {name!r} must be a finite number, got {value!r}")
    return float(value)


def _optional(row: dict, name: str) -> object | None:
    value = row.get(name)
    return None if value in (None, "") else value


@dataclass(frozen=True)
class WinRateEntry:
    """Win rate of ``student`` under ``judge`` (against ``opponent`` when given)."""

    judge: str
    student: str
    opponent: str | None
    win_rate: float
    student_of: str | None


def read_win_rates(path: str | Path, tie_policy: TiePolicy = "half") -> list[WinRateEntry]:
    """Read a judge x student win-rate table for PLS.

    Columns: ``judge``, ``student``, ``win_rate`` (required); ``tie_rate``, ``loss_rate``,
    ``opponent``, ``student_of`` (optional). With ``tie_rate`` the effective win rate follows
    ``tie_policy`` (:func:`win_rate_with_ties`; ``win_rate`` is then the share of outright wins and a
    missing ``loss_rate`` is the remainder of 1, or of 100 when any rate exceeds 1). Rates may be
    fractions or percent: PLS is scale-free.
    """
    if tie_policy not in TIE_POLICIES:
        raise InterpError(f"unknown tie policy {tie_policy!r}; use one of {', '.join(TIE_POLICIES)}")
    path = Path(path)
    rows = read_table_rows(path, ("judge", "student", "win_rate"))
    parsed = []
    for lineno, row in rows:
        where = f"{path}, line {lineno}"
        win = _number(row["win_rate"], "win_rate", where)
        tie = _optional(row, "tie_rate")
        loss = _optional(row, "loss_rate")
        parsed.append((where, row, win, None if tie is None else _number(tie, "tie_rate", where), None if loss is None else _number(loss, "loss_rate", where)))
    scale = 100.0 if any(max(w, t or 0.0, l or 0.0) > 1.0 for _, _, w, t, l in parsed) else 1.0
    out = []
    for where, row, win, tie, loss in parsed:
        if tie is not None:
            loss = scale - win - tie if loss is None else loss
            if loss < -1e-9:
                raise InterpError(f"{where}: win_rate + tie_rate exceed {scale:g}")
            win = win_rate_with_ties(win, tie, max(loss, 0.0), tie_policy) * scale
        opponent, student_of = _optional(row, "opponent"), _optional(row, "student_of")
        out.append(WinRateEntry(str(row["judge"]), str(row["student"]), None if opponent is None else str(opponent), win, None if student_of is None else str(student_of)))
    return out


def related_judges(entries: Sequence[WinRateEntry]) -> dict[str, str]:
    """``{student: judge it is related to}``: the ``student_of`` column; else a judge of the same
    name (a model judging its own answers); else the one judge whose name occurs in the student's
    name (case-insensitive, e.g. "Mistral-GPT-4o" -> "GPT-4o"). Students with no or an ambiguous
    match are left out."""
    judges = sorted({e.judge for e in entries})
    out: dict[str, str] = {}
    for e in entries:
        if e.student_of is not None:
            out[e.student] = e.student_of
    for student in sorted({e.student for e in entries} - set(out)):
        if student in judges:
            out[student] = student
            continue
        hits = [j for j in judges if j.lower() in student.lower()]
        longest = [j for j in hits if len(j) == max(len(h) for h in hits)] if hits else []
        if len(longest) == 1:
            out[student] = longest[0]
    return out


def preference_leakage_table(entries: Sequence[WinRateEntry]) -> list[dict]:
    """PLS (seed 004 Eq. 7-8) for every pair of students related to two different judges that both
    judged both students. With an ``opponent`` column only the two students' head-to-head rates are
    used. Returns rows ``{judge_i, student_i, judge_j, student_j, PLS}`` (PLS as a fraction)."""
    related = related_judges(entries)
    rate: dict[tuple[str, str, str | None], float] = {}
    for e in entries:
        rate[(e.judge, e.student, e.opponent)] = e.win_rate
    uses_opponent = any(e.opponent is not None for e in entries)
    students = sorted(related)
    out = []
    for a in range(len(students)):
        for b in range(a + 1, len(students)):
            si, sj = students[a], students[b]
            ji, jj = related[si], related[sj]
            if ji == jj:
                continue
            opp_i, opp_j = (sj, si) if uses_opponent else (None, None)
            keys = [(ji, si, opp_i), (jj, si, opp_i), (jj, sj, opp_j), (ji, sj, opp_j)]
            if any(k not in rate for k in keys):
                continue
            w = {ji: {si: rate[keys[0]], sj: rate[keys[3]]}, jj: {si: rate[keys[1]], sj: rate[keys[2]]}}
            out.append({"judge_i": ji, "student_i": si, "judge_j": jj, "student_j": sj, "PLS": preference_leakage_score(w, ji, si, jj, sj)})
    return out


SALIERI_SOURCES = ("self", "pool", "norm")


def read_salieri_scores(path: str | Path) -> dict[str, dict]:
    """Read pointwise 1-5 scores for SALIERI (CSV or JSONL), one row per scored response.

    Columns: ``judge`` (the target model t: it wrote the ``self`` responses and scores every row),
    ``item_id``, ``source`` (``self`` = t's own response, exactly one per judge and item;
    ``pool`` = a response of the unrelated paired model to that item, one or more per item;
    ``norm`` = a norm model's response, optional, for the Eq. 3.4 standardization of the origin
    score), ``judge_score`` (t's score), ``reference_score`` (the reference agent's score);
    optional ``model`` (norm model name; rows without one form a single norm model) and
    ``response_id`` (free text). Returns ``{judge: {"items": [...], "own_judge", "own_reference",
    "pool_judge", "pool_reference", "judge_baseline", "reference_baseline"}}``.
    """
    path = Path(path)
    rows = read_table_rows(path, ("judge", "item_id", "source", "judge_score", "reference_score"))
    own: dict[str, dict[str, tuple[float, float]]] = {}
    pool: dict[str, dict[str, list[tuple[float, float]]]] = {}
    norm: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for lineno, row in rows:
        where = f"{path}, line {lineno}"
        judge, item, source = str(row["judge"]), str(row["item_id"]), str(row["source"]).strip().lower()
        if source not in SALIERI_SOURCES:
            raise InterpError(f"{where}: field 'source' must be one of {', '.join(SALIERI_SOURCES)}, got {row['source']!r}")
        scores = (_number(row["judge_score"], "judge_score", where), _number(row["reference_score"], "reference_score", where))
        if source == "self":
            if item in own.setdefault(judge, {}):
                raise InterpError(f"{where}: second 'self' row for judge {judge!r}, item {item!r}")
            own[judge][item] = scores
        elif source == "pool":
            pool.setdefault(judge, {}).setdefault(item, []).append(scores)
        else:
            model = str(_optional(row, "model") or "norm")
            norm.setdefault(judge, {}).setdefault(model, []).append(scores)
    if not own:
        raise InterpError(f"{path}: no 'self' rows")
    out = {}
    for judge, items_scores in sorted(own.items()):
        items = sorted(items_scores)
        no_pool = [i for i in items if i not in pool.get(judge, {})]
        if no_pool:
            raise InterpError(f"{path}: judge {judge!r} has no pool responses for item {no_pool[0]!r} ({len(no_pool)} items without a pool)")
        norms = norm.get(judge, {})
        out[judge] = {
            "items": items,
            "own_judge": [items_scores[i][0] for i in items],
            "own_reference": [items_scores[i][1] for i in items],
            "pool_judge": [[s[0] for s in pool[judge][i]] for i in items],
            "pool_reference": [[s[1] for s in pool[judge][i]] for i in items],
            "judge_baseline": float(np.mean([np.mean([s[0] for s in v]) for v in norms.values()])) if norms else 0.0,
            "reference_baseline": float(np.mean([np.mean([s[1] for s in v]) for v in norms.values()])) if norms else 0.0,
        }
    return out
