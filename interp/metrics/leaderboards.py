"""Self-preference read from several judges' leaderboards of the same instructions (AlpacaEval 2: every model's
win rate against one baseline model, one leaderboard per judge).

Definitions (all in points of percent, as the leaderboards give them):

- ``W[judge][model]``: the model's win rate against the baseline under the judge (raw, or length-controlled).
- A judge is also an evaluatee when its name (after the aliases: names that are the same model) is a rated model
  of its own leaderboard. The baseline itself is rated 50 by construction and is no self-rating.
- ``self_rating = W[J][J]``; ``others_rating = mean over the other judges K that rate J of W[K][J]``;
  ``difference = self_rating - others_rating`` (positive: the judge rates itself above what the others give it).
- Standard errors are the leaderboards' own (``standard_error``, ``lc_standard_error``), carried as for
  independent estimates: ``se(others) = sqrt(sum se_K^2) / k``, ``se(difference) = sqrt(se_self^2 +
  se(others)^2)``. The judges rate the same 805 answers, so their errors are likely positively correlated and
  the true ``se(difference)`` smaller: the carried one is conservative. Missing where any part lacks one.
- Preference Leakage's score (seed 004 Eq. 7-8, :func:`interp.metrics.pls.preference_leakage_score`) for each
  pair of judges that are both evaluatees and rate each other: in percent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from interp.errors import InterpError
from interp.metrics.pls import preference_leakage_score

SCALES = ("raw", "length_controlled")
# Judge names of AlpacaEval's annotator configs -> the model's row on the leaderboards (the same model).
DEFAULT_ALIASES: dict[str, str] = {
    "claude_3_opus": "claude-3-opus-20240229",
    "gpt4_turbo": "gpt4_1106_preview",
}


@dataclass(frozen=True)
class LeaderboardRow:
    """One rated model of a leaderboard: its win rate against the baseline (percent) and the standard error,
    raw and length-controlled (None where the leaderboard gives none)."""

    model: str
    win_rate: float
    standard_error: float
    n_total: int
    n_draws: float | None = None
    lc_win_rate: float | None = None
    lc_standard_error: float | None = None

    def rating(self, scale: str) -> tuple[float | None, float | None]:
        """(win rate, standard error) on ``scale`` (``raw`` or ``length_controlled``)."""
        if scale == "raw":
            return self.win_rate, self.standard_error
        return self.lc_win_rate, self.lc_standard_error

    @property
    def is_baseline(self) -> bool:
        """The baseline's own row: 50 % by construction, no error, every comparison a draw."""
        draws_all = self.n_draws is None or self.n_draws == self.n_total
        return self.win_rate == 50.0 and self.standard_error == 0.0 and draws_all


@dataclass(frozen=True)
class Leaderboard:
    """One judge's leaderboard: its rated models by name."""

    judge: str
    source: str
    rows: Mapping[str, LeaderboardRow]


def _canonical(name: str, aliases: Mapping[str, str]) -> str:
    return aliases.get(name, name)


def _renamed(board: Leaderboard, aliases: Mapping[str, str]) -> dict[str, LeaderboardRow]:
    out: dict[str, LeaderboardRow] = {}
    for name, row in board.rows.items():
        canonical = _canonical(name, aliases)
        if canonical in out:
            raise InterpError(f"{board.source}: {name!r} and another row are both {canonical!r} under the aliases")
        out[canonical] = row
    return out


def _baseline(board: Leaderboard, rows: Mapping[str, LeaderboardRow]) -> str | None:
    found = [name for name, row in rows.items() if row.is_baseline]
    if len(found) > 1:
        raise InterpError(f"{board.source}: several baseline rows (50 %, no error): {', '.join(found)}")
    return found[0] if found else None


def _rating(value: float | None, se: float | None) -> dict:
    return {"value": value, "se": se}


def _judge_reading(judge: str, own: str, tables: Mapping[str, Mapping[str, LeaderboardRow]]) -> dict:
    """Self-rating, the others' mean rating and the difference of one judge whose evaluatee row is ``own``."""
    others = [k for k in tables if k != judge and own in tables[k]]
    out: dict = {"evaluatee": own, "others": others, "n_total": tables[judge][own].n_total}
    for key in ("self_rating", "others_rating", "difference"):
        out[key] = {}
    for scale in SCALES:
        self_value, self_se = tables[judge][own].rating(scale)
        parts = [tables[k][own].rating(scale) for k in others]
        if not parts or self_value is None or any(v is None for v, _ in parts):
            others_value = others_se = None
        else:
            others_value = sum(v for v, _ in parts) / len(parts)
            ses = [se for _, se in parts]
            others_se = None if any(se is None for se in ses) else math.sqrt(sum(se * se for se in ses)) / len(ses)
        difference = None if others_value is None else self_value - others_value
        difference_se = (
            None if difference is None or self_se is None or others_se is None else math.hypot(self_se, others_se)
        )
        out["self_rating"][scale] = _rating(self_value, self_se)
        out["others_rating"][scale] = _rating(others_value, others_se)
        out["difference"][scale] = _rating(difference, difference_se)
    return out


def _pair_pls(i: str, own_i: str, j: str, own_j: str, tables: Mapping[str, Mapping[str, LeaderboardRow]]) -> dict:
    """PLS of two judges on each scale, in percent (None on a scale where one of the four rates is missing)."""
    pls: dict = {}
    for scale in SCALES:
        cells = {(a, b): tables[a][b].rating(scale)[0] for a in (i, j) for b in (own_i, own_j)}
        if any(v is None for v in cells.values()):
            pls[scale] = None
            continue
        w = {a: {b: cells[(a, b)] for b in (own_i, own_j)} for a in (i, j)}
        pls[scale] = 100.0 * preference_leakage_score(w, i, own_i, j, own_j)
    return {"judge_i": i, "evaluatee_i": own_i, "judge_j": j, "evaluatee_j": own_j, "pls": pls}


def cross_judge_self_preference(boards: Sequence[Leaderboard], aliases: Mapping[str, str] | None = None) -> dict:
    """The judge-by-evaluatee win-rate matrix of several judges' leaderboards and, for every judge that is also
    an evaluatee, its self-rating against the other judges' mean rating of it; PLS for every such pair (the
    module's docstring has the definitions). ``aliases``: names that are the same model (default
    :data:`DEFAULT_ALIASES`), applied to judge names and rated models alike.

    Refused (:class:`InterpError`): fewer than two leaderboards, a judge named twice, leaderboards against
    different baselines, two leaderboards with no rated model in common. Returns ``{"baseline", "leaderboards":
    {judge: source}, "matrix": {scale: {judge: {model: win rate}}}, "judges": {judge: {"evaluatee", "others",
    "n_total", "self_rating", "others_rating", "difference": {scale: {"value", "se"}}}}, "pairs": [{"judge_i",
    "evaluatee_i", "judge_j", "evaluatee_j", "pls": {scale: percent}}], "not_rated": {judge: why}}``.
    """
    aliases = DEFAULT_ALIASES if aliases is None else aliases
    if len(boards) < 2:
        raise InterpError("a cross-judge reading needs at least two leaderboards (one per judge)")
    tables: dict[str, dict[str, LeaderboardRow]] = {}
    sources: dict[str, str] = {}
    for board in boards:
        if board.judge in sources:
            raise InterpError(f"judge {board.judge!r} is named twice ({sources[board.judge]} and {board.source})")
        sources[board.judge] = board.source
        tables[board.judge] = _renamed(board, aliases)
    baselines = {j: _baseline(board, tables[j]) for j, board in zip(tables, boards, strict=True)}
    known = {b for b in baselines.values() if b is not None}
    if len(known) > 1:
        listed = ", ".join(f"{sources[j]}: {b}" for j, b in baselines.items() if b is not None)
        raise InterpError(f"the leaderboards rate against different baselines ({listed}); add --alias if they are one")
    baseline = known.pop() if known else None
    rated = {j: set(rows) - {baseline} for j, rows in tables.items()}
    judges = list(tables)
    for a, ja in enumerate(judges):
        for jb in judges[a + 1 :]:
            if not rated[ja] & rated[jb]:
                raise InterpError(f"{sources[ja]} and {sources[jb]} rate no model in common")
    matrix = {
        scale: {j: {m: row.rating(scale)[0] for m, row in rows.items()} for j, rows in tables.items()}
        for scale in SCALES
    }
    readings: dict[str, dict] = {}
    not_rated: dict[str, str] = {}
    for judge in judges:
        own = _canonical(judge, aliases)
        if own == baseline:
            not_rated[judge] = f"its row {own!r} is the baseline (50 % by construction)"
        elif own not in tables[judge]:
            not_rated[judge] = f"its own leaderboard does not rate {own!r} (add --alias {judge}=ROW if it does)"
        else:
            readings[judge] = _judge_reading(judge, own, tables)
    pairs = []
    rated_judges = list(readings)
    for a, i in enumerate(rated_judges):
        for j in rated_judges[a + 1 :]:
            own_i, own_j = readings[i]["evaluatee"], readings[j]["evaluatee"]
            if own_j in tables[i] and own_i in tables[j]:
                pairs.append(_pair_pls(i, own_i, j, own_j, tables))
    return {
        "baseline": baseline,
        "leaderboards": sources,
        "matrix": matrix,
        "judges": readings,
        "pairs": pairs,
        "not_rated": not_rated,
    }
