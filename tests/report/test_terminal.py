"""The results a command ends with: one payload (DBG per judge with its reliability flag, the causal verdict
with its numbers, a sweep's strongest points), drawn as rich tables or printed as JSON."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from rich.console import Console

from interp.core.timings import Timings
from interp.report.payload import ResultsPayload
from interp.report.terminal import payload_json, print_results, results_payload, top_sweep_rows
from interp.results.causal import CausalResult
from interp.results.codec import parse
from tests.helpers.payloads import CAUSAL_A, JUDGE_A, SWEEP_ROWS

SUMMARY = {
    "judges": {
        "author-a": JUDGE_A,
        "weak-judge": {
            "own_model": "author-a",
            "dbg_hard": -0.3,
            "dbg_ci": [-0.5, -0.1],
            "dbg_soft": 0.0,
            "position_consistency": 0.0,
            "mean_label_mass": 0.19,
            "unreliable_because": ["position consistency 0% < 50%"],
        },
        "old-summary": {
            "own_model": "author-b",
            "dbg_hard": 0.0,
            "dbg_ci": [-0.1, 0.1],
            "dbg_soft": 0.0,
            "position_consistency": 0.2,
            "mean_label_mass": 0.9,
        },
        "outsider": {"position_consistency": 0.9, "mean_label_mass": 0.95, "unreliable_because": []},
    }
}
CAUSAL = {
    "author-a": CAUSAL_A,
    "weak-judge": {
        "causal": False,
        "verdict": "weak-judge: no causal effect shown",
        "effects": {"self": {"mean": -0.01, "ci": [-0.05, 0.03]}},
    },
}


def _drawn(payload: ResultsPayload) -> str:
    console = Console(record=True, width=220)
    print_results(payload, console)
    return console.export_text()


def test_dbg_rows_carry_interval_and_the_reports_reliability_flag():
    rows = {r.judge: r for r in results_payload(SUMMARY).dbg}
    assert rows["author-a"].reliable and rows["author-a"].dbg_ci == [0.05, 0.2]
    assert not rows["weak-judge"].reliable and rows["weak-judge"].unreliable_because == [
        "position consistency 0% < 50%"
    ]
    # a summary without the stored flag gets it from the same rule (position consistency 20% < 50%)
    assert not rows["old-summary"].reliable and "position consistency" in rows["old-summary"].unreliable_because[0]
    assert rows["outsider"].dbg_hard is None
    text = _drawn(results_payload(SUMMARY))
    assert (
        "+12.5" in text
        and "[+5.0, +20.0]" in text
        and "weak-judge: too weak to judge, its DBG is not evidence (position consistency 0% < 50%)" in text
    )
    assert "weak-judge (own: author-a)" in text and "n/a" in text
    assert rows["author-a"].tie_share == 0.375 and "38%" in text and "+6.2" in text  # Figure 8: ties, DBG without them


def test_causal_rows_read_the_numbers_a_result_has():
    rows = {r.judge: r for r in results_payload(causal=CAUSAL, n_items=12).causal}
    assert rows["author-a"].to_json() == {
        "judge": "author-a",
        "causal": True,
        "reason": None,
        "verdict": "causal effect on self-preference: ...",
        "effect": {"mean": -0.21, "ci": [-0.3, -0.12]},
        "p_within": 0.001,
        "n_controls": 5,
        "p_value": 0.004,
        "p_holm": 0.008,
        "test_alpha": 0.05,
        "share_removed": 0.4,
        "share_removed_ci": [0.1, 0.7],
        "n_test": 40,
    }
    weak = rows["weak-judge"]
    assert weak.effect.mean == -0.01 and weak.effect.ci == [-0.05, 0.03] and weak.p_value is None and weak.n_test == 12
    text = _drawn(results_payload(SUMMARY, causal=CAUSAL, n_items=12, files={"report": Path("runs/x/report.html")}))
    assert (
        "p Holm" in text and re.search(r"0\.004 +0\.008", text) and "40%" in text
    )  # the raw and the adjusted p side by side
    assert (
        "-21.0" in text
        and "[-30.0, -12.0]" in text
        and "0.004" in text
        and "0.05" in text
        and "weak-judge: no causal effect shown" in text
    )
    assert "report: runs/x/report.html" in text
    assert "not run" in _drawn(results_payload(SUMMARY, causal={}))


def test_json_is_the_same_content_with_nan_as_null():
    payload = results_payload(SUMMARY, causal=CAUSAL, files={"report": Path("r.html")})
    payload.dbg[0].dbg_soft = math.nan
    back = json.loads(payload_json(payload))
    assert back["dbg"][0]["dbg_soft"] is None and back["files"] == {"report": "r.html"}
    assert [r["judge"] for r in back["dbg"]] == list(SUMMARY["judges"]) and [
        r["judge"] for r in back["causal"]
    ] == list(CAUSAL)


def test_sweep_rows_put_the_largest_drop_first():
    rows = SWEEP_ROWS
    top = top_sweep_rows(rows, limit=2)
    assert [r.point for r in top] == ["target=self, alpha=0, layers=2", "target=self, alpha=0, layers=1"]
    assert top[0].effect.mean == -0.2 and top[0].effect.ci == [-0.3, -0.1]
    payload = results_payload(sweep=rows)
    assert payload.sweep.n_points == 3 and "largest drop" in _drawn(payload)


@pytest.fixture
def fake_demo(tmp_path, monkeypatch):
    """`interp demo` without the 10-minute job: run_demo returns a finished run's report and causal result."""
    from interp.studies import demo as demo_module

    out = tmp_path / "demo"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps(SUMMARY))

    def run_demo(folder, **kwargs):
        assert Path(folder) == out
        timings = Timings(seconds={"generation": 30.0, "judging author-a": 10.0}, threads=1, peak_rss_bytes=3 * 2**29)
        return demo_module.Demo(out / "report.html", parse(CausalResult, {"judges": CAUSAL, "n_items": 7}), timings)

    monkeypatch.setattr(demo_module, "run_demo", run_demo)
    return out


def test_demo_ends_with_the_results_table_and_json(fake_demo):
    from typer.testing import CliRunner

    from interp.cli import app

    shown = CliRunner().invoke(app, ["demo", "--out", str(fake_demo)])
    assert shown.exit_code == 0, shown.output
    assert "DBG per judge" in shown.output and "Causal test" in shown.output and "[+5.0, +20.0]" in shown.output
    assert f"report: {fake_demo / 'report.html'}" in shown.output.replace("\n", "")
    as_json = CliRunner().invoke(app, ["demo", "--out", str(fake_demo), "--json"])
    payload = json.loads(as_json.stdout)  # stdout is only the JSON
    assert [r["judge"] for r in payload["dbg"]] == list(SUMMARY["judges"]) and payload["causal"][0]["p_value"] == 0.004
    assert payload["causal"][1]["n_test"] == 7 and payload["files"]["report"] == str(fake_demo / "report.html")


def test_validate_ends_with_the_results_table_and_json(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from interp.cli import app
    from interp.results.studies import ValidationResult
    from interp.studies import validate as validate_module

    run = tmp_path / "out" / "run"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(SUMMARY))
    truth = [
        {
            "claim": "the planted organism prefers its own answer",
            "known_truth": "yes",
            "toolkit": "DBG +12.5",
            "agrees": True,
        }
    ]
    result = parse(
        ValidationResult,
        {
            "run_dir": str(run),
            "splits": {"selection": ["s1"], "test": ["t1", "t2", "t3"]},
            "organisms": {judge: {"causal_test": r} for judge, r in CAUSAL.items()},
            "truth_table": truth,
        },
    )
    monkeypatch.setattr(validate_module, "validate", lambda out, plan, **kwargs: result)
    shown = CliRunner().invoke(app, ["validate", "--out", str(tmp_path / "out"), "--small"])
    assert shown.exit_code == 0, shown.output
    assert "[yes] the planted organism prefers its own answer" in shown.output
    assert "DBG per judge" in shown.output and "author-a: causal effect on self-preference" in shown.output
    payload = json.loads(CliRunner().invoke(app, ["validate", "--out", str(tmp_path / "out"), "--json"]).stdout)
    assert payload["truth_table"] == truth and [r["n_test"] for r in payload["causal"]] == [40, 3]
    assert payload["files"]["validation"] == str(tmp_path / "out" / "validation.json")
    assert payload["files"]["report"] == str(run / "report.html")


LONG = "smollm2-135m-selfpref-trained-on-a-much-longer-adapter-folder-name"


def test_piped_tables_never_break_a_judge_name_across_lines(capsys):
    """Piped or logged (stdout not a terminal): a fixed wide layout keeps each name on one line; a console
    narrower than a name cuts it with an ellipsis instead of folding its rest onto the next line."""
    import io

    summary = {"judges": {LONG: SUMMARY["judges"]["weak-judge"] | {"own_model": "smollm2-135m-instruct"}}}
    payload = results_payload(
        summary, causal={LONG: CAUSAL["author-a"] | {"verdict": f"{LONG}: no causal effect shown"}}
    )
    print_results(payload)  # the default console; under capsys stdout is not a terminal
    lines = capsys.readouterr().out.splitlines()
    assert sum(f"{LONG} (own: smollm2-135m-instruct)" in line for line in lines) == 1  # the DBG row
    rows = [line for line in lines if LONG in line]
    assert len(rows) >= 4  # DBG row, its weak-judge note, causal row, verdict
    assert not any(line.strip().startswith(LONG[20:30]) for line in lines)
    narrow = Console(file=io.StringIO(), width=80)  # not a terminal either, but only 80 columns
    print_results(payload, narrow)
    text = narrow.file.getvalue()
    assert "\u2026" in text and not any(
        line.strip().startswith(("name", "own:", "instruct)")) for line in text.splitlines()
    )


def test_demo_piped_keeps_names_whole_and_prints_timings(fake_demo):
    from typer.testing import CliRunner

    from interp.cli import app

    summary = json.loads((fake_demo / "summary.json").read_text())
    summary["judges"][LONG] = summary["judges"].pop("author-a")
    (fake_demo / "summary.json").write_text(json.dumps(summary))
    shown = CliRunner().invoke(app, ["demo", "--out", str(fake_demo), "--timings"])  # CliRunner's stdout is a pipe
    assert shown.exit_code == 0, shown.output
    assert any(LONG in line for line in shown.output.splitlines())
    assert "torch threads: 1" in shown.output and "generation" in shown.output and "75%" in shown.output
    assert "peak memory: 1.50 GB resident" in shown.output and "GPU" not in shown.output
    payload = json.loads(CliRunner().invoke(app, ["demo", "--out", str(fake_demo), "--json", "--timings"]).stdout)
    assert payload["timings"] == {
        "steps": {"generation": 30.0, "judging author-a": 10.0},
        "total_s": 40.0,
        "torch_threads": 1,
        "torch_threads_used": [1],
        "peak_rss_gb": 1.5,
    }
    assert "timings" not in json.loads(CliRunner().invoke(app, ["demo", "--out", str(fake_demo), "--json"]).stdout)
