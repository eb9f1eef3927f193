"""Reading AlpacaEval leaderboard CSVs (the `alpaca-eval` package's
``alpaca_eval/leaderboards/data_AlpacaEval_2/*.csv``): one file per judge, one row per rated model, every win
rate against the same baseline model. The judge is named by the file (:func:`judge_from_file_name`) or by the
caller."""

from __future__ import annotations

import csv
from pathlib import Path

from interp.errors import InterpError
from interp.metrics.leaderboards import Leaderboard, LeaderboardRow
from interp.metrics.tables import number, open_text, optional_field

REQUIRED_COLUMNS = ("win_rate", "standard_error", "n_total")
# An annotator config's name around its judge: AlpacaEval names a leaderboard `<annotator config>_leaderboard.csv`,
# and its configs wrap the judge's name in these (weighted_alpaca_eval_gpt4_turbo, alpaca_eval_cot_gpt4_turbo_fn,
# claude_3_opus_ranking, mistral-large-2402_ranking).
CONFIG_PREFIXES = ("weighted_alpaca_eval_cot_", "weighted_alpaca_eval_", "alpaca_eval_cot_", "alpaca_eval_")
CONFIG_SUFFIXES = ("_ranking", "_fn")
FILE_SUFFIX = "_leaderboard.csv"


def judge_from_file_name(path: str | Path) -> str:
    """The judge a leaderboard file names: ``<annotator config>_leaderboard.csv`` with the config's wrapping
    taken off (one prefix of :data:`CONFIG_PREFIXES`, then the suffixes of :data:`CONFIG_SUFFIXES`), e.g.
    ``claude_3_opus_ranking_leaderboard.csv`` -> ``claude_3_opus``,
    ``weighted_alpaca_eval_gpt4_turbo_leaderboard.csv`` -> ``gpt4_turbo``. A file not named so is refused
    (name its judge with ``NAME=CSV``)."""
    name = Path(path).name
    if not name.endswith(FILE_SUFFIX) or len(name) == len(FILE_SUFFIX):
        raise InterpError(
            f"{path}: cannot tell its judge from the file name (not <config>{FILE_SUFFIX}); name it as --judge NAME=CSV"
        )
    config = name[: -len(FILE_SUFFIX)]
    for prefix in CONFIG_PREFIXES:
        if config.startswith(prefix) and len(config) > len(prefix):
            config = config[len(prefix) :]
            break
    trimmed = True
    while trimmed:
        trimmed = False
        for suffix in CONFIG_SUFFIXES:
            if config.endswith(suffix) and len(config) > len(suffix):
                config, trimmed = config[: -len(suffix)], True
    return config


def read_leaderboard(path: str | Path, judge: str) -> Leaderboard:
    """One AlpacaEval leaderboard: a CSV whose first column (unnamed) is the rated model and whose columns
    include ``win_rate``, ``standard_error`` (points of percent) and ``n_total``; optional
    ``length_controlled_winrate`` and ``lc_standard_error`` (empty cells are missing values). A file of
    another format, a model rated twice or a bad number is one :class:`InterpError` naming the file and line."""
    path = Path(path)
    if path.suffix.lower() != ".csv":
        raise InterpError(f"{path}: not a CSV file (an AlpacaEval leaderboard is <config>{FILE_SUFFIX})")
    reader = csv.reader(list(open_text(path)))
    try:
        header = next(reader)
    except StopIteration:
        raise InterpError(f"{path}: empty file, not an AlpacaEval leaderboard") from None
    absent = [c for c in REQUIRED_COLUMNS if c not in header]
    if absent or not header or header[0].strip() not in ("", "name", "model"):
        missing = ", ".join(repr(c) for c in absent) or "an unnamed first column of model names"
        raise InterpError(f"{path}, line 1: not an AlpacaEval leaderboard (missing {missing})")
    rows: dict[str, LeaderboardRow] = {}
    for values in reader:
        if not any(v.strip() for v in values):
            continue
        where = f"{path}, line {reader.line_num}"
        if len(values) != len(header):
            raise InterpError(f"{where}: {len(values)} fields where the header has {len(header)}")
        row = dict(zip(header, values, strict=True))
        model = values[0].strip()
        if not model:
            raise InterpError(f"{where}: no model name in the first column")
        if model in rows:
            raise InterpError(f"{where}: model {model!r} is rated twice")
        rows[model] = LeaderboardRow(
            model=model,
            win_rate=number(row["win_rate"], "win_rate", where),
            standard_error=number(row["standard_error"], "standard_error", where),
            n_total=int(number(row["n_total"], "n_total", where)),
            n_draws=_optional_number(row, "n_draws", where),
            lc_win_rate=_optional_number(row, "length_controlled_winrate", where),
            lc_standard_error=_optional_number(row, "lc_standard_error", where),
        )
    if not rows:
        raise InterpError(f"{path}: no rows (empty leaderboard)")
    return Leaderboard(judge=judge, source=str(path), rows=rows)


def _optional_number(row: dict, name: str, where: str) -> float | None:
    value = optional_field(row, name)
    return None if value is None else number(value, name, where)
