"""Self-preference across AlpacaEval leaderboards: the real alpaca-eval 0.6.6 CSVs against a hand computation from
their rows, the file-name rule, standard errors carried, and the refusals (another format, a judge named twice,
no model in common, different baselines)."""

from __future__ import annotations

import csv
import importlib.metadata
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interp.cli import metrics_app as app
from interp.errors import InterpError
from interp.metrics.leaderboard_csv import judge_from_file_name, read_leaderboard
from interp.metrics.leaderboards import cross_judge_self_preference

runner = CliRunner()
CLAUDE, MISTRAL = "claude-3-opus-20240229", "mistral-large-2402"


def alpaca_csv(name: str) -> Path:
    """A leaderboard shipped in the alpaca-eval wheel (setup.sh --test installs it, without its dependencies)."""
    dist = importlib.metadata.distribution("alpaca-eval")
    assert dist.version == "0.6.6"
    path = Path(dist.locate_file(f"alpaca_eval/leaderboards/data_AlpacaEval_2/{name}_leaderboard.csv"))
    assert path.is_file(), path
    return path


def rows_of(path: Path) -> dict[str, dict]:
    with path.open() as handle:
        return {row[""]: row for row in csv.DictReader(handle)}


def invoke(*args):
    return runner.invoke(app, ["leaderboard", *(str(a) for a in args)])


def assert_clean_error(result, needle: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], result.stderr
    assert result.stdout == ""


def test_alpaca_eval_leaderboards_match_a_hand_computation() -> None:
    files = {
        "claude_3_opus": alpaca_csv("claude_3_opus_ranking"),
        "mistral-large-2402": alpaca_csv("mistral-large-2402_ranking"),
        "gpt4_turbo": alpaca_csv("weighted_alpaca_eval_gpt4_turbo"),
    }
    result = invoke(*files.values(), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    rows = {judge: rows_of(path) for judge, path in files.items()}
    own = {"claude_3_opus": CLAUDE, "mistral-large-2402": MISTRAL}
    assert out["baseline"] == "gpt4_1106_preview" and set(out["judges"]) == set(own)
    assert "gpt4_turbo" in out["not_rated"]
    for judge, model in own.items():
        others = [k for k in files if k != judge]
        for scale, column in (("raw", "win_rate"), ("length_controlled", "length_controlled_winrate")):
            self_value = float(rows[judge][model][column])
            others_value = sum(float(rows[k][model][column]) for k in others) / 2
            entry = out["judges"][judge]
            assert entry["self_rating"][scale]["value"] == pytest.approx(self_value)
            assert entry["others_rating"][scale]["value"] == pytest.approx(others_value)
            assert entry["difference"][scale]["value"] == pytest.approx(self_value - others_value)
        se_self = float(rows[judge][model]["standard_error"])
        se_others = math.sqrt(sum(float(rows[k][model]["standard_error"]) ** 2 for k in others)) / 2
        assert entry["difference"]["raw"]["se"] == pytest.approx(math.sqrt(se_self**2 + se_others**2))
        # the ranking leaderboards give no lc_standard_error: no length-controlled error is made up
        assert entry["difference"]["length_controlled"]["se"] is None
    (pair,) = out["pairs"]
    assert {pair["judge_i"], pair["judge_j"]} == set(own)
    for scale, column in (("raw", "win_rate"), ("length_controlled", "length_controlled_winrate")):
        w = {j: {m: float(rows[j][m][column]) for m in own.values()} for j in own}
        c, m = "claude_3_opus", "mistral-large-2402"
        hand = 50 * (
            (w[c][CLAUDE] - w[m][CLAUDE]) / (w[c][CLAUDE] + w[m][CLAUDE])
            + (w[m][MISTRAL] - w[c][MISTRAL]) / (w[m][MISTRAL] + w[c][MISTRAL])
        )
        assert pair["pls"][scale] == pytest.approx(hand)
    text = invoke(*files.values())
    assert text.exit_code == 0 and "claude_3_opus" in text.stdout and "Preference Leakage" in text.stdout


def test_file_name_rule_names_the_judge() -> None:
    assert judge_from_file_name("x/claude_3_opus_ranking_leaderboard.csv") == "claude_3_opus"
    assert judge_from_file_name("mistral-large-2402_ranking_leaderboard.csv") == "mistral-large-2402"
    assert judge_from_file_name("weighted_alpaca_eval_gpt4_turbo_leaderboard.csv") == "gpt4_turbo"
    assert judge_from_file_name("alpaca_eval_cot_gpt4_turbo_fn_leaderboard.csv") == "gpt4_turbo"
    with pytest.raises(InterpError, match="--judge NAME=CSV"):
        judge_from_file_name("scores.csv")


def write_board(path: Path, rows: list[tuple], lc: bool = True) -> Path:
    header = ",win_rate,standard_error,n_draws,n_total" + (",length_controlled_winrate,lc_standard_error" if lc else "")
    lines = [header] + [",".join("" if v is None else str(v) for v in row[: 5 + 2 * lc]) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def small_boards(tmp_path: Path) -> tuple[Path, Path]:
    a = write_board(
        tmp_path / "a_ranking_leaderboard.csv",
        [
            ("base", 50.0, 0.0, 10, 10, 50.0, None),
            ("a", 60.0, 3.0, 0, 10, 55.0, 2.0),
            ("b", 30.0, 4.0, 0, 10, 35.0, 1.0),
        ],
    )
    b = write_board(
        tmp_path / "b_ranking_leaderboard.csv",
        [
            ("base", 50.0, 0.0, 10, 10, 50.0, None),
            ("a", 40.0, 4.0, 0, 10, 45.0, 2.0),
            ("b", 50.0, 3.0, 0, 10, 45.0, 2.0),
        ],
    )
    return a, b


def test_small_boards_carry_standard_errors_and_pls(tmp_path: Path) -> None:
    a, b = small_boards(tmp_path)
    out = cross_judge_self_preference([read_leaderboard(a, "a"), read_leaderboard(b, "b")], {})
    diff = out["judges"]["a"]["difference"]
    assert diff["raw"] == {"value": 20.0, "se": 5.0}  # 60 - 40, sqrt(3^2 + 4^2)
    assert diff["length_controlled"]["value"] == pytest.approx(10.0)
    assert diff["length_controlled"]["se"] == pytest.approx(math.sqrt(8.0))
    # PLS = 0.5 * [(60-40)/100 + (50-30)/80] = 0.225
    assert out["pairs"][0]["pls"]["raw"] == pytest.approx(22.5)


def test_alias_maps_a_judge_to_its_row(tmp_path: Path) -> None:
    a, b = small_boards(tmp_path)
    result = invoke("--judge", f"judge_a={a}", b, "--alias", "judge_a=a", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["judges"]["judge_a"]["evaluatee"] == "a"
    plain = json.loads(invoke("--judge", f"judge_a={a}", b, "--json").stdout)
    assert "judge_a" in plain["not_rated"] and "judge_a" not in plain["judges"]


def test_another_format_is_refused(tmp_path: Path) -> None:
    a, _ = small_boards(tmp_path)
    other = tmp_path / "pls_leaderboard.csv"
    other.write_text("judge,student,win_rate\nx,y,50\n")
    assert_clean_error(invoke(a, other), "not an AlpacaEval leaderboard")


def test_a_judge_named_twice_is_refused(tmp_path: Path) -> None:
    a, b = small_boards(tmp_path)
    assert_clean_error(invoke(a, "--judge", f"a={b}"), "named twice")


def test_no_rated_model_in_common_is_refused(tmp_path: Path) -> None:
    a, _ = small_boards(tmp_path)
    c = write_board(
        tmp_path / "c_ranking_leaderboard.csv", [("base", 50.0, 0.0, 10, 10), ("z", 20.0, 1.0, 0, 10)], lc=False
    )
    assert_clean_error(invoke(a, c), "no model in common")


def test_real_leaderboards_with_no_model_in_common_are_refused() -> None:
    # the gpt4_turbo_fn leaderboard rates against gpt4_turbo (the alias of gpt4_1106_preview) but other models
    result = invoke(alpaca_csv("claude_3_opus_ranking"), alpaca_csv("alpaca_eval_gpt4_turbo_fn"))
    assert_clean_error(result, "no model in common")


def test_different_baselines_are_refused(tmp_path: Path) -> None:
    a, _ = small_boards(tmp_path)
    c = write_board(
        tmp_path / "c_ranking_leaderboard.csv", [("other", 50.0, 0.0, 10, 10), ("a", 20.0, 1.0, 0, 10)], lc=False
    )
    assert_clean_error(invoke(a, c), "different baselines")


def test_setup_installs_alpaca_eval_without_its_dependencies() -> None:
    """Its dependencies (openai, datasets, pandas, scikit-learn, ...) are never imported: setup.sh --test installs
    the wheel alone, and it stays out of pyproject's test extra."""
    from tests.helpers import REPO

    assert 'pip install --quiet --no-deps "alpaca-eval==0.6.6"' in (REPO / "setup.sh").read_text()
    assert "alpaca-eval" not in (REPO / "pyproject.toml").read_text()
