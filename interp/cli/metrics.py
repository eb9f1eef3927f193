"""`interp metrics`: the seed metrics family (Chen et al. 2025, SALIERI, Preference Leakage) on
judgment records. All rates are printed in percent; library functions in :mod:`interp.metrics`
return fractions."""

from __future__ import annotations

import math
from enum import Enum
from pathlib import Path

import typer

from interp import metrics
from interp.analysis.lenses import run_lenses
from interp.errors import InterpError
from interp.formatting import fixed
from interp.report.terminal import payload_json


class VerdictRule(str, Enum):
    """How a verdict is read from P(A): hard (Eq. 1), soft (the probability), or the paper's choice per metric."""

    hard = "hard"
    soft = "soft"
    paper = "paper"


class TieChoice(str, Enum):
    """How a tie counts in a rate: half a win, left out, or a loss."""

    half = "half"
    exclude = "exclude"
    loss = "loss"


def _percent(value):
    if isinstance(value, (list, tuple)):
        return [_percent(v) for v in value]
    return value * 100.0 if isinstance(value, float) else value


def _cell(value, width: int = 9) -> str:
    return f"{fixed(value) if isinstance(value, float) else value!s:>{width}}"


def _emit_json(payload) -> None:
    typer.echo(payload_json(payload))


def _table(header: list[str], rows: list[list]) -> None:
    widths = [max(len(h), *(len(_cell(r[i]).strip()) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    typer.echo("  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths, strict=False))))
    for row in rows:
        cells = []
        for i, (cell, w) in enumerate(zip(row, widths, strict=False)):
            text = _cell(cell).strip()
            cells.append(text.rjust(w) if i else text.ljust(w))
        typer.echo("  ".join(cells))


def chen2025_command(
    file: Path = typer.Argument(
        ..., help="Chen et al. 2025 judgments, JSONL or JSONL.gz (the authors' released records; fields below)."
    ),
    verdict: VerdictRule = typer.Option(
        VerdictRule.paper,
        "--verdict",
        help="VerdictRule per metric: hard (Eq. 1) for all, soft for all, or paper = hard for "
        "SPR/LSPR/SPR_diff/SPR_same, soft for JA/HSPP.",
    ),
    per_pair: bool = typer.Option(False, "--per-pair", help="Also print one row per (judge, evaluatee)."),
    confidence: bool = typer.Option(
        False, "--confidence", help="Also print the App. C.4 confidence analysis (Table 20)."
    ),
    ci: bool = typer.Option(False, "--ci", help="Also print bootstrap intervals (instructions resampled)."),
    n_boot: int = typer.Option(1000, "--n-boot", help="Bootstrap resamples for --ci."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed for --ci."),
    level: float = typer.Option(0.95, "--level", help="Confidence level for --ci."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Chen et al. 2025 metrics per judge, in percent (not rounded in --json).

    Without extra flags the JSON is {judge: {SPR, JA, LSPR, HSPP, SPR_diff, SPR_same, n_evaluatees}},
    each metric the macro-average over the judge's evaluatees. With --per-pair, --confidence or --ci
    the JSON becomes {"judges": <that table>, "pairs": [{judge, evaluatee, n_items, n_diff, SPR, ...,
    counts: {metric: (numerator, denominator) as a 2-list}}], "confidence": {judge: {SPR_set, HSPP_set, gap,
    n_SPR_set, n_HSPP_set}}, "ci": {judge: {metric: (low, high) as a 2-list}}}, holding only the sections asked for.
    """
    records = metrics.read_chen2025(file)
    mode = verdict.value
    table = {
        judge: {k: (_percent(v) if k != "n_evaluatees" else v) for k, v in entry.items()}
        for judge, entry in metrics.chen2025_judge_table(records, mode).items()
    }
    sections: dict = {}
    if per_pair:
        sections["pairs"] = [
            {
                "judge": row.judge,
                "evaluatee": row.evaluatee,
                "n_items": row.n_items,
                "n_diff": row.n_diff,
                **{m: _percent(row.values[m]) for m in metrics.CHEN_METRICS},
                "counts": {m: list(row.counts[m]) for m in metrics.CHEN_METRICS},
            }
            for row in metrics.chen2025_pair_table(records, mode)
        ]
    if confidence:
        sections["confidence"] = {
            judge: {k: (_percent(v) if isinstance(v, float) else v) for k, v in entry.items()}
            for judge, entry in metrics.chen2025_confidence(records, mode).items()
        }
    if ci:
        sections["ci"] = {
            judge: {m: _percent(list(interval)) for m, interval in intervals.items()}
            for judge, intervals in metrics.chen2025_bootstrap(
                records, mode, n_boot=n_boot, seed=seed, level=level
            ).items()
        }

    if as_json:
        _emit_json({"judges": table, **sections} if sections else table)
        return
    typer.echo(f"Chen et al. 2025 metrics (percent, verdict={mode}) from {file}")
    _table(
        ["judge", *metrics.CHEN_METRICS, "n_eval"],
        [[j, *(e[m] for m in metrics.CHEN_METRICS), e["n_evaluatees"]] for j, e in table.items()],
    )
    _print_chen_sections(sections, level)


def pls_command(
    file: Path = typer.Argument(
        ...,
        help="Win rates, CSV or JSONL: judge, student, win_rate; optional tie_rate, loss_rate, opponent, student_of.",
    ),
    tie_policy: TieChoice = typer.Option(
        TieChoice.half, "--tie-policy", help="How ties count when a tie_rate column is present."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Preference Leakage Score (Li et al., Eq. 7-8) in percent.

    One row per (judge, student): win_rate = the student's win rate under that judge (percent or
    fraction: PLS is scale-free). A student is related to the judge named in `student_of`, else to a
    judge of the same name, else to the one judge whose name is part of the student's name. Optional
    tie_rate (and loss_rate) apply --tie-policy: half = a tie is half a win, exclude = ties dropped,
    loss = a tie is no win. Optional opponent restricts a rate to one head-to-head comparison.
    JSON: [{judge_i, student_i, judge_j, student_j, PLS}].
    """
    entries = metrics.read_win_rates(file, tie_policy.value)
    rows = metrics.preference_leakage_table(entries)
    if not rows:
        raise InterpError(f"{file}: no pair of judges that both judged both of their related students")
    out = [{**row, "PLS": _percent(row["PLS"])} for row in rows]
    if as_json:
        _emit_json(out)
        return
    _table(
        ["judge_i", "student_i", "judge_j", "student_j", "PLS %"],
        [[r["judge_i"], r["student_i"], r["judge_j"], r["student_j"], r["PLS"]] for r in out],
    )


def salieri_command(
    file: Path = typer.Argument(..., help="Pointwise scores, CSV or JSONL (columns below)."),
    resolution: float = typer.Option(1.0, "--resolution", help="Score bin width for the histogram rebalancing."),
    n_boot: int = typer.Option(1000, "--n-boot", help="Bootstrap resamples (items)."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    level: float = typer.Option(0.95, "--level", help="Confidence level."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """SALIERI self-enhancement bias per target model, in score points (1-5 scale).

    One row per scored response with columns judge (the target model t: it wrote the self
    responses and scores every row), item_id, source (self = t's response, one per item; pool = a
    response of the unrelated paired model to that item, one or more per item; norm = a norm
    model's response, optional, standardizes the origin score), judge_score (t's score),
    reference_score (the reference agent's score), and optional model (norm model name) and
    response_id. Prints the origin score (thesis Eq. 3.7), the SALIERI score (Eq. 5.1-5.2, pool
    quality-matched to the self set) with bootstrap intervals, lambda (detectable ratio, estimated
    on the pool) and the matching's residual mismatch.
    """
    data = metrics.read_salieri_scores(file)
    reports = {
        judge: metrics.salieri_report(
            d["own_judge"],
            d["own_reference"],
            d["pool_judge"],
            d["pool_reference"],
            baselines=(d["judge_baseline"], d["reference_baseline"]),
            resolution=resolution,
            bootstrap=metrics.Bootstrap(n_boot, seed, level),
        )
        for judge, d in data.items()
    }
    if as_json:
        _emit_json(reports)
        return
    _table(
        ["judge", "n", "origin", "origin_lo", "origin_hi", "SALIERI", "sal_lo", "sal_hi", "lambda", "mismatch", "gap"],
        [
            [
                j,
                r["n_items"],
                r["origin"],
                *r["origin_ci"],
                r["salieri"],
                *r["salieri_ci"],
                r["lambda"],
                r["histogram_mismatch"],
                r["mean_abs_gap"],
            ]
            for j, r in reports.items()
        ],
    )


def _print_chen_sections(sections: dict, level: float) -> None:
    """The optional Chen et al. tables asked for: per pair, the confidence analysis, bootstrap intervals."""
    if "pairs" in sections:
        typer.echo("")
        _table(
            ["judge", "evaluatee", *metrics.CHEN_METRICS],
            [[r["judge"], r["evaluatee"], *(r[m] for m in metrics.CHEN_METRICS)] for r in sections["pairs"]],
        )
    if "confidence" in sections:
        typer.echo("\nMean P(self) on the SPR set vs the HSPP set (App. C.4)")
        _table(
            ["judge", "SPR_set", "HSPP_set", "gap", "n_SPR", "n_HSPP"],
            [
                [j, e["SPR_set"], e["HSPP_set"], e["gap"], e["n_SPR_set"], e["n_HSPP_set"]]
                for j, e in sections["confidence"].items()
            ],
        )
    if "ci" in sections:
        typer.echo(f"\nBootstrap {level:.0%} intervals")
        _table(
            ["judge", *metrics.CHEN_METRICS],
            [
                [j, *(f"{iv[m][0]:.2f}-{iv[m][1]:.2f}" for m in metrics.CHEN_METRICS)]
                for j, iv in sections["ci"].items()
            ],
        )


def run_command(
    run_dir: Path = typer.Argument(
        ..., help="A DBG run directory holding judgments.jsonl and, optionally, correctness.jsonl."
    ),
    n_boot: int = typer.Option(1000, "--n-boot", help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
    salieri_pool: str = typer.Option(
        "item",
        "--salieri-pool",
        help="pointwise runs: the SALIERI pool, item (the other author's answer to the item) or task (its "
        "answers to the task's items)",
    ),
) -> None:
    """Every lens that applies to a DBG run's records, in percent.

    judgments.jsonl: one object a line {judge, item_id, order: ab|ba, model_a, model_b, p_a, p_b,
    p_t (null without ties)}, model_a/model_b the authors in slots A/B. For each judge that is also an
    author: SPR (Chen et al. Eq. 1 verdicts over both orders), its own responses' hard and soft win
    rates, position consistency. With correctness.jsonl ({item_id, model, correct}): the Chen et al.
    table (SPR, JA, LSPR, HSPP, SPR_diff, SPR_same). Where two judges are related to the two authors (the
    same model, or as the config's relatedness says: inheritance, family): PLS, and PLS grouped by relatedness.
    With the run's gold (gold.jsonl), for every judge whose own model is an author (an organism's is its
    base): the unjustified and legitimate self-preference rates and the Evaluator Quality Baseline.
    A pointwise run (mode = "pointwise"): the SALIERI score of every judge that is an author, from the run's
    own 1-5 scores (key "salieri", on the score scale; null for a pairwise run).
    JSON: {"self_preference": {judge: {...}}, "chen2025": {judge: {...}} | null, "pls": [...], "pls_by_relatedness":
    {...}, "gold_lenses": {judge: {...}}, "salieri": {...} | null}.
    """
    from interp.run.store import RunDir, check_finished

    if RunDir(run_dir).config.is_file():  # a run made by `interp dbg`: its lenses are over finished judging only
        check_finished(run_dir)
    lenses = run_lenses(run_dir, n_boot=n_boot, seed=seed, salieri_pool=salieri_pool)
    salieri = lenses.pop("salieri")  # on the 1-5 score scale, not a rate: not in percent
    lenses = _percent_tree(lenses) | {"salieri": salieri}
    if as_json:
        _emit_json(lenses)
        return
    if salieri is not None:
        _print_run_salieri(salieri)
        return
    typer.echo(f"Lenses for {run_dir} (percent)")
    if lenses["self_preference"]:
        typer.echo("\nSelf-preference (judges that are also authors)")
        _table(
            ["judge", "n", "SPR", "SPR_lo", "SPR_hi", "win_hard", "win_soft", "pos_cons"],
            [
                [
                    j,
                    e["n_items"],
                    e["SPR"],
                    *e["SPR_ci"],
                    e["win_rate_own_hard"],
                    e["win_rate_own_soft"],
                    e["position_consistency"],
                ]
                for j, e in lenses["self_preference"].items()
            ],
        )
    else:
        typer.echo("\nNo judge is also an author with both orders judged: no self-preference lens.")
    if lenses["chen2025"]:
        typer.echo("\nChen et al. 2025 (correctness.jsonl)")
        _table(
            ["judge", *metrics.CHEN_METRICS],
            [[j, *(e[m] for m in metrics.CHEN_METRICS)] for j, e in lenses["chen2025"].items()],
        )
    _print_gold_lenses(lenses["gold_lenses"])
    _print_pls(lenses)


def _print_gold_lenses(gold: dict) -> None:
    """The gold lenses' tables: unjustified and legitimate self-preference, the Evaluator Quality Baseline."""
    if gold:
        typer.echo(
            "\nUnjustified and legitimate self-preference (Roytburg et al. 2025): judge picks its own "
            "answer where gold prefers the other / its own"
        )
        _table(
            ["judge", "own", "unjust", "unj_lo", "unj_hi", "n_unj", "legit", "leg_lo", "leg_hi", "n_leg"],
            [
                [j, e["own_model"], *_rate_cells(e["unjustified"]), *_rate_cells(e["legitimate"])]
                for j, e in gold.items()
            ],
        )
        typer.echo(
            "\nEvaluator Quality Baseline (arXiv 2601.22548): votes for its own wrong answer vs another "
            "model's wrong answer"
        )
        _table(
            ["judge", "own_wrong", "own_lo", "own_hi", "other_wrong", "oth_lo", "oth_hi", "diff", "diff_lo", "diff_hi"],
            [
                [
                    j,
                    *_rate_cells(q["own_wrong"])[:3],
                    *_rate_cells(q["other_wrong"])[:3],
                    *_rate_cells(q["difference"])[:3],
                ]
                for j, q in ((j, e["evaluator_quality_baseline"]) for j, e in gold.items())
            ],
        )
    else:
        typer.echo(
            "\nNo gold verdicts (gold.jsonl) or no judge whose own model is an author: no "
            "unjustified/legitimate rates, no Evaluator Quality Baseline."
        )


def _print_pls(lenses: dict) -> None:
    """The Preference Leakage Score tables (nothing where no two judges relate to the two authors)."""
    if lenses["pls"]:
        typer.echo("\nPreference Leakage Score (judges related to the two authors: same model, inheritance, family)")
        _table(
            ["judges", "students", "relatedness", "n", "PLS_hard", "PLS_lo", "PLS_hi", "PLS_soft"],
            [
                [
                    " vs ".join(r["judges"]),
                    " vs ".join(r["students"]),
                    "/".join(r["relatedness"]),
                    r["n_items"],
                    r["PLS_hard"],
                    *r["PLS_hard_ci"],
                    r["PLS_soft"],
                ]
                for r in lenses["pls"]
            ],
        )
        _table(
            ["relatedness", "pairs", "PLS_hard", "PLS_soft"],
            [[k, g["n_pairs"], g["PLS_hard"], g["PLS_soft"]] for k, g in lenses["pls_by_relatedness"].items()],
        )


def _print_run_salieri(salieri: dict) -> None:
    typer.echo(f"SALIERI on this pointwise run (1-5 scores; reference agent: {salieri['reference']})")
    if salieri.get("reason"):
        typer.echo(salieri["reason"])
    rows = [(j, r) for j, r in salieri["judges"].items() if r is not None]
    if not rows:
        return
    _table(
        ["judge", "n", "origin", "origin_lo", "origin_hi", "SALIERI", "sal_lo", "sal_hi", "mismatch", "gap"],
        [
            [
                j,
                r["n_items"],
                r["origin"],
                *r["origin_ci"],
                r["salieri"],
                *r["salieri_ci"],
                r["histogram_mismatch"],
                r["mean_abs_gap"],
            ]
            for j, r in rows
        ],
    )


def _rate_cells(rate: dict) -> list:
    """value, interval low, high, n of a `subset_rate` (n/a where the subset is empty)."""
    value, (low, high) = rate["value"], rate["ci"]
    return [
        math.nan if value is None else value,
        math.nan if low is None else low,
        math.nan if high is None else high,
        rate["n"],
    ]


_COUNT_KEYS = {"n_items", "n_evaluatees", "n", "judges"}


def _percent_tree(value, key: str | None = None):
    """Percent copy of a :func:`metrics.run_lenses` result (counts and names untouched)."""
    if isinstance(value, dict):
        return {k: _percent_tree(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_percent_tree(v, key) for v in value]
    if isinstance(value, tuple):
        return [_percent_tree(v, key) for v in value]
    if isinstance(value, float) and key not in _COUNT_KEYS:
        return value * 100.0
    return value


def recognition_command(
    run_dir: Path = typer.Argument(..., help="A finished DBG run."),
    judge: str = typer.Option(..., "--judge", help="The judge to probe: a model name, HF id or folder."),
    max_rationale_tokens: int = typer.Option(
        64, "--max-rationale-tokens", min=1, help="Tokens of reason before the verdict."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Preference Leakage's recognition probe (seed 004 App. D): does the judge say "yes, my student wrote this" to
    the answers of authors related to it (the run config's relatedness) and "no" to the others? Per author:
    relatedness, mean P(yes), accuracy (in percent)."""
    from interp.run.recognition import run_recognition

    result = run_recognition(run_dir, judge, max_rationale_tokens=max_rationale_tokens)
    table = {
        author: {k: _percent(v) if k in ("p_yes", "accuracy") else v for k, v in row.items()}
        for author, row in result.items()
    }
    if as_json:
        _emit_json(table)
        return
    typer.echo(f"Recognition probe of {judge} on {run_dir} (percent)")
    _table(
        ["author", "relatedness", "n", "P(yes)", "accuracy"],
        [[a, r["relatedness"], r["n"], r["p_yes"], r["accuracy"]] for a, r in table.items()],
    )


def _name_value(text: str, option: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise InterpError(f"{option} {text!r}: expected NAME=VALUE")
    return name.strip(), value.strip()


def leaderboard_command(
    files: list[Path] = typer.Argument(
        None, help="AlpacaEval leaderboard CSVs, <config>_leaderboard.csv (the judge named by the file name)."
    ),
    judge: list[str] = typer.Option([], "--judge", help="NAME=CSV: a leaderboard whose judge is NAME (repeatable)."),
    alias: list[str] = typer.Option(
        [], "--alias", help="FROM=TO: the name FROM (a judge or rated model) is the model TO (repeatable)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """Self-preference read from several judges' AlpacaEval leaderboards of the same instructions, in points.

    For each judge that is also a rated model: its self-rating (its own leaderboard's win rate of it against the
    baseline), the other judges' mean rating of it and the difference, raw and length-controlled, with the
    leaderboards' standard errors carried; Preference Leakage's score (percent) for each pair of such judges.
    Judge names from file names: <config>_leaderboard.csv with the config's wrapping (weighted_alpaca_eval_,
    alpaca_eval_[cot_], _ranking, _fn) taken off. Built-in aliases: claude_3_opus = claude-3-opus-20240229,
    gpt4_turbo = gpt4_1106_preview. JSON: {baseline, leaderboards, matrix, judges: {judge: {evaluatee, others,
    self_rating, others_rating, difference: {raw|length_controlled: {value, se}}}}, pairs: [{judge_i, judge_j,
    evaluatee_i, evaluatee_j, pls: {raw, length_controlled}}], not_rated}.
    """
    from interp.metrics.leaderboard_csv import judge_from_file_name, read_leaderboard
    from interp.metrics.leaderboards import DEFAULT_ALIASES, cross_judge_self_preference

    named = [(judge_from_file_name(f), Path(f)) for f in files or []]
    named += [(name, Path(path)) for name, path in (_name_value(j, "--judge") for j in judge)]
    aliases = {**DEFAULT_ALIASES, **dict(_name_value(a, "--alias") for a in alias)}
    seen: dict[str, Path] = {}
    for name, path in named:
        if name in seen:
            raise InterpError(f"judge {name!r} is named twice ({seen[name]} and {path})")
        seen[name] = path
    reading = cross_judge_self_preference([read_leaderboard(path, name) for name, path in named], aliases)
    if as_json:
        _emit_json(reading)
        return
    typer.echo(f"Self-preference across {len(named)} AlpacaEval leaderboards (points; baseline {reading['baseline']})")
    for scale in ("raw", "length_controlled"):
        typer.echo(f"\n{scale.replace('_', '-')} win rates")
        _table(
            ["judge", "evaluatee", "self", "self_se", "others", "oth_se", "diff", "diff_se", "n_others"],
            [
                [
                    j,
                    e["evaluatee"],
                    *(
                        _missing(e[k][scale][f])
                        for k in ("self_rating", "others_rating", "difference")
                        for f in ("value", "se")
                    ),
                    len(e["others"]),
                ]
                for j, e in reading["judges"].items()
            ],
        )
    if reading["pairs"]:
        typer.echo("\nPreference Leakage Score (percent)")
        _table(
            ["judge_i", "judge_j", "PLS_raw", "PLS_lc"],
            [
                [p["judge_i"], p["judge_j"], _missing(p["pls"]["raw"]), _missing(p["pls"]["length_controlled"])]
                for p in reading["pairs"]
            ],
        )
    for j, why in reading["not_rated"].items():
        typer.echo(f"\n{j}: no self-rating: {why}")


def _missing(value):
    return math.nan if value is None else value


def familiarity_command(
    run_dir: Path = typer.Argument(..., help="A finished pairwise DBG run."),
    n_boot: int = typer.Option(None, "--n-boot", help="Bootstrap resamples over items (default: the run's n_boot)."),
    seed: int = typer.Option(None, "--seed", help="Bootstrap seed (default: the run's seed)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (familiarity.json) instead of tables."),
) -> None:
    """The familiarity lens: each answer's mean token log-probability under each judge with own answers (the
    answer after its instruction in the answer-generation prompt; computed where missing, kept in
    RUN/familiarity/), then per judge the own-minus-other difference, P(own) against it (a logistic fit), DBG
    within familiarity strata beside plain DBG, and each organism against the null organisms of its base among
    the run's judges. Writes RUN/familiarity.json and the report's section. JSON: {conditioning, n_boot,
    seed, level, keys, judges: {judge: {difference, slope, p_own_at_zero, dbg_hard, adjusted_dbg_hard,
    matched_dbg_hard, strata, ...}}, organisms: {judge: {nulls, gap_hard, adjusted_gap_hard, explained_share}}}.
    """
    from interp.report.build import build_report
    from interp.report.familiarity import print_familiarity, write_familiarity_section
    from interp.results import codec
    from interp.run.familiarity import run_familiarity
    from interp.run.store import check_finished

    paths = check_finished(run_dir)
    result = run_familiarity(
        run_dir, nulls=null_families(paths.read_config().judge_specs), n_boot=n_boot, seed=seed, progress=not as_json
    )
    write_familiarity_section(paths, result)
    if paths.summary.is_file():
        build_report(paths.root)
    if as_json:
        _emit_json(codec.dump(result))
        return
    print_familiarity(result)


def null_families(judges: list[str]) -> dict[str, list[str]]:
    """Each organism among `judges` -> the null organisms of the same base among them (itself left out): the
    causal test's null family (`interp.causal.design.organism_role`), restricted to the run's judges."""
    from interp.causal.design import organism_role
    from interp.core.adapters import organism_base

    roles = {j: organism_role(j) for j in judges}
    return {
        j: [k for k in judges if k != j and roles[k] == "null" and organism_base(k) == organism_base(j)]
        for j in judges
        if roles[j] is not None
    }
