"""The short results table a command ends with (`interp demo`, `dbg`, `intervene`, `validate`, `sweep`), and
the same content as JSON for `--json`.

One payload, a typed `ResultsPayload` (`interp.report.payload`), two renderings: `results_payload(...)` gathers
  - "dbg": per judge, DBG (hard, with its bootstrap interval, and soft), position consistency, label mass and
    the reliability flag the report shows (`interp.metrics.dbg.judge_reliability`: a judge too weak to judge);
  - "causal": per judge, the causal verdict of an intervention result with its numbers (effect on P(own) and
    interval, p-value and alpha, test items) where the result holds them;
  - "sweep": the sweep points that move P(own) most;
and `print_results` draws it with rich (reading its rows' attributes), `payload_json` prints it as JSON (NaN as
null; a part the command did not set is left out).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from interp.formatting import number, p_value, pct, pts, pts_ci, pts_interval
from interp.report.payload import (
    CausalRow,
    DbgRow,
    Estimate,
    HumanRow,
    PointwiseRow,
    ResultsPayload,
    SweepPoint,
    SweepTop,
    TimingsRecord,
)
from interp.results import codec
from interp.results.base import ResultModel
from interp.results.causal import CausalResult, JudgeTest
from interp.results.rows import SweepRow
from interp.results.summary import Correctness, GoldHuman, RunSummary

SWEEP_ROWS = 10  # the points shown of a sweep (largest drop of P(own) first); all are in results.csv
PIPED_WIDTH = 200  # columns of the tables when stdout is a pipe or a file: no terminal width to fit


def json_safe(value):
    """A JSON-safe copy: NaN and infinities -> None, tuples -> lists, numpy scalars -> Python numbers, paths -> str."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def payload_json(payload: ResultsPayload | dict | list) -> str:
    """The payload (or any other JSON data a command prints) as indented JSON, NaN and infinities as null."""
    data = payload.to_json() if isinstance(payload, ResultModel) else payload
    return json.dumps(json_safe(data), indent=2, allow_nan=False)


# ---- gathering ----------------------------------------------------------------------------------

DBG_KEYS = (
    "own_model",
    "dbg_hard",
    "dbg_ci",
    "dbg_soft",
    "tie_share",
    "dbg_no_ties",
    "position_consistency",
    "mean_label_mass",
)


def dbg_rows(summary: RunSummary) -> list[DbgRow]:
    """Per judge of a run's summary: DBG with interval, soft DBG, and whether the judge can judge at all."""
    return [
        DbgRow(
            judge=judge,
            **{key: getattr(s, key) for key in DBG_KEYS},
            reliable=not s.unreliable_because,
            unreliable_because=list(s.unreliable_because),
        )
        for judge, s in summary.judges.items()
    ]


def reasoning_lines(summary: RunSummary) -> list[str]:
    """Per author whose answers lost reasoning before judging (`RunSummary.reasoning`), one sentence."""
    return [
        f"{model}: reasoning removed before judging from {r.n_answers} of {r.n_items} answers "
        f"(mean {r.mean_chars:.0f} characters, {r.mean_words:.0f} words per answer; reasoning/ in the run)"
        for model, r in (summary.reasoning or {}).items()
    ]


def human_rows(human: GoldHuman) -> list[HumanRow]:
    """Per gold judge and for the ensemble (last): agreement with human labels, with its interval and both win
    rates of the first answer (`RunSummary.gold.human`)."""
    named = [*human.judges.items(), ("ensemble", human.ensemble)]
    return [HumanRow(gold=name, **r.model_dump()) for name, r in named]


def causal_rows(judges: dict[str, JudgeTest], n_items: int | None = None) -> list[CausalRow]:
    """Per judge of a causal test (`CausalResult.judges`): the self-preference verdict (True, False, or None
    with its reason), the within-judge change, the between-judge test, the share of the gap removed; numbers a
    result lacks are None (`n_items`: the test items where the result does not say)."""
    rows = []
    for judge, r in judges.items():
        prefix = f"{judge}: "
        effect, share = r.self_effect, r.share_removed
        rows.append(
            CausalRow(
                judge=judge,
                causal=r.causal,
                reason=r.reason,
                verdict=r.verdict[len(prefix) :] if r.verdict.startswith(prefix) else r.verdict,
                effect=None
                if effect is None
                else Estimate(mean=effect.mean, ci=None if effect.ci is None else list(effect.ci)),
                p_within=r.within_judge.p_value if r.within_judge else None,
                n_controls=r.test.n_controls if r.test else None,
                p_value=r.p_value,
                p_holm=r.p_holm,
                test_alpha=r.test_alpha,
                share_removed=share.estimate if share else None,
                share_removed_ci=[share.low, share.high] if share else None,
                n_test=r.n_test if r.n_test is not None else n_items,
                # only where the result has the check: a result from before it shows what it showed
                **({"specific": r.specificity.passed, "p_specific": r.specificity.p_value} if r.specificity else {}),
            )
        )
    return rows


def top_sweep_rows(rows: list[dict] | list[SweepRow], limit: int = SWEEP_ROWS) -> list[SweepPoint]:
    """The sweep points (results.csv rows, as `SweepRow`s) that lower P(own) most, at most `limit`."""
    ordered = sorted(
        codec.sweep_rows(rows), key=lambda r: (r.effect is None, r.effect if r.effect is not None else 0.0)
    )
    return [
        SweepPoint(
            judge=r.judge,
            point=", ".join(f"{k}={v}" for k, v in r.point.items()),
            effect=Estimate(mean=r.effect, ci=[r.effect_lo, r.effect_hi]),
            dbg_hard=r.dbg_hard,
            dbg_ci=[r.dbg_lo, r.dbg_hi],
            p_value=r.p_value,
            p_holm=r.p_holm,
        )
        for r in ordered[:limit]
    ]


def results_payload(
    summary: RunSummary | dict | None = None,
    *,
    causal: dict[str, JudgeTest] | dict | None = None,
    n_items: int | None = None,
    sweep: list[dict] | None = None,
    files: dict | None = None,
) -> ResultsPayload:
    """What a command ends with. `causal`: judge -> that judge's intervention result; `sweep`: results.csv rows;
    `files`: name -> path of what the command wrote (the report, results)."""
    payload = ResultsPayload()
    if summary is not None:
        summary = codec.parse(RunSummary, summary, "summary")
        payload.dbg = dbg_rows(summary)
        if summary.reasoning:
            payload.reasoning = reasoning_lines(summary)
        if summary.gold.human:  # Table 1: gold against human labels
            payload.gold_human = human_rows(summary.gold.human)
    if causal is not None:
        judges = (
            codec.parse(CausalResult, {"judges": causal}, "causal result").judges
            if isinstance(causal, dict)
            else causal
        )
        payload.causal = causal_rows(judges, n_items)
    if sweep is not None:
        payload.sweep = SweepTop(n_points=len(sweep), top=top_sweep_rows(sweep))
    if files:
        payload.files = {name: str(path) for name, path in files.items()}
    return payload


# ---- drawing ------------------------------------------------------------------------------------


def results_console():
    """The console results are drawn on: stdout at its width on a terminal; piped or logged (no terminal), a
    fixed wide layout (`PIPED_WIDTH`), so a long name is not broken across lines."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=PIPED_WIDTH)


def _table(title: str):
    """One look for every table: no vertical rules, fits 80 columns."""
    from rich import box
    from rich.table import Table as RichTable

    return RichTable(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        show_edge=False,
    )


def titled_table(title: str):
    """The one look of `_table`, for the terminal printers of other report modules."""
    return _table(title)


def _name_column(console, table, header: str, **options) -> None:
    """A column of names: folded on a terminal; on one line, cut with an ellipsis, when piped."""
    piped = not console.is_terminal
    table.add_column(header, overflow="ellipsis" if piped else "fold", no_wrap=piped, **options)


def print_results(payload: ResultsPayload, console=None) -> None:
    """The payload as rich tables on the terminal (stdout; `results_console`).

    On a terminal a long judge name folds within its column; elsewhere (a pipe, a log file) a name is never
    broken across lines: the layout is wide and a name longer than its column ends with an ellipsis.
    """
    console = console or results_console()
    if payload.dbg:
        _print_dbg(payload.dbg, payload.reasoning or [], console)
    if payload.gold_human:
        _print_gold_human(payload.gold_human, console)
    if payload.pointwise:  # SALIERI's pointwise mode: 1-5 scores (the SALIERI score: `interp metrics run`)
        _print_pointwise(payload.pointwise, console)
    if payload.correctness:
        _print_correctness(payload.correctness, console)
    if payload.causal is not None:
        _print_causal(payload.causal, console)
    if payload.sweep:
        _print_sweep(payload.sweep, console)
    if payload.timings:
        _print_timings(payload.timings, console)
    console.print()
    for name, path in (payload.files or {}).items():
        console.print(f"{name}: {path}", highlight=False, soft_wrap=True)


def _print_dbg(rows: list[DbgRow], reasoning: list[str], console) -> None:
    """The DBG table, its legend, and a note per judge too weak to judge (with the reasoning lines)."""
    table = _table("Self-preference: DBG per judge (pts, 95% bootstrap interval)")
    _name_column(console, table, "judge", min_width=14)
    for name in ("DBG", "95% CI", "soft", "ties", "w/o ties", "pos.cons", "P(label)", "reliable"):
        table.add_column(name, justify="right", no_wrap=True)
    notes = []
    for r in rows:
        own = f" (own: {r.own_model})" if r.own_model not in (None, r.judge) else ""
        flag = "yes" if r.reliable else "[red]no[/red]"
        if not r.reliable:
            notes.append(f"{r.judge}: too weak to judge, its DBG is not evidence ({'; '.join(r.unreliable_because)})")
        table.add_row(
            r.judge + own,
            pts(r.dbg_hard),
            pts_ci(r.dbg_ci),
            pts(r.dbg_soft),
            pct(r.tie_share),
            pts(r.dbg_no_ties),
            pct(r.position_consistency),
            number(r.mean_label_mass),
            flag,
        )
    console.print(table)
    console.print(
        "ties: share of items whose verdict changes when the answers swap; w/o ties: DBG over the "
        "items each of judge and gold decided (Figure 8)",
        highlight=False,
        soft_wrap=True,
    )
    for note in [*notes, *reasoning]:
        console.print(note, highlight=False, soft_wrap=True)


def _print_gold_human(rows: list[HumanRow], console) -> None:
    """Gold against human labels (Table 1)."""
    console.print()
    table = _table("Gold against human labels (Table 1): agreement on the labelled items, win rate of the first answer")
    _name_column(console, table, "gold", min_width=14)
    for name in ("n", "agreement", "95% CI", "gold: 1st wins", "people: 1st wins", "people tie"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in rows:
        low, high = r.agreement_ci or [None, None]
        table.add_row(
            r.gold,
            str(r.n),
            pct(r.agreement),
            f"[{pct(low)}, {pct(high)}]",
            pct(r.gold_win_rate_first),
            pct(r.human_win_rate_first),
            pct(r.human_tie_share),
        )
    console.print(table)


def _print_pointwise(rows: list[PointwiseRow], console) -> None:
    """Pointwise 1-5 scores per judge and author, and a note per judge too weak to score."""
    table = _table("Pointwise 1-5 scores per judge and author (expected from the score tokens; parsed after [RESULT])")
    _name_column(console, table, "judge", min_width=14)
    _name_column(console, table, "author", min_width=10)
    for name in ("n", "expected", "parsed", "n parsed", "reliable"):
        table.add_column(name, justify="right", no_wrap=True)
    weak = {}
    for r in rows:
        if not r.reliable:
            weak[r.judge] = r.unreliable_because
        table.add_row(
            r.judge,
            r.author,
            str(r.n),
            number(r.mean_expected_score),
            number(r.mean_parsed_score),
            str(r.n_parsed),
            "yes" if r.reliable else "[red]no[/red]",
        )
    console.print(table)
    for judge, reasons in weak.items():
        console.print(f"{judge}: too weak to score, its 1-5 scores are not evidence ({'; '.join(reasons)})")


def _print_correctness(correctness: Correctness, console) -> None:
    """The graded answers: per author how many were correct of those graded."""
    lines = ", ".join(f"{author}: {c.correct} of {c.graded}" for author, c in correctness.authors.items())
    console.print(
        f"Graded answers correct: {lines} ({correctness.no_target} items without a target)",
        highlight=False,
        soft_wrap=True,
    )


def _specific_cell(row: CausalRow) -> str:
    """The specificity check's cell: passed or not, with its p ("n/a": not checked; "no (p n/a)": too few pairs)."""
    if row.specific is None:
        return "n/a"
    return f"{'yes' if row.specific else 'no'} (p {p_value(row.p_specific)})"


def _print_causal(rows: list[CausalRow], console) -> None:
    """The causal test per judge, and each judge's verdict in words."""
    console.print()
    table = _table(
        "Causal test: within-judge change of P(own) (pts, 95% CI); self-preference against control "
        "judges (the Holm-adjusted p decides)"
    )
    _name_column(console, table, "judge", min_width=14)
    table.add_column("self-pref.", no_wrap=True)
    checked = any(r.specific is not None for r in rows)  # the specificity column: results that have the check
    names = ("change", "95% CI", "p within", "controls", "p between", "p Holm", "alpha", "gap removed")
    for name in (*names, *(["specific"] if checked else []), "n"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in rows:
        effect = r.effect or Estimate()
        causal = {True: "[green]yes[/green]", False: "no", None: "n/a"}[r.causal]
        table.add_row(
            r.judge,
            causal,
            pts(effect.mean),
            pts_ci(effect.ci),
            p_value(r.p_within),
            "n/a" if r.n_controls is None else str(r.n_controls),
            p_value(r.p_value),
            p_value(r.p_holm),
            number(r.test_alpha),
            pct(r.share_removed),
            *([_specific_cell(r)] if checked else []),
            "n/a" if r.n_test is None else str(r.n_test),
        )
    if not rows:
        console.print("Causal test: not run (no item of the run in the split it needs).")
    else:
        console.print(table)
        for r in rows:
            console.print(f"{r.judge}: {r.verdict}", highlight=False, soft_wrap=True)


def _print_sweep(sweep: SweepTop, console) -> None:
    """The sweep points that move P(own) most."""
    console.print()
    table = _table(
        f"Sweep: {len(sweep.top)} of {sweep.n_points} points, largest drop of P(own) first (pts); "
        f"p: sign-flip test of each point, Holm-adjusted over all {sweep.n_points}"
    )
    _name_column(console, table, "judge")
    _name_column(console, table, "point")
    for name in ("effect [95% CI]", "p", "p (Holm)", "DBG after [95% CI]"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in sweep.top:
        table.add_row(
            r.judge,
            r.point,
            pts_interval(r.effect.mean, r.effect.ci),
            p_value(r.p_value),
            p_value(r.p_holm),
            pts_interval(r.dbg_hard, r.dbg_ci),
        )
    console.print(table)


def _print_timings(timings: TimingsRecord, console) -> None:
    """Where the time went, the torch threads used and the peak memory."""
    console.print()
    table = _table("Where the time went")
    table.add_column("step", no_wrap=True)
    table.add_column("seconds", justify="right", no_wrap=True)
    table.add_column("share", justify="right", no_wrap=True)
    total = timings.total_s or 0.0
    for step, seconds in timings.steps.items():
        table.add_row(step, f"{seconds:.1f}", pct(seconds / total if total else None))
    table.add_row("total", f"{total:.1f}", "")
    console.print(table)
    used = timings.torch_threads_used or ["unknown"]  # Timings.record: every count the job ran on
    console.print(
        f"torch threads: {' -> '.join(str(n) for n in used)} (re-decided between batches from the free cores)",
        highlight=False,
    )
    if timings.peak_rss_gb is not None:
        gpu = f", GPU {timings.peak_gpu_gb:.2f} GB allocated" if timings.peak_gpu_gb is not None else ""
        console.print(f"peak memory: {timings.peak_rss_gb:.2f} GB resident{gpu}", highlight=False)
