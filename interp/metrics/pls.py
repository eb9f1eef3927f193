"""Preference Leakage Score (seed 004, Eq. 7-8 and App. B.2): win rates with a tie policy, PLS, and the
reader of judge x student win-rate tables."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from interp.errors import InterpError
from interp.metrics.tables import number, optional_field, read_table_rows

TiePolicy = Literal["half", "exclude", "loss"]
TIE_POLICIES: tuple[str, ...] = ("half", "exclude", "loss")


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
        win = number(row["win_rate"], "win_rate", where)
        tie = optional_field(row, "tie_rate")
        loss = optional_field(row, "loss_rate")
        parsed.append(
            (
                where,
                row,
                win,
                None if tie is None else number(tie, "tie_rate", where),
                None if loss is None else number(loss, "loss_rate", where),
            )
        )
    scale = 100.0 if any(max(w, t or 0.0, l or 0.0) > 1.0 for _, _, w, t, l in parsed) else 1.0
    out = []
    for where, row, win, tie, loss in parsed:
        if tie is not None:
            loss = scale - win - tie if loss is None else loss
            if loss < -1e-9:
                raise InterpError(f"{where}: win_rate + tie_rate exceed {scale:g}")
            win = win_rate_with_ties(win, tie, max(loss, 0.0), tie_policy) * scale
        opponent, student_of = optional_field(row, "opponent"), optional_field(row, "student_of")
        out.append(
            WinRateEntry(
                str(row["judge"]),
                str(row["student"]),
                None if opponent is None else str(opponent),
                win,
                None if student_of is None else str(student_of),
            )
        )
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
            out.append(
                {
                    "judge_i": ji,
                    "student_i": si,
                    "judge_j": jj,
                    "student_j": sj,
                    "PLS": preference_leakage_score(w, ji, si, jj, sj),
                }
            )
    return out
