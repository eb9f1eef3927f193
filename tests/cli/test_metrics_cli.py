"""`interp metrics` CLI: chen2025 on small files, pls, salieri, run, and error handling."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from interp import metrics as m
from interp.cli import metrics_app as app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def assert_clean_error(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def chen_row(pair: str, item: str, jc: bool, ec: bool, g1: list[float], g2: list[float]) -> dict:
    return {
        "pair": pair,
        "id": item,
        "judge_correct": jc,
        "evaluatee_correct": ec,
        "game_1_probs_ATB": g1,
        "game_2_probs_ATB": g2,
        "game_1_label": None,
        "game_2_label": None,
    }


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ---------------------------------------------------------------------------------------------
# chen2025
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def small_chen(tmp_path: Path) -> Path:
    self_probs = ([0.8, 0.1, 0.1], [0.1, 0.1, 0.8])
    other_probs = ([0.1, 0.1, 0.8], [0.8, 0.1, 0.1])
    rows = [
        chen_row("j1_a", "q1", True, False, *self_probs),
        chen_row("j1_a", "q2", False, True, *self_probs),
        chen_row("j1_a", "q3", True, True, *other_probs),
        chen_row("j1_a", "q4", False, True, *other_probs),
        chen_row("j1_b", "q1", True, False, *other_probs),
        chen_row("j1_b", "q2", True, True, *self_probs),
    ]
    return write_jsonl(tmp_path / "small.jsonl", rows)


def test_chen2025_json_percent_and_macro_average(small_chen: Path) -> None:
    result = invoke("chen2025", small_chen, "--json")
    assert result.exit_code == 0, result.output
    table = json.loads(result.stdout)
    j1 = table["j1"]
    assert j1["n_evaluatees"] == 2
    assert j1["SPR"] == pytest.approx((50.0 + 50.0) / 2)
    assert j1["JA"] == pytest.approx((100 * 2 / 3 + 0.0) / 2)  # a: q1 right, q2 wrong, q4 right; b: q1 wrong
    assert j1["HSPP"] == pytest.approx(50.0)  # only evaluatee a has judge-wrong/other-right items
    assert j1["LSPR"] == pytest.approx(50.0)  # a: self on D_diff q1 (right), q2 (wrong); b: none
    assert j1["SPR_same"] == pytest.approx((0.0 + 100.0) / 2)


def test_chen2025_sections_and_text_output(small_chen: Path) -> None:
    result = invoke("chen2025", small_chen, "--json", "--per-pair", "--confidence", "--ci", "--n-boot", "50")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) == {"judges", "pairs", "confidence", "ci"}
    assert {(p["judge"], p["evaluatee"]) for p in out["pairs"]} == {("j1", "a"), ("j1", "b")}
    pair_b = next(p for p in out["pairs"] if p["evaluatee"] == "b")
    assert pair_b["LSPR"] is None and pair_b["counts"]["LSPR"] == [0, 0]  # NaN -> null
    assert out["confidence"]["j1"]["n_SPR_set"] == 3
    assert len(out["ci"]["j1"]["SPR"]) == 2
    text = invoke("chen2025", small_chen, "--per-pair")
    assert text.exit_code == 0 and "j1" in text.stdout and "SPR_diff" in text.stdout


def test_chen2025_bad_inputs_exit_2_with_file_and_line(tmp_path: Path, small_chen: Path) -> None:
    lines = small_chen.read_text().splitlines()
    broken = json.loads(lines[2])
    del broken["game_1_probs_ATB"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines[:2] + [json.dumps(broken)] + lines[3:]) + "\n")
    assert_clean_error(invoke("chen2025", bad), "bad.jsonl", "line 3", "game_1_probs_ATB")

    short = json.loads(lines[0])
    short["game_2_probs_ATB"] = [0.5, 0.5]
    two = tmp_path / "two.jsonl"
    two.write_text(json.dumps(short) + "\n")
    assert_clean_error(invoke("chen2025", two, "--json"), "two.jsonl", "line 1", "game_2_probs_ATB")

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = invoke("chen2025", empty, "--json")
    assert_clean_error(result, "empty.jsonl")
    assert result.stdout == ""
    assert_clean_error(invoke("chen2025", tmp_path / "absent.jsonl"), "absent.jsonl")


def test_chen2025_rejects_unknown_verdict(small_chen: Path) -> None:
    assert invoke("chen2025", small_chen, "--verdict", "median").exit_code == 2


# ---------------------------------------------------------------------------------------------
# pls
# ---------------------------------------------------------------------------------------------


def test_pls_worked_example_csv(tmp_path: Path) -> None:
    path = tmp_path / "table5.csv"
    path.write_text(
        "judge,student,win_rate\n"
        "GPT-4o,Mistral-GPT-4o,55.1\nGPT-4o,Mistral-Gemini-1.5,44.9\n"
        "Gemini-1.5,Mistral-GPT-4o,36.8\nGemini-1.5,Mistral-Gemini-1.5,63.2\n"
    )
    result = invoke("pls", path, "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert len(rows) == 1
    assert round(rows[0]["PLS"], 1) == 18.4
    assert {rows[0]["judge_i"], rows[0]["judge_j"]} == {"GPT-4o", "Gemini-1.5"}
    assert "18.4" in invoke("pls", path).stdout


def test_pls_jsonl_with_ties_follows_policy(tmp_path: Path) -> None:
    rows = [
        {"judge": "A", "student": "A", "win_rate": 0.5, "tie_rate": 0.2},
        {"judge": "A", "student": "B", "win_rate": 0.3, "tie_rate": 0.2},
        {"judge": "B", "student": "A", "win_rate": 0.3, "tie_rate": 0.3},
        {"judge": "B", "student": "B", "win_rate": 0.4, "tie_rate": 0.3},
    ]
    path = write_jsonl(tmp_path / "ties.jsonl", rows)
    results = {}
    for policy in ("half", "exclude", "loss"):
        out = invoke("pls", path, "--json", "--tie-policy", policy)
        assert out.exit_code == 0, out.output
        results[policy] = json.loads(out.stdout)[0]["PLS"]
    w = {
        p: {
            "A": {"A": m.win_rate_with_ties(0.5, 0.2, 0.3, p), "B": m.win_rate_with_ties(0.3, 0.2, 0.5, p)},
            "B": {"A": m.win_rate_with_ties(0.3, 0.3, 0.4, p), "B": m.win_rate_with_ties(0.4, 0.3, 0.3, p)},
        }
        for p in ("half", "exclude", "loss")
    }
    for policy, value in results.items():
        assert value == pytest.approx(100 * m.preference_leakage_score(w[policy], "A", "A", "B", "B"))
    assert len(set(round(v, 9) for v in results.values())) == 3


def test_pls_errors(tmp_path: Path) -> None:
    lonely = tmp_path / "lonely.csv"
    lonely.write_text("judge,student,win_rate\nA,x,50\n")
    assert_clean_error(invoke("pls", lonely), "lonely.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("judge,student,win_rate\nA,A,50\nB,B,fifty\n")
    assert_clean_error(invoke("pls", bad), "bad.csv", "line 3", "win_rate")


# ---------------------------------------------------------------------------------------------
# salieri
# ---------------------------------------------------------------------------------------------


def test_salieri_cli_matches_library(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    rows, own_j, own_r, pool_j, pool_r = [], [], [], [], []
    for i in range(120):
        quality = float(rng.choice([3, 4, 5]))
        j = float(np.clip(round(3 + 0.5 * (quality - 3) + 0.5 + rng.normal(0, 0.5)), 1, 5))
        rows.append(
            {"judge": "t", "item_id": f"q{i:03d}", "source": "self", "judge_score": j, "reference_score": quality}
        )
        own_j.append(j)
        own_r.append(quality)
        pj, pr = [], []
        for level in (1.0, 2.0, 3.0, 4.0, 5.0):
            score = float(np.clip(round(3 + 0.5 * (level - 3) + rng.normal(0, 0.5)), 1, 5))
            rows.append(
                {
                    "judge": "t",
                    "item_id": f"q{i:03d}",
                    "source": "pool",
                    "judge_score": score,
                    "reference_score": level,
                    "response_id": f"p{level}",
                }
            )
            pj.append(score)
            pr.append(level)
        pool_j.append(pj)
        pool_r.append(pr)
    rows.append(
        {"judge": "t", "item_id": "n1", "source": "norm", "judge_score": 4, "reference_score": 3, "model": "gpt"}
    )
    path = write_jsonl(tmp_path / "scores.jsonl", rows)
    result = invoke("salieri", path, "--json", "--n-boot", "200")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)["t"]
    expected = m.salieri_report(own_j, own_r, pool_j, pool_r, baselines=(4.0, 3.0), bootstrap=m.Bootstrap(n_boot=200))
    assert report["salieri"] == pytest.approx(expected["salieri"])
    assert report["origin"] == pytest.approx(expected["origin"])
    assert report["origin"] == pytest.approx(np.mean(own_j) - 4.0 - (np.mean(own_r) - 3.0))
    assert report["salieri_ci"] == pytest.approx(list(expected["salieri_ci"]))
    assert report["histogram_mismatch"] == 0
    assert "SALIERI" in invoke("salieri", path, "--n-boot", "50").stdout


def test_salieri_cli_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text("judge,item_id,source,judge_score,reference_score\nt,q1,self,4,3\nt,q1,mine,4,3\n")
    assert_clean_error(invoke("salieri", path), "s.csv", "line 3", "source")
    path.write_text("judge,item_id,source,judge_score,reference_score\nt,q1,self,4,3\n")
    assert_clean_error(invoke("salieri", path), "no pool responses")


# ---------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------


def judgment(judge: str, item: str, order: str, model_a: str, model_b: str, p_a: float, p_b: float, p_t=None) -> dict:
    return {
        "judge": judge,
        "item_id": item,
        "order": order,
        "model_a": model_a,
        "model_b": model_b,
        "p_a": p_a,
        "p_b": p_b,
        "p_t": p_t,
    }


def write_run(run_dir: Path, judgments: list[dict], correctness: list[dict] | None = None) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(run_dir / "judgments.jsonl", judgments)
    if correctness is not None:
        write_jsonl(run_dir / "correctness.jsonl", correctness)
    return run_dir


def deterministic_run(tmp_path: Path, with_correctness: bool) -> Path:
    """Judge x always prefers its own answer; judge y always says "A" (pure position bias);
    gold g is a third-party judge (no self lens)."""
    rows = []
    for i in range(20):
        item = f"q{i}"
        rows += [
            judgment("x", item, "ab", "x", "y", 0.8, 0.2),
            judgment("x", item, "ba", "y", "x", 0.3, 0.7),
            judgment("y", item, "ab", "x", "y", 0.6, 0.4),
            judgment("y", item, "ba", "y", "x", 0.6, 0.4),
            judgment("g", item, "ab", "x", "y", 0.5, 0.5),
            judgment("g", item, "ba", "y", "x", 0.5, 0.5),
        ]
    correctness = None
    if with_correctness:
        correctness = [
            {"item_id": f"q{i}", "model": model, "correct": (i % 2 == 0) if model == "x" else (i % 3 == 0)}
            for i in range(20)
            for model in ("x", "y")
        ]
    return write_run(tmp_path / "run", rows, correctness)


def test_run_self_preference_and_pls(tmp_path: Path) -> None:
    result = invoke("run", deterministic_run(tmp_path, with_correctness=False), "--json", "--n-boot", "100")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["chen2025"] is None
    assert set(out["self_preference"]) == {"x", "y"}  # g never judges itself
    x, y = out["self_preference"]["x"], out["self_preference"]["y"]
    assert x["SPR"] == 100.0 and x["win_rate_own_hard"] == 100.0 and x["win_rate_own_soft"] == pytest.approx(75.0)
    assert x["position_consistency"] == 100.0
    assert y["SPR"] == 0.0 and y["win_rate_own_hard"] == 50.0 and y["position_consistency"] == 0.0
    assert x["n_items"] == 20 and x["evaluatees"]["y"]["n_items"] == 20
    [pls] = out["pls"]
    assert pls["judges"] == ["x", "y"]
    # hard: W[x][x]=1, W[y][x]=0.5, W[y][y]=0.5, W[x][y]=0 -> 0.5 * (0.5/1.5 + 0.5/0.5)
    assert pls["PLS_hard"] == pytest.approx(100 * 0.5 * (1 / 3 + 1))
    # soft: 0.75, 0.5, 0.5, 0.25 -> 0.5 * (0.25/1.25 + 0.25/0.75)
    assert pls["PLS_soft"] == pytest.approx(100 * 0.5 * (0.2 + 1 / 3))
    text = invoke("run", tmp_path / "run", "--n-boot", "50")
    assert text.exit_code == 0 and "Preference Leakage" in text.stdout and "Chen" not in text.stdout


def test_run_chen_lens_agrees_with_chen2025_command(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    rows, chen_rows, correctness = [], [], []
    for i in range(60):
        item = f"q{i}"
        ok = {"x": bool(rng.random() < 0.6), "y": bool(rng.random() < 0.5)}
        correctness += [{"item_id": item, "model": k, "correct": v} for k, v in ok.items()]
        for judge, other in (("x", "y"), ("y", "x")):
            g1 = rng.dirichlet([2, 1, 2])  # own answer in slot A: [A, T, B]
            g2 = rng.dirichlet([2, 1, 2])  # own answer in slot B
            rows.append(judgment(judge, item, "ab", judge, other, g1[0], g1[2], g1[1]))
            rows.append(judgment(judge, item, "ba", other, judge, g2[0], g2[2], g2[1]))
            chen_rows.append(chen_row(f"{judge}_{other}", item, ok[judge], ok[other], g1.tolist(), g2.tolist()))
    run_dir = write_run(tmp_path / "run", rows, correctness)
    run_out = json.loads(invoke("run", run_dir, "--json", "--n-boot", "100").stdout)
    chen_out = json.loads(invoke("chen2025", write_jsonl(tmp_path / "same.jsonl", chen_rows), "--json").stdout)
    for judge in ("x", "y"):
        for metric in m.CHEN_METRICS:
            assert run_out["chen2025"][judge][metric] == pytest.approx(chen_out[judge][metric]), (judge, metric)
        assert run_out["self_preference"][judge]["SPR"] == pytest.approx(chen_out[judge]["SPR"])


def test_run_errors(tmp_path: Path) -> None:
    assert_clean_error(invoke("run", tmp_path / "nope"), "nope")
    empty_dir = tmp_path / "empty_run"
    empty_dir.mkdir()
    assert_clean_error(invoke("run", empty_dir), "judgments.jsonl")
    run_dir = write_run(
        tmp_path / "bad_run", [judgment("x", "q1", "ab", "x", "y", 0.5, 0.5), {"judge": "x", "item_id": "q2"}]
    )
    assert_clean_error(invoke("run", run_dir), "judgments.jsonl", "line 2", "order")
    run_dir = write_run(tmp_path / "bad_order", [judgment("x", "q1", "xy", "x", "y", 0.5, 0.5)])
    assert_clean_error(invoke("run", run_dir), "line 1", "order")
