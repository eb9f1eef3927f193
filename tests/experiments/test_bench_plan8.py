"""Plan 8 of experiments/bench_mechanism.py (issue 78) on synthetic records written here: the report's figures and
bounds, resuming from the records, the two refusals of bad input, and the pre-registered check. No model is
trained, judged or loaded: the CLI calls are faked."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
SCRIPT = REPO / "experiments" / "bench_mechanism.py"
sys.path.insert(0, str(REPO / "experiments" / "records"))
import mechanism_plan8 as plan  # noqa: E402  a research record's module, not a package

PASSED = {"passed": True, "figures": {}, "reason": ""}
FAILED = {"passed": False, "figures": {"p_own_shift": 0.01}, "reason": "below the bar"}


def candidate(method: str, causal: bool, route: str | None = None) -> dict:
    return {"selected_by": method, "causal": causal, "route": route, "share_removed": 0.5, "p_holm": 0.01}


def explained(*candidates: dict, wall: float = 100.0, auroc=None) -> dict:
    return {"candidates": list(candidates), "timings": {"wall_s": wall}, "auroc": auroc or {}, "commit": "abc"}


def record(family: str, seed: int, check=PASSED, explain=None, flattening=None, fingerprint="f" * 16) -> dict:
    return {
        "plan": 8,
        "family": family,
        "seed": seed,
        "recipe": plan.FAMILIES8[family][0],
        "manifest": {"fingerprint": fingerprint, "name": f"{family}-seed{seed}"},
        "check": check,
        "explain": explain,
        "flattening": flattening,
    }


def write(folder: Path, *records: dict) -> None:
    for r in records:
        plan.write_record(folder, r)


def report(records: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(SCRIPT), "--plan", "8", "--records", str(records), *extra]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO)


def line(lines: list[str], name: str) -> str:
    (found,) = [x.split(": ", 1)[1] for x in lines if x.startswith(name + ": ")]
    return found


def test_report_only_prints_each_figure_with_its_clopper_pearson_bounds_from_the_records_alone(tmp_path):
    """Hand-computed: 3 of 4 has the bounds [Beta(0.025; 3, 2), 0.975^(1/4)] = [0.194, 0.994]; 1 of 2 has
    [1 - 0.975^(1/2), 0.975^(1/2)] = [0.013, 0.987]; 0 of 3 has [0, 1 - 0.025^(1/3)] = [0, 0.708]."""
    pattern, content = candidate("attention", True, "pattern"), candidate("attention", True, "content")
    flat, steep = {"causal": False}, {"causal": True}
    write(
        tmp_path,
        *(record("attn-trained", 7310 + i, explain=explained(pattern), flattening=flat) for i in range(3)),
        record("attn-trained", 7313, explain=explained(content, candidate("atp", True, "pattern")), flattening=steep),
        record("attn-trained", 7314, check=FAILED),  # excluded: counted, in no figure
        record("content", 7310),  # checked, not yet studied
        record("content", 7311, explain=explained(candidate("atp-output", True, "content")), flattening=flat),
        record("mlp", 7310, explain=explained(candidate("atp-mlp", True, "neither")), flattening=flat),
        record("lora", 7310, explain=explained(candidate("random", True, "content")), flattening=flat),
        record("null", 7400, explain=explained(candidate("direction", False)), flattening=flat),
        record("null", 7401, explain=explained(candidate("random", True)), flattening=flat),
        record("null", 7402, explain=explained(wall=300.0), flattening=flat),
    )
    before = sorted(p.name for p in tmp_path.iterdir())
    done = report(tmp_path, "--report-only")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert line(lines, "route_power_pattern") == "0.75 [0.19, 0.99] (3 of 4)"  # the `attention` primary only
    assert (
        line(lines, "route_power_content") == "1.00 [0.02, 1.00] (1 of 1 run; 1 of 2 not run)"
    )  # 0.025, its last digit down
    assert line(lines, "wrong_route_rate") == "0.50 [0.01, 0.99] (1 of 2)"  # a causal `content` route counts
    assert line(lines, "null_fpr_ladder") == "0.33 [0.01, 0.91] (1 of 3)"
    assert line(lines, "flattening_fpr") == "0.10 [0.00, 0.45] (1 of 10 run; 1 of 11 not run)"
    assert line(lines, "excluded_by_check").startswith("1 of 12 trained (not run) ['attn-trained-seed7314']")
    assert line(lines, "family_attn-trained") == "4 of 16 needed passed (5 of at most 48 trained)"
    assert line(lines, "ladder_wall_s") == "median 100 (min 100, max 300, total 1200; 10 ladders)"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # it wrote nothing
    assert not (Path(tmp_path) / "runs").exists()


def test_report_bounds_of_zero_of_three_are_the_hand_computed_ones():
    records = {("null", 7400 + i): record("null", 7400 + i, explain=explained(), flattening={}) for i in range(3)}
    assert line(plan.report_lines(records), "null_fpr_ladder") == "0.00 [0.00, 0.71] (0 of 3)"


def fake_cli(calls: list, passing=True):
    """`interp` faked: training writes a manifest (its check passing or not), explain and intervene return JSON."""

    def fake(*args: str) -> str:
        calls.append(list(args))
        if args[:2] == ("organism", "train"):
            folder = Path(args[args.index("--out") + 1])
            folder.mkdir(parents=True)
            seed = int(args[args.index("--seed") + 1])
            shift = {"p_own_start": 0.5, "p_own_trained": 0.6 if passing else 0.5}
            manifest = {"name": folder.name, "seed": seed, "config_fingerprint": "c", "planting_check": shift}
            (folder / "manifest.json").write_text(json.dumps(manifest))
            return ""
        judge = args[args.index("--judge") + 1]
        if args[0] == "explain":
            return json.dumps({"judge": judge, "candidates": [candidate("atp-mlp", False)], "timings": {"wall_s": 1}})
        return json.dumps({"causal": [{"judge": judge, "causal": False, "share_removed": 0.1}]})

    return fake


def test_training_resumes_from_the_records_and_stops_at_the_target(tmp_path, monkeypatch):
    """mlp's target is 3: with 7310 passed and 7311 failed on record, 7312 and 7313 are trained, then it stops;
    heads, with 3 passed on record, trains nothing."""
    calls: list = []
    monkeypatch.setattr(plan, "interp", fake_cli(calls))
    monkeypatch.setattr(plan, "provenance", lambda device: {"commit": "abc", "device": device})
    records = {("mlp", 7310): record("mlp", 7310), ("mlp", 7311): record("mlp", 7311, check=FAILED)}
    records |= {("heads", s): record("heads", s) for s in (7310, 7311, 7312)}
    args = argparse.Namespace(out=tmp_path / "out", records=tmp_path / "records", device="cpu")
    plan.train_step(args, records, ["heads", "mlp"])
    trained = [int(c[c.index("--seed") + 1]) for c in calls]
    assert trained == [7312, 7313]
    assert sorted(p.name for p in args.records.iterdir()) == ["mlp-seed7312.json", "mlp-seed7313.json"]
    written = json.loads((args.records / "mlp-seed7313.json").read_text())
    assert written["check"]["passed"] and written["explain"] is None and written["manifest"]["fingerprint"]
    assert plan.next_seed("mlp", records) is None and plan.next_seed("direction", records) == 7310


def test_a_failing_check_excludes_the_member_before_any_explain(tmp_path, monkeypatch):
    calls: list = []
    monkeypatch.setattr(plan, "interp", fake_cli(calls, passing=False))
    monkeypatch.setattr(plan, "provenance", lambda device: {})
    records: dict = {}
    args = argparse.Namespace(out=tmp_path / "out", records=tmp_path / "records", device="cpu")
    plan.train_step(args, records, ["direction"])
    assert len(calls) == 6 and len(records) == 6  # the cap, none passed
    assert plan.to_study(records, ["direction"]) == []  # excluded: no ladder, no flattening
    assert line(plan.report_lines(records), "excluded_by_check").startswith("6 of 6 trained")


@pytest.mark.parametrize("jobs", [1, 2])
def test_study_runs_only_the_steps_a_record_lacks(tmp_path, monkeypatch, jobs):
    """A member with both parts is not run again; one with its ladder gets only the flattening test; a new one
    gets both, each landing in its record, against the twelve controls on plan 8's split (with --jobs 2 too, each
    worker on its copy of the run, beside the run)."""
    calls: list = []
    monkeypatch.setattr(plan, "interp", fake_cli(calls))
    monkeypatch.setattr(plan, "provenance", lambda device: {"commit": "abc"})
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # run_work sets it for its workers where unset: not in this process
    (tmp_path / "runs" / "key" / "run").mkdir(parents=True)
    monkeypatch.setattr(plan, "bench_run", lambda args, specs: tmp_path / "runs" / "key" / "run")
    args = argparse.Namespace(
        out=tmp_path / "out", records=tmp_path / "records", device="cpu", executor=None, jobs=jobs
    )
    records = {}
    for seed in (7310, 7311, 7312):
        folder = plan.member_folder(args.out, "mlp", seed)
        folder.mkdir(parents=True)
        manifest = {"name": folder.name, "seed": seed, "planted_layers": [25, 26]}
        (folder / "manifest.json").write_text(json.dumps(manifest))
        records[("mlp", seed)] = record("mlp", seed, fingerprint=plan.fingerprint(manifest))
    records[("mlp", 7310)] |= {"explain": explained(), "flattening": {"causal": False}}
    records[("mlp", 7311)] |= {"explain": explained()}
    plan.study_step(args, records, ["mlp"])
    steps = [(c[0], Path(c[c.index("--judge") + 1]).name) for c in calls]
    expected = [("intervene", "mlp-seed7311"), ("explain", "mlp-seed7312"), ("intervene", "mlp-seed7312")]
    assert steps == expected if jobs == 1 else sorted(steps) == sorted(expected)
    assert (tmp_path / "runs" / "key" / "run.job1").is_dir() is (jobs == 2)
    assert sorted(p.name for p in args.records.iterdir()) == ["mlp-seed7311.json", "mlp-seed7312.json"]
    new = json.loads((args.records / "mlp-seed7312.json").read_text())
    assert new["explain"]["candidates"][0]["selected_by"] == "atp-mlp" and new["flattening"]["causal"] is False
    explain, intervene = [c for c in calls if c[0] == "explain"][0], [c for c in calls if c[0] == "intervene"][-1]
    for call in (explain, intervene):
        controls = [call[i + 1] for i, flag in enumerate(call) if flag == "--control-judge"]
        assert controls == plan.CONTROLS8 and len(controls) == 12
        assert call[call.index("--split-seed") + 1] == plan.SPLIT_SEED8
    assert intervene[intervene.index("--spec") + 1] == str(plan.TEMPERATURE_SPEC)
    assert plan.TEMPERATURE_SPEC.read_text().count('kind = "temperature"') == 1
    calls.clear()
    plan.study_step(args, records, ["mlp"])
    assert calls == []  # everything landed: nothing runs again


def test_records_of_another_plan_are_refused_and_nothing_is_written(tmp_path):
    write(tmp_path, record("mlp", 7310))
    other = tmp_path / "mlp-seed7311.json"
    other.write_text(json.dumps(record("mlp", 7311) | {"plan": 5}))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    for extra in (["--report-only"], ["--out", str(tmp_path / "out")]):
        done = report(tmp_path, *extra)
        assert done.returncode == 2 and done.stdout == ""
        assert re.fullmatch(r"error: .*mlp-seed7311\.json: a record of plan 5, not 8\n", done.stderr)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert not (tmp_path / "out").exists()


def test_a_member_folder_whose_manifest_is_not_its_records_is_refused_and_nothing_is_overwritten(tmp_path):
    records, out = tmp_path / "records", tmp_path / "out"
    manifest = {"name": "content-seed7310", "seed": 7310, "config_fingerprint": "old"}
    write(records, record("content", 7310, fingerprint=plan.fingerprint(manifest)))
    folder = plan.member_folder(out, "content", 7310)
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(manifest | {"config_fingerprint": "a changed recipe"}))
    before = (records / "content-seed7310.json").read_bytes()
    done = report(records, "--out", str(out))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("error: ") and "fingerprint" in done.stderr
    assert (records / "content-seed7310.json").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["organisms"]  # no run, no training


@pytest.mark.parametrize(
    ("family", "manifest", "passed"),
    [
        ("attn-trained", {"route_training": {"p_own_start": 0.55, "p_own_trained": 0.66, "train_mask_share": 1.13}}, 1),
        ("attn-trained", {"route_training": {"p_own_start": 0.55, "p_own_trained": 0.59, "train_mask_share": 0.19}}, 0),
        (
            "content",
            {"planting_check": {"p_own_start": 0.546, "p_own_trained": 0.609}, "pattern_check": {"identical": True}},
            1,
        ),
        (
            "content",
            {"planting_check": {"p_own_start": 0.546, "p_own_trained": 0.609}, "pattern_check": {"identical": False}},
            0,
        ),
        ("mlp", {"planting_check": {"p_own_start": 0.546, "p_own_trained": 0.631}}, 1),
        ("direction", {"planting_check": {"p_own_start": 0.546, "p_own_trained": 0.556}}, 0),
        ("heads", {}, 0),  # not recorded: fails
        ("lora", {"held_out": {"test": {"dbg_hard_ci": [0.22, 0.35]}}}, 1),
        ("lora", {"held_out": {"test": {"dbg_hard_ci": [-0.07, 0.03]}}}, 0),
        ("null", {"held_out": {"test": {"agreement_with_gold": {"ci": [0.75, 0.84]}}}}, 1),
        ("null", {"held_out": {"test": {"agreement_with_gold": {"ci": [0.45, 0.55]}}}}, 0),
    ],
)
def test_the_registered_check_reads_each_recipes_own_figures(family, manifest, passed):
    check = plan.member_check(family, manifest)
    assert check["passed"] is bool(passed) and (check["reason"] == "") is bool(passed)


def test_the_code_runs_what_plan_8_registers():
    """The plan's table (families, recipes, first seeds, targets, caps), its split seed and its twelve controls are
    the code's."""
    text = (REPO / "experiments" / "records" / "plan.md").read_text()
    entry = text[text.index("## Plan 8,") :]
    rows = re.findall(r"^\| ([a-z-]+) \| `([^`]+)`[^\n]*?\| (\d+) \| (\d+) \| (\d+) [|(]", entry, flags=re.M)
    table = {family: (recipe, int(first), int(target), int(cap)) for family, recipe, first, target, cap in rows}
    assert table == plan.FAMILIES8
    assert f"split seed **{plan.SPLIT_SEED8}**" in entry
    assert plan.CONTROLS8 == [
        "smollm2-135m-judge",
        *(f"smollm2-135m-judge-seed{s}" for s in (1, 2, 3, 4, 5, *range(12, 18))),
    ]
    assert sum(plan.FAMILIES8[f][2] for f in plan.ELSEWHERE) >= 12 and plan.FAMILIES8["null"][2] >= 12
    assert min(plan.FAMILIES8[f][2] for f in ("attn-trained", "content")) >= 16


def test_the_ladders_folder_is_plan_8s_and_its_localisation_gives_the_auroc(tmp_path):
    """Of two ladders of the member in the run, the one on plan 5's split is not read; the plan-8 one's
    localisation ranks the planted heads first (AUROC 1) for `attention`."""
    spec = "/out/organisms/attn-trained-seed7310"
    for name, split in (("old", 72901), ("new", 78301)):
        folder = tmp_path / "explain" / name
        folder.mkdir(parents=True)
        ladder = {"judge": spec, "settings": {"split_seed": split}, "controls": plan.CONTROLS8, "gap_gate": True}
        (folder / "explain.json").write_text(json.dumps(ladder))
    csv = "method,layer,head,score\nattention,28,6,0.9\nattention,28,7,0.8\nattention,3,0,0.1\nattention,4,1,0.2\n"
    (tmp_path / "explain" / "new" / "localisation.csv").write_text(csv)
    folder = plan.ladder_folder(tmp_path, spec)
    assert folder == tmp_path / "explain" / "new"
    manifest = {"planted_heads": [[28, 6], [28, 7]]}
    summary = plan.explain_summary({"candidates": []}, manifest, "attn-trained", folder, "cpu")
    assert summary["auroc"] == {"attention": 1.0} and "commit" in summary
    assert plan.ladder_folder(tmp_path, "/out/organisms/attn-trained-seed7311") is None


def test_a_member_whose_ladder_fails_keeps_its_record_and_the_others_go_on(tmp_path, monkeypatch):
    calls: list = []
    cli = fake_cli(calls)

    def failing(*args: str) -> str:
        if args[0] == "explain" and args[args.index("--judge") + 1].endswith("seed7310"):
            calls.append(list(args))
            raise SystemExit("interp explain failed (1)")
        return cli(*args)

    monkeypatch.setattr(plan, "interp", failing)
    monkeypatch.setattr(plan, "provenance", lambda device: {})
    monkeypatch.setattr(plan, "bench_run", lambda args, specs: tmp_path / "run")
    args = argparse.Namespace(out=tmp_path / "out", records=tmp_path / "records", device="cpu", executor=None, jobs=1)
    records = {}
    for seed in (7310, 7311):
        folder = plan.member_folder(args.out, "direction", seed)
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps({"name": folder.name, "seed": seed}))
        records[("direction", seed)] = record(
            "direction", seed, fingerprint=plan.fingerprint({"name": folder.name, "seed": seed})
        )
    plan.study_step(args, records, ["direction"])
    assert records[("direction", 7310)]["explain"] is None and records[("direction", 7311)]["flattening"] is not None
    assert sorted(p.name for p in args.records.iterdir()) == ["direction-seed7311.json"]
