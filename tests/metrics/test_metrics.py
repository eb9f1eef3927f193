"""Unit tests for interp.metrics: DBG basics, Chen et al. 2025 verdicts and metrics, PLS, readers."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from interp import metrics as m
from interp.errors import InterpError

# ---------------------------------------------------------------------------------------------
# DBG basics
# ---------------------------------------------------------------------------------------------


def test_hard_win_rate_counts_exact_half_as_half() -> None:
    assert m.hard_win_rate([0.7, 0.5, 0.2, 0.9]) == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert m.hard_win_rate([0.5000001]) == 1.0
    assert m.hard_win_rate([0.4999999]) == 0.0


def test_soft_win_rate_is_mean() -> None:
    assert m.soft_win_rate([0.7, 0.5, 0.2, 0.9]) == pytest.approx(0.575)


@pytest.mark.parametrize("bad", [[], [1.2], [-0.1], [float("nan")]])
def test_win_rates_reject_bad_input(bad: list[float]) -> None:
    with pytest.raises(InterpError):
        m.hard_win_rate(bad)
    with pytest.raises(InterpError):
        m.soft_win_rate(bad)


def synthetic_p(win_share: float, n: int = 1000, high: float = 0.8, low: float = 0.3) -> np.ndarray:
    wins = round(win_share * n)
    return np.array([high] * wins + [low] * (n - wins))


def test_dbg_worked_example_wmt19() -> None:
    """docs/science.md, DBG (seed 000 Fig. 10b): judge A gives A 46.5 %, gold 37.6 %; judge B gives
    B 61.8 %, gold 62.4 % -> DBG_A = +8.9 points, DBG_B = -0.6 points."""
    dbg_a = m.dbg_scores(synthetic_p(0.465), synthetic_p(0.376, high=0.9, low=0.1), n_boot=200)
    dbg_b = m.dbg_scores(synthetic_p(0.618), synthetic_p(0.624, high=0.6, low=0.45), n_boot=200)
    assert round(100 * dbg_a["dbg_hard"], 1) == 8.9
    assert round(100 * dbg_b["dbg_hard"], 1) == -0.6
    assert dbg_a["win_rate_own_hard"] == pytest.approx(0.465)
    assert dbg_a["gold_win_rate_hard"] == pytest.approx(0.376)
    assert dbg_b["win_rate_own_hard"] == pytest.approx(0.618)
    assert dbg_b["gold_win_rate_hard"] == pytest.approx(0.624)
    assert set(dbg_a) == {
        "dbg_hard",
        "dbg_soft",
        "dbg_ci",
        "dbg_soft_ci",
        "win_rate_own_hard",
        "win_rate_own_soft",
        "gold_win_rate_hard",
        "gold_win_rate_soft",
        "n",
    }
    assert dbg_a["n"] == 1000
    low, high = dbg_a["dbg_ci"]
    assert low < dbg_a["dbg_hard"] < high
    assert dbg_a["dbg_soft"] == pytest.approx(dbg_a["win_rate_own_soft"] - dbg_a["gold_win_rate_soft"])


def test_dbg_bootstrap_is_paired() -> None:
    """Identical judge and gold -> every paired resample gives DBG 0 exactly; an unpaired
    bootstrap would give a wide interval."""
    rng = np.random.default_rng(3)
    p = rng.random(300)
    out = m.dbg_scores(p, p, n_boot=300)
    assert out["dbg_ci"] == (0.0, 0.0)
    assert out["dbg_soft_ci"] == (0.0, 0.0)


def test_dbg_rejects_length_mismatch() -> None:
    with pytest.raises(InterpError, match="300"):
        m.dbg_scores([0.5] * 300, [0.5] * 299)


def test_bootstrap_ci_is_seeded_and_resamples_indices() -> None:
    values = np.arange(50, dtype=float)
    seen_lengths = set()

    def stat(idx: np.ndarray) -> float:
        seen_lengths.add(len(idx))
        assert idx.min() >= 0 and idx.max() < 50
        return float(values[idx].mean())

    first = m.bootstrap_ci(stat, 50, n_boot=500, seed=7)
    again = m.bootstrap_ci(stat, 50, n_boot=500, seed=7)
    other = m.bootstrap_ci(stat, 50, n_boot=500, seed=8)
    assert first == again
    assert first != other
    assert seen_lengths == {50}
    assert first[0] < 24.5 < first[1]
    narrow = m.bootstrap_ci(stat, 50, n_boot=500, seed=7, level=0.5)
    assert first[0] < narrow[0] < narrow[1] < first[1]


def test_bootstrap_ci_ignores_nan_resamples() -> None:
    assert all(math.isnan(x) for x in m.bootstrap_ci(lambda idx: math.nan, 10, n_boot=20))
    low, high = m.bootstrap_ci(lambda idx: math.nan if idx[0] % 2 else float(idx.mean()), 10, n_boot=200)
    assert 0.0 <= low < high <= 9.0
    with pytest.raises(InterpError):
        m.bootstrap_ci(lambda idx: 0.0, 0)


def test_position_consistency() -> None:
    # X wins/X wins, X wins/Y wins, X wins/Y wins, tie/tie
    assert m.position_consistency([0.8, 0.3, 0.6, 0.5], [0.7, 0.6, 0.2, 0.5]) == 0.5
    assert m.position_consistency([0.9, 0.1], [0.6, 0.4]) == 1.0
    with pytest.raises(InterpError):
        m.position_consistency([0.5], [0.5, 0.5])


# ---------------------------------------------------------------------------------------------
# Chen et al. 2025: verdicts
# ---------------------------------------------------------------------------------------------


def test_game_labels_argmax_with_first_label_on_ties() -> None:
    labels = m.game_labels([[0.5, 0.5, 0.0], [0.2, 0.4, 0.4], [0.1, 0.1, 0.8], [0.3, 0.3, 0.3]])
    assert labels.tolist() == [m.LABEL_A, m.LABEL_T, m.LABEL_B, m.LABEL_A]


def test_eq1_aggregation_table() -> None:
    S, T, O = m.SELF, m.TIE, m.OTHER
    cases = {
        (S, S): S,
        (O, O): O,
        (T, T): T,  # agree -> that
        (S, T): S,
        (T, S): S,
        (O, T): O,
        (T, O): O,  # one tie -> the decisive one
        (S, O): T,
        (O, S): T,  # disagree -> tie
    }
    v1 = np.array([k[0] for k in cases])
    v2 = np.array([k[1] for k in cases])
    assert m.aggregate_verdicts(v1, v2).tolist() == list(cases.values())


def test_hard_verdict_maps_slots_to_judge_frame() -> None:
    game1 = np.array([[0.6, 0.3, 0.1], [0.6, 0.3, 0.1], [0.1, 0.2, 0.7], [0.1, 0.8, 0.1]])
    # game 2 has the judge's own answer in slot B: label B = self, A = other.
    game2 = np.array([[0.2, 0.7, 0.1], [0.7, 0.2, 0.1], [0.1, 0.2, 0.7], [0.1, 0.1, 0.8]])
    assert m.hard_verdict(game1, game2).tolist() == [m.SELF, m.TIE, m.TIE, m.SELF]


def test_soft_verdict_formula() -> None:
    p1 = np.array([[0.5, 0.2, 0.3], [0.1, 0.0, 0.9], [0.5, 0.0, 0.5]])
    p2 = np.array([[0.1, 0.4, 0.5], [0.9, 0.0, 0.1], [0.5, 0.0, 0.5]])
    s = m.soft_verdict_score(p1, p2)
    assert s.tolist() == pytest.approx([0.5 * ((0.5 + 0.1) + (0.5 + 0.2)), 0.1, 0.5])
    assert m.soft_verdict(p1, p2).tolist() == [m.SELF, m.OTHER, m.TIE]
    assert m.self_probability(p1, p2).tolist() == pytest.approx([0.5, 0.1, 0.5])


def test_verdict_mode_mapping() -> None:
    paper = m.metric_verdict_kinds("paper")
    assert paper["SPR"] == paper["LSPR"] == "hard"
    assert paper["JA"] == paper["HSPP"] == "soft"
    assert set(m.metric_verdict_kinds("soft").values()) == {"soft"}
    with pytest.raises(InterpError):
        m.metric_verdict_kinds("median")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Chen et al. 2025: metric definitions on hand-made verdicts
# ---------------------------------------------------------------------------------------------

S, T, O = m.SELF, m.TIE, m.OTHER
#                   0      1      2      3      4      5      6      7
VERDICT = np.array([S, S, O, T, S, O, S, O])
JUDGE_OK = np.array([True, True, False, True, False, False, True, False])
OTHER_OK = np.array([False, True, True, False, True, False, False, True])
# D_diff = {0, 2, 3, 4, 6, 7}; judge wrong & other right = {2, 4, 7}


def test_spr_keeps_ties_in_denominator() -> None:
    assert m.self_preference_ratio(VERDICT) == pytest.approx(4 / 8)


def test_judge_accuracy_on_d_diff() -> None:
    # correct picks on D_diff: 0 (self, judge right), 2 (other, other right), 6 (self), 7 (other) -> 4/6
    assert m.judge_accuracy(VERDICT, JUDGE_OK, OTHER_OK) == pytest.approx(4 / 6)


def test_lspr_among_self_verdicts_on_d_diff() -> None:
    # self verdicts on D_diff: 0, 4, 6; judge right on 0 and 6
    assert m.legitimate_self_preference_ratio(VERDICT, JUDGE_OK, OTHER_OK) == pytest.approx(2 / 3)


def test_hspp_when_judge_wrong_and_other_right() -> None:
    # {2, 4, 7}: self only on 4
    assert m.harmful_self_preference_propensity(VERDICT, JUDGE_OK, OTHER_OK) == pytest.approx(1 / 3)


def test_spr_on_diff_and_same_subsets() -> None:
    diff = m.spr_subset_parts(VERDICT, JUDGE_OK, OTHER_OK, subset="diff").value()
    same = m.spr_subset_parts(VERDICT, JUDGE_OK, OTHER_OK, subset="same").value()
    assert diff == pytest.approx(3 / 6)  # 0, 4, 6
    assert same == pytest.approx(1 / 2)  # D_same = {1, 5}: self on 1


def test_empty_denominators_are_nan() -> None:
    all_right = np.ones(3, dtype=bool)
    assert math.isnan(m.judge_accuracy([S, O, T], all_right, all_right))
    assert math.isnan(m.harmful_self_preference_propensity([S, O, T], all_right, all_right))
    assert math.isnan(m.legitimate_self_preference_ratio([O, O, T], all_right, ~all_right))


def probs_for(verdict: int) -> tuple[list[float], list[float]]:
    """Game probabilities whose hard and soft verdicts are both ``verdict``."""
    if verdict == S:
        return [0.8, 0.1, 0.1], [0.1, 0.1, 0.8]
    if verdict == O:
        return [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]
    return [0.1, 0.8, 0.1], [0.1, 0.8, 0.1]


def make_records(rows: list[tuple[str, str, str, bool, bool, int]]) -> m.Chen2025Records:
    return m.Chen2025Records.from_rows([(j, e, i, jc, ec, *probs_for(v)) for j, e, i, jc, ec, v in rows])


def test_judge_table_macro_averages_over_evaluatees() -> None:
    rows = [("J", "small", f"q{i}", True, True, S if i == 0 else O) for i in range(2)]  # SPR 1/2
    rows += [("J", "big", f"q{i}", True, True, O) for i in range(8)]  # SPR 0/8
    table = m.chen2025_judge_table(make_records(rows))
    assert table["J"]["SPR"] == pytest.approx((0.5 + 0.0) / 2)  # macro, not pooled 1/10
    assert table["J"]["n_evaluatees"] == 2
    pairs = {p.evaluatee: p for p in m.chen2025_pair_table(make_records(rows))}
    assert pairs["small"].counts["SPR"] == (1, 2)
    assert pairs["big"].values["SPR"] == 0.0


def test_macro_average_skips_undefined_pairs() -> None:
    rows = [("J", "a", "q1", True, False, S), ("J", "a", "q2", False, True, S)]  # HSPP 1/1
    rows += [("J", "b", "q1", True, True, S)]  # HSPP undefined (never wrong vs right)
    table = m.chen2025_judge_table(make_records(rows))
    assert table["J"]["HSPP"] == 1.0
    assert math.isnan(m.macro_average([math.nan, math.nan]))


def test_chen_bootstrap_contains_estimate_and_is_seeded() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for evaluatee in ("a", "b"):
        for i in range(60):
            jc, ec = bool(rng.random() < 0.6), bool(rng.random() < 0.5)
            rows.append(("J", evaluatee, f"q{i}", jc, ec, int(rng.choice([S, T, O]))))
    records = make_records(rows)
    table = m.chen2025_judge_table(records)
    ci = m.chen2025_bootstrap(records, n_boot=300, seed=1)
    assert ci == m.chen2025_bootstrap(records, n_boot=300, seed=1)
    for metric in m.CHEN_METRICS:
        low, high = ci["J"][metric]
        assert low <= table["J"][metric] <= high
        assert low < high


def test_confidence_sets() -> None:
    rows = [("J", "a", "q1", True, False, S), ("J", "a", "q2", False, True, S), ("J", "a", "q3", False, True, O)]
    out = m.chen2025_confidence(make_records(rows))["J"]
    assert out["n_SPR_set"] == 2 and out["n_HSPP_set"] == 1
    assert out["SPR_set"] == pytest.approx(0.8)
    assert out["HSPP_set"] == pytest.approx(0.8)


# ---------------------------------------------------------------------------------------------
# Preference Leakage Score
# ---------------------------------------------------------------------------------------------

PLS_TABLE5 = {
    "GPT-4o": {"Mistral-GPT-4o": 55.1, "Mistral-Gemini-1.5": 44.9},
    "Gemini-1.5": {"Mistral-GPT-4o": 36.8, "Mistral-Gemini-1.5": 63.2},
}


def test_pls_worked_example_is_18_4_percent() -> None:
    pls = m.preference_leakage_score(PLS_TABLE5, "GPT-4o", "Mistral-GPT-4o", "Gemini-1.5", "Mistral-Gemini-1.5")
    assert round(100 * pls, 1) == 18.4
    as_fractions = {j: {s: v / 100 for s, v in row.items()} for j, row in PLS_TABLE5.items()}
    assert m.preference_leakage_score(
        as_fractions, "GPT-4o", "Mistral-GPT-4o", "Gemini-1.5", "Mistral-Gemini-1.5"
    ) == pytest.approx(pls)


def test_pls_is_zero_without_leakage_and_antisymmetric_under_swap() -> None:
    neutral = {"A": {"sa": 60.0, "sb": 40.0}, "B": {"sa": 60.0, "sb": 40.0}}
    assert m.preference_leakage_score(neutral, "A", "sa", "B", "sb") == 0.0
    swapped = m.preference_leakage_score(PLS_TABLE5, "GPT-4o", "Mistral-Gemini-1.5", "Gemini-1.5", "Mistral-GPT-4o")
    assert swapped == pytest.approx(
        -m.preference_leakage_score(PLS_TABLE5, "GPT-4o", "Mistral-GPT-4o", "Gemini-1.5", "Mistral-Gemini-1.5")
    )


def test_tie_policies() -> None:
    assert m.win_rate_with_ties(50, 20, 30, "half") == pytest.approx(0.6)
    assert m.win_rate_with_ties(50, 20, 30, "exclude") == pytest.approx(0.625)
    assert m.win_rate_with_ties(50, 20, 30, "loss") == pytest.approx(0.5)
    with pytest.raises(InterpError):
        m.win_rate_with_ties(1, 1, 1, "coin")  # type: ignore[arg-type]


def test_related_judges_inference() -> None:
    entries = [
        m.WinRateEntry("GPT-4o", "Mistral-GPT-4o", None, 55.1, None),
        m.WinRateEntry("Gemini-1.5", "Mistral-Gemini-1.5", None, 63.2, None),
        m.WinRateEntry("GPT-4o", "gpt-4o", None, 50.0, None),
        m.WinRateEntry("Gemini-1.5", "orphan", None, 50.0, None),
        m.WinRateEntry("Gemini-1.5", "odd", None, 50.0, "GPT-4o"),
    ]
    related = m.related_judges(entries)
    assert related["Mistral-GPT-4o"] == "GPT-4o"
    assert related["Mistral-Gemini-1.5"] == "Gemini-1.5"
    assert related["odd"] == "GPT-4o"
    assert "orphan" not in related


# ---------------------------------------------------------------------------------------------
# Readers: validation with file and line
# ---------------------------------------------------------------------------------------------


def chen_line(pair: str = "judge-x_model-y", item: str = "q1", **overrides) -> dict:
    row = {
        "pair": pair,
        "id": item,
        "judge_correct": True,
        "evaluatee_correct": False,
        "game_1_probs_ATB": [0.7, 0.2, 0.1],
        "game_2_probs_ATB": [0.1, 0.2, 0.7],
        "game_1_label": None,
        "game_2_label": "B",
    }
    row.update(overrides)
    return row


def write_jsonl(path: Path, rows: list[dict], *, compress: bool = False) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if compress:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_read_chen2025_plain_and_gzip(tmp_path: Path) -> None:
    rows = [chen_line(item="q1"), chen_line(item="q2", judge_correct=False), chen_line("judge-x_other_model", "q1")]
    for compress, name in ((False, "a.jsonl"), (True, "a.jsonl.gz")):
        records = m.read_chen2025(write_jsonl(tmp_path / name, rows, compress=compress))
        assert len(records) == 3
        assert records.judge.tolist() == ["judge-x"] * 3
        assert records.evaluatee.tolist() == ["model-y", "model-y", "other_model"]
        assert records.judge_correct.tolist() == [True, False, True]
        assert records.game1_probs.shape == (3, 3)


def test_missing_field_names_file_and_line(tmp_path: Path) -> None:
    bad = chen_line(item="q2")
    del bad["judge_correct"]
    path = write_jsonl(tmp_path / "missing.jsonl", [chen_line(), bad])
    with pytest.raises(InterpError) as info:
        m.read_chen2025(path)
    message = str(info.value)
    assert "missing.jsonl" in message and "line 2" in message and "judge_correct" in message
    assert "\n" not in message


def test_two_entry_probability_vector_names_file_and_line(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "short.jsonl", [chen_line(), chen_line(item="q2"), chen_line(item="q3", game_2_probs_ATB=[0.4, 0.6])]
    )
    with pytest.raises(InterpError) as info:
        m.read_chen2025(path)
    message = str(info.value)
    assert "short.jsonl" in message and "line 3" in message and "game_2_probs_ATB" in message
    assert "three" in message


@pytest.mark.parametrize(
    "override, needle",
    [
        ({"game_1_probs_ATB": [0.5, 0.5, 0.0, 0.0]}, "game_1_probs_ATB"),
        ({"game_1_probs_ATB": "0.5,0.5,0"}, "game_1_probs_ATB"),
        ({"game_1_probs_ATB": [0.5, "x", 0.5]}, "game_1_probs_ATB"),
        ({"judge_correct": "yes"}, "judge_correct"),
        ({"pair": "nounderscore"}, "pair"),
    ],
)
def test_bad_values_name_the_field(tmp_path: Path, override: dict, needle: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [chen_line(**override)])
    with pytest.raises(InterpError, match=rf"bad\.jsonl, line 1: .*{needle}"):
        m.read_chen2025(path)


def test_invalid_json_and_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(chen_line()) + "\n{not json\n")
    with pytest.raises(InterpError, match="line 2"):
        m.read_chen2025(path)
    dup = write_jsonl(tmp_path / "dup.jsonl", [chen_line(), chen_line()])
    with pytest.raises(InterpError, match="line 2.*duplicate.*line 1"):
        m.read_chen2025(dup)


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_empty_file_is_an_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    with pytest.raises(InterpError, match="empty"):
        m.read_chen2025(path)
    gz = tmp_path / "empty.jsonl.gz"
    with gzip.open(gz, "wt") as handle:
        handle.write(content)
    with pytest.raises(InterpError, match="empty"):
        m.read_chen2025(gz)


def test_missing_file_is_an_interp_error(tmp_path: Path) -> None:
    with pytest.raises(InterpError, match="nothing.jsonl"):
        m.read_chen2025(tmp_path / "nothing.jsonl")


def test_table_reader_csv_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("judge,student,win_rate\nA,a,0.5\nB,,0.4\n")
    with pytest.raises(InterpError, match=r"w\.csv, line 3: missing field 'student'"):
        m.read_win_rates(path)
    path.write_text("judge,win_rate\nA,0.5\n")
    with pytest.raises(InterpError, match="line 1: missing column 'student'"):
        m.read_win_rates(path)
    path.write_text("judge,student,win_rate\n")
    with pytest.raises(InterpError, match="empty"):
        m.read_win_rates(path)
