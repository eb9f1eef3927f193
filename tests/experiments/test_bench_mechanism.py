"""Plan 5's figures (experiments/bench_mechanism.py, issue 72) on synthetic explain.json dicts: which member counts
toward which figure, which ladders count at all, and that a member whose ladder has not run is said to be not run,
never guessed. Nothing is trained or judged."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "experiments" / "bench_mechanism.py"
BENCH = runpy.run_path(str(SCRIPT))
Member = BENCH["Member"]
METHODS = BENCH["METHODS5"]


def candidate(selected_by: str, causal=True, route=None, **fields) -> dict:
    sites = {"attention": "attention", "atp": "attention", "atp-output": "head_output", "atp-mlp": "mlp_output"}
    row = {
        "site": sites.get(selected_by, "residual"),
        "selected_by": selected_by,
        "heads": [[28, 6], [28, 7], [29, 3]],
        "layers": None,
        "share_removed": 0.7,
        "ci": [0.4, 0.9],
        "p_value": 0.001,
        "p_holm": 0.008,
        "causal": causal,
        "route": route,
    }
    return row | fields


def quiet(*methods: str) -> list[dict]:
    """Each method's chosen candidate (and a random set) tested and not causal."""
    return [candidate(m, causal=False, route="neither") for m in (*methods, "random")]


def ladder(judge: str, candidates: list[dict], *, gap_gate=True, controls=None, **settings) -> dict:
    """An explain.json as plan 5's bench writes it (its settings, the registered controls named)."""
    controls = BENCH["controls_for"](Path(judge).name) if controls is None else controls
    written = BENCH["REGISTERED5"] | {"methods": list(METHODS), "alt_counterfactual": "reference"}
    written |= {"control_judges": controls, "null": "matched", "gap_gate": gap_gate} | settings
    return {
        "judge": judge,
        "settings": written,
        "controls": controls,
        "candidates": candidates,
        "gap_gate": gap_gate,
        "null": "matched",
    }


def family(name: str, n: int, first: int = 7210) -> list:
    return [Member(name, seed, f"/bench/organisms/{name}-seed{seed}") for seed in range(first, first + n)]


def line(lines: list[str], name: str) -> str:
    (found,) = [x.split(": ", 1)[1] for x in lines if x.startswith(name + ": ")]
    return found


def figures(members, main=None, **readings) -> list[str]:
    found = {"main": {Path(k).name: v for k, v in (main or {}).items()}} | readings
    return BENCH["figure_lines"](members, found)


def test_route_power_pattern_counts_the_attention_candidate_causal_with_route_pattern_and_nothing_else():
    members = family("attn-trained", 4)
    pattern = [candidate("attention", route="pattern"), *quiet("atp", "atp-output", "atp-mlp", "direction")]
    neither = [candidate("attention", route="neither"), *quiet("atp", "atp-output", "atp-mlp", "direction")]
    no_gap = [candidate("attention", causal=None, route="pattern"), *quiet("atp-output", "atp-mlp")]
    other_method = [candidate("atp", route="pattern"), *quiet("attention", "atp-output")]  # not the registered one
    ladders = dict(zip([m.spec for m in members], (pattern, neither, no_gap, other_method), strict=True))
    lines = figures(members, {spec: ladder(spec, rows) for spec, rows in ladders.items()})
    lo, hi = BENCH["clopper_pearson"](1, 4)
    assert line(lines, "route_power_pattern") == f"0.25 [{lo:.2f}, {hi:.2f}] (1 of 4)"
    assert not [x for x in lines if x.startswith(("route_power_content", "null_fpr", "wrong_route"))]


def test_route_power_content_reads_the_atp_output_candidate():
    members = family("content", 2)
    content = [candidate("atp-output", route="content"), candidate("attention", route="pattern", causal=False)]
    neither = [candidate("atp-output", route="neither"), candidate("attention", route="content")]
    lines = figures(
        members,
        {members[0].spec: ladder(members[0].spec, content), members[1].spec: ladder(members[1].spec, neither)},
    )
    assert line(lines, "route_power_content").startswith("0.50 ") and line(lines, "route_power_content").endswith(
        "(1 of 2)"
    )


def test_a_pattern_call_on_a_judge_whose_preference_lives_elsewhere_is_a_wrong_route():
    """MLP, direction, planted-heads and LoRA members: any candidate causal with route pattern (random ones too)
    counts; causal with another route, or pattern without the call, does not."""
    mlp, direction, heads, lora = family("mlp", 1), family("direction", 1), family("heads", 1), family("lora", 1)
    rows = {
        mlp[0].spec: [candidate("attention", route="pattern"), candidate("atp-mlp", layers=[25, 26], heads=None)],
        direction[0].spec: [candidate("attention", causal=False, route="pattern"), candidate("direction", layers=[25])],
        heads[0].spec: [candidate("atp-output", route="neither"), candidate("attention", route="content")],
        lora[0].spec: [candidate("random", route="pattern")],
    }
    members = mlp + direction + heads + lora
    lines = figures(members, {spec: ladder(spec, r) for spec, r in rows.items()})
    assert line(lines, "wrong_route_rate").endswith("(2 of 4)")
    assert line(lines, "site_power_mlp").endswith("(1 of 1)") and line(lines, "site_power_direction").endswith(
        "(1 of 1)"
    )
    assert line(lines, "site_power").startswith("1.00 [") and line(lines, "site_power").endswith("(2 of 2)")


def test_site_power_reads_the_planted_sites_candidate_and_the_diagnostic_its_layers():
    members = family("mlp", 2) + family("direction", 1)
    rows = {
        members[0].spec: [candidate("atp-mlp", heads=None, layers=[25, 27])],
        members[1].spec: [candidate("atp-mlp", heads=None, layers=[22, 23]), candidate("direction", causal=False)],
        members[2].spec: [candidate("atp-mlp", heads=None, layers=[25]), candidate("direction", causal=None)],
    }
    found = {"main": {Path(s).name: ladder(s, r) for s, r in rows.items()}}
    local = {m.name: ({"planted_layers": [25, 26]}, {}) for m in members}
    lines = BENCH["report_lines"](members, found, local)
    assert line(lines, "site_power_mlp").endswith("(2 of 2)")
    assert line(lines, "site_power_direction").startswith("0.00 [0.00, 0.97] (0 of 1)")
    assert line(lines, "site_power").endswith("(2 of 3)")
    assert line(lines, "site_power_mlp_on_planted").endswith("(1 of 2)")  # not registered: after its heading
    heading = lines.index("-- not registered (diagnostics) --")
    assert [x for x in lines[heading:] if x.startswith("site_power")] == [x for x in lines if "on_planted" in x]
    assert "auroc_atp-mlp_mlp: not run (0 of 2 run)" in lines[:heading]  # registered: before the heading


def test_the_sensitivity_reading_repeats_the_planted_figures_on_the_k5_ladders():
    members = family("attn-trained", 1) + [Member("null", 1, "smollm2-135m-judge-seed1")]
    k5 = BENCH["controls_for"](members[0].name, "k5")
    found = {"k5": {members[0].name: ladder(members[0].spec, [candidate("attention", route="pattern")], controls=k5)}}
    lines = BENCH["sensitivity_lines"](members, found)
    assert lines == ["route_power_pattern_k5: 1.00 [0.02, 1.00] (1 of 1)"]  # no null figure: nulls have no k = 5
    assert "smollm2-135m-judge" not in k5 and len(k5) == 5


def test_a_member_whose_ladder_has_not_run_is_reported_as_not_run():
    members = family("attn-trained", 10)
    ran = {m.spec: ladder(m.spec, [candidate("attention", route="pattern")]) for m in members[:3]}
    lines = figures(members + family("content", 10), ran)
    lo, hi = BENCH["clopper_pearson"](3, 3)
    assert line(lines, "route_power_pattern") == f"1.00 [{lo:.2f}, {hi:.2f}] (3 of 3 run; 7 of 10 not run)"
    assert line(lines, "route_power_content") == "not run (0 of 10 run)"
    report = BENCH["report_lines"](members, {"main": {Path(s).name: v for s, v in ran.items()}}, {})
    assert line(report, "members_not_run").startswith("7 of 10 ['attn-trained-seed7213'")


def test_the_null_fpr_counts_any_candidate_and_its_no_gap_gate_reading_reads_its_own_ladders():
    nulls = [Member("null", 0, "smollm2-135m-judge"), Member("null", 6, "/bench/organisms/null-seed6")]
    gated = {
        "smollm2-135m-judge": ladder("smollm2-135m-judge", quiet(*METHODS)),
        "null-seed6": ladder("/bench/organisms/null-seed6", quiet(*METHODS)),
    }
    ungated = {"null-seed6": ladder("/bench/organisms/null-seed6", [candidate("random")], gap_gate=False)}
    lines = BENCH["figure_lines"](nulls, {"main": gated, "no_gap_gate": ungated})
    assert line(lines, "null_fpr_ladder") == "0.00 [0.00, 0.84] (0 of 2)"
    assert line(lines, "null_fpr_ladder_no_gap_gate") == "1.00 [0.02, 1.00] (1 of 1 run; 1 of 2 not run)"


def test_the_registered_sizes_give_the_plans_bounds():
    """Plan 5: 9 of 10 has a lower bound of 0.555 (the plan's 0.56, rounded up there); 0 of 12 nulls an upper
    bound of 0.26."""
    members = family("attn-trained", 10)
    hits = {m.spec: ladder(m.spec, [candidate("attention", route="pattern")]) for m in members[:9]}
    hits[members[9].spec] = ladder(members[9].spec, [candidate("attention", route="content")])
    assert line(figures(members, hits), "route_power_pattern") == "0.90 [0.55, 1.00] (9 of 10)"
    nulls = [Member("null", s, f"/bench/organisms/null-seed{s}") for s in range(6, 18)]
    quiet_nulls = {m.name: ladder(m.spec, quiet(*METHODS)) for m in nulls}
    assert line(BENCH["figure_lines"](nulls, {"main": quiet_nulls}), "null_fpr_ladder") == "0.00 [0.00, 0.26] (0 of 12)"


def test_only_plan_5_ladders_count_and_each_is_read_as_its_reading():
    reading = BENCH["ladder_reading"]
    planted = "/bench/organisms/mlp-seed7210"
    assert reading(ladder(planted, [])) == "main"
    assert reading(ladder(planted, [], gap_gate=False)) == "no_gap_gate"
    assert reading(ladder(planted, [], controls=BENCH["controls_for"]("mlp-seed7210", "k5"))) == "k5"
    assert reading(ladder(planted, [], split_seed=71071)) is None  # plan 4's split
    assert reading(ladder(planted, [], methods=["attention", "atp"])) is None  # not every method
    assert reading(ladder(planted, [], counterfactual="reference")) is None
    assert reading(ladder(planted, [], controls=["smollm2-135m-judge-seed1", "smollm2-135m-judge-seed2"])) is None
    # a shipped null against the other five; a new null against all six
    assert BENCH["controls_for"]("smollm2-135m-judge-seed3") == [n for n in BENCH["NULLS"] if not n.endswith("seed3")]
    assert BENCH["controls_for"]("null-seed6") == BENCH["NULLS"]
    assert reading(ladder("smollm2-135m-judge-seed3", [])) == "main"


def test_the_ladder_command_runs_what_the_reading_counts():
    """SETTINGS5, the flags every ladder is run with, are the settings `ladder_reading` accepts."""
    flags = BENCH["SETTINGS5"]
    pairs = {flags[i]: flags[i + 1] for i in range(0, len(flags), 2) if flags[i] != "--method"}
    registered = BENCH["REGISTERED5"]
    assert int(pairs["--split-seed"]) == registered["split_seed"] == 72901
    assert int(pairs["--top-k"]) == registered["top_k"] and int(pairs["--mlp-k"]) == registered["mlp_k"]
    assert float(pairs["--selection-share"]) == registered["selection_share"]
    assert int(pairs["--random-sets"]) == registered["random_sets"] and pairs["--counterfactual"] == "other"
    assert [flags[i + 1] for i in range(len(flags)) if flags[i] == "--method"] == list(METHODS)


def test_auroc_per_method_reads_heads_for_head_families_and_layers_for_layer_families():
    heads = {"attention": {(28, 6): 0.9, (28, 7): 0.1, (3, 0): 0.5, (4, 1): 0.2}, "atp-mlp": {25: 1.0, 3: 0.0}}
    got = BENCH["member_aurocs"]("attn-trained", heads, {"planted_heads": [[28, 6], [28, 7]]})
    assert got == {"attention": 0.5}  # atp-mlp ranks layers: no reading against planted heads
    layers = {"atp-mlp": {25: 0.9, 26: 0.8, 3: 0.1}, "direction": {25: 0.2, 26: 0.1, 3: 0.3}, "atp": {(1, 1): 1.0}}
    got = BENCH["member_aurocs"]("mlp", layers, {"planted_layers": [25, 26]})
    assert got == {"atp-mlp": 1.0, "direction": 0.0}
    assert BENCH["member_aurocs"]("lora", layers, {}) == {}
    members = family("mlp", 2)
    lines = BENCH["auroc_lines"](members, {members[0].name: got})
    assert line(lines, "auroc_atp-mlp_mlp") == "1.000 (per seed: [1.0]; 1 of 2 run)"


def test_report_only_reads_the_explain_files_under_out_and_runs_nothing(tmp_path):
    organisms = tmp_path / "organisms"
    for name, manifest in {
        "attn-trained-seed7210": {"planted_heads": [[28, 6], [28, 7]], "planted_route": "pattern"},
        "mlp-seed7210": {"planted_layers": [25, 26], "planted_route": "mlp"},
    }.items():
        (organisms / name).mkdir(parents=True)
        (organisms / name / "manifest.json").write_text(json.dumps(manifest))
    runs = {
        "a": ladder(str(organisms / "attn-trained-seed7210"), [candidate("attention", route="pattern")]),
        "m": ladder(str(organisms / "mlp-seed7210"), [candidate("atp-mlp", heads=None, layers=[25, 26])]),
        "old": ladder(
            str(organisms / "attn-trained-seed7211"), [candidate("attention", route="pattern")], split_seed=0
        ),
    }
    for folder, data in runs.items():
        (tmp_path / "run" / "explain" / folder).mkdir(parents=True)
        (tmp_path / "run" / "explain" / folder / "explain.json").write_text(json.dumps(data))
    csv = "method,layer,head,score\nattention,28,6,0.9\nattention,28,7,0.8\nattention,3,0,0.1\n"
    (tmp_path / "run" / "explain" / "a" / "localisation.csv").write_text(csv)
    command = [sys.executable, str(SCRIPT), "--report-only", "--out", str(tmp_path), "--seeds", "7210-7211"]
    done = subprocess.run([*command, "--families", "attn-trained,mlp"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert line(lines, "route_power_pattern") == "1.00 [0.02, 1.00] (1 of 1 run; 1 of 2 not run)"  # 7211: split 0
    assert line(lines, "site_power_mlp") == "1.00 [0.02, 1.00] (1 of 1 run; 1 of 2 not run)"
    assert line(lines, "wrong_route_rate") == "0.00 [0.00, 0.97] (0 of 1 run; 1 of 2 not run)"
    assert line(lines, "auroc_attention_attn-trained") == "1.000 (per seed: [1.0]; 1 of 2 run)"
    assert line(lines, "recipe_check_pattern") == "not run (0 of 2 run)"
    assert not list(tmp_path.glob("run/summary.json")) and not (tmp_path / "ladders").exists()


def test_each_step_runs_its_registered_command_once_and_keeps_what_it_made(tmp_path, monkeypatch):
    """study5 with `interp` faked: a ladder names the registered controls and settings (a null's second ladder
    with --no-gap-gate, a k = 5 one without null seed 0), one already found is not run again, and the recipe check
    masks the manifest heads on plan 5's split and keeps its row in OUT/checks/."""
    calls = []

    def fake(*args: str) -> str:
        calls.append(list(args))
        spec = args[args.index("--judge") + 1]
        return json.dumps({"causal": [{"judge": spec, "share_removed": 0.72}]} if args[0] == "intervene" else {})

    monkeypatch.setitem(BENCH["study5"].__globals__, "interp", fake)
    folder = tmp_path / "organisms" / "attn-trained-seed7210"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"planted_heads": [[28, 6], [29, 3]]}))
    attn, null = Member("attn-trained", 7210, str(folder)), Member("null", 2, "smollm2-135m-judge-seed2")
    args = BENCH["argparse"].Namespace(out=tmp_path, device="cpu", executor="ray")
    done = {"main": {"smollm2-135m-judge-seed2": {}}}
    for step, member in (("main", attn), ("main", null), ("no_gap_gate", null), ("k5", attn), ("mask", attn)):
        BENCH["study5"](args, done, tmp_path / "run", step, member)
    assert [c[0] for c in calls] == ["explain", "explain", "explain", "intervene"]  # null's main ladder: found

    def controls(call):
        return [call[i + 1] for i, flag in enumerate(call) if flag == "--control-judge"]

    main, ungated, k5, mask = calls
    assert controls(main) == BENCH["NULLS"] and "--no-gap-gate" not in main
    assert controls(ungated) == [n for n in BENCH["NULLS"] if n != null.spec] and "--no-gap-gate" in ungated
    assert controls(k5) == BENCH["NULLS"][1:]
    assert all(c[c.index("--split-seed") + 1] == "72901" for c in calls)
    assert all(c[c.index("--executor") + 1] == "ray" for c in calls)
    assert {"--timings", "--json"} <= set(main) and main[main.index("--judge") + 1] == str(folder)
    check = json.loads((tmp_path / "checks" / "mask-attn-trained-seed7210.json").read_text())
    assert BENCH["mask_removes"](check) and check["member"] == "attn-trained-seed7210"
    assert (tmp_path / "ladders" / "attn-trained-seed7210-k5.json").is_file()
    BENCH["study5"](args, done, tmp_path / "run", "mask", attn)
    assert len(calls) == 4  # the check is kept: not run again


def test_members_go_round_robin_over_the_families():
    members = family("mlp", 2) + family("content", 3) + [Member("null", 0, "smollm2-135m-judge")]
    order = [m.name for m in BENCH["round_robin"](members)]
    assert order == [
        "mlp-seed7210",
        "content-seed7210",
        "smollm2-135m-judge",
        "mlp-seed7211",
        "content-seed7211",
        "content-seed7212",
    ]
