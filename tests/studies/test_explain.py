"""`interp explain`: the ladder (localise on the selection split, test on the test split) on a tiny run, and the
route verdict's rule on known shares.

The run: two tiny 2-layer Llamas over 6 built-in items (with references: the route counterfactual needs them),
judged with span attention; three control judges outside it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import runpy
import shutil
from pathlib import Path

import pytest

from interp.core.spans import TokenizedPrompt
from interp.errors import InterpError
from interp.hooks.node_data import counterfactual_ids
from interp.metrics.route_test import RouteTest
from interp.results import codec
from interp.studies.routes import PartShare, check_counterfactual, route_specs, route_verdict
from tests.causal.test_intervene import tiny_controls, tiny_pair_run


@pytest.fixture(scope="module")
def explain_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("explain")
    run = tiny_pair_run(root, tiny_llama_dir, smollm2_tokenizer, n=6, attention="final")
    return run, tiny_controls(root, smollm2_tokenizer)


def _part(name, share, low, high):
    return PartShare(name, share, (low, high), 0.01, True, p_removal=0.005)


def _between(pattern: float, content: float, p_route: float, t: float = 3.0) -> RouteTest:
    """A between-judge route test with the given shares and route p (synthetic numbers)."""
    direction = "pattern" if t > 0 else "content"
    one = p_route / 2
    return RouteTest(
        contrast_judge=0.1,
        contrast_controls=[0.0] * 6,
        judge_variance=1e-4,
        control_sd=0.01,
        gap=0.15,
        difference=pattern - content,
        pattern_share=pattern,
        content_share=content,
        t=t,
        df=5,
        p_pattern=one if t > 0 else 1 - one,
        p_content=one if t < 0 else 1 - one,
        p_route=p_route,
        direction=direction,
    )


def test_a_route_needs_a_causal_total_a_between_judge_contrast_and_half_of_the_total():
    """Issue 81: "pattern" only where the total is causal (one-sided removal p, interval above 0), the judge's
    pattern-minus-content contrast lies outside its controls' (route p at the level) and the pattern share is at
    least half of the total's; "content" likewise; "neither" otherwise, with the reason. Planted-heads seed 4
    (total 0.11, not causal) must not be routed, whatever the parts' marginal intervals."""
    parts = {
        "total": _part("total", 0.9, 0.7, 1.1),
        "pattern": _part("pattern", 0.8, 0.6, 1.0),
        "content": _part("content", 0.1, -0.1, 0.3),
    }
    assert route_verdict(parts, _between(0.8, 0.1, 0.001))[0] == "pattern"
    assert route_verdict(parts, _between(0.1, 0.8, 0.001, t=-3.0))[0] == "content"
    route, reason, _ = route_verdict(parts, _between(0.8, 0.1, 0.2))  # not told apart between judges
    assert route == "neither" and "not told apart" in reason
    route, reason, half = route_verdict(parts, _between(0.1, -0.1, 0.001))  # pattern 0.1, content -0.1, total 0.9
    assert route == "neither" and half is False and "less than half" in reason
    route, reason, _ = route_verdict(parts, None)
    assert route == "neither" and "no between-judge test" in reason
    # the multiplicity plan's adjusted p's decide where given
    assert route_verdict(parts, _between(0.8, 0.1, 0.001), p_route=0.2)[0] == "neither"
    assert route_verdict(parts, _between(0.8, 0.1, 0.001), p_total=0.2)[0] == "neither"
    # the total not causal: neither, however clear the parts look
    parts["total"] = PartShare("total", 0.11, (-0.03, 0.22), 0.2, False, p_removal=0.1)
    route, reason, _ = route_verdict(parts, _between(0.8, 0.1, 0.001))
    assert route == "neither" and "not causal" in reason
    parts["total"] = PartShare("total", 0.3, (-0.05, 0.6), 0.01, True, p_removal=0.005)  # its interval reaches 0
    route, reason, _ = route_verdict(parts, _between(0.8, 0.1, 0.001))
    assert route == "neither" and "interval is not above 0" in reason
    parts["total"] = PartShare("total", None, None, 0.4, False, "the gap before the intervention is not significant")
    route, reason, _ = route_verdict(parts, None)
    assert route == "neither" and "not significant" in reason


def test_route_parts_stop_at_the_first_without_a_share(monkeypatch, tmp_path):
    """Whether a part has a share is decided by the clean gap, the same for every part: once one has none, the
    others are not run, and the reason names them. With shares, every part runs."""
    from types import SimpleNamespace

    from interp.studies import routes

    ran = []

    def fake_intervene(run_dir, spec, **kwargs):
        ran.append(spec.name.split("-")[1])
        share = None if gapless else SimpleNamespace(estimate=0.5, low=0.2, high=0.8)
        record = SimpleNamespace(
            share_removed=share,
            p_value=0.01,
            causal=True,
            share_removed_reason="the gap before is not significant",
            control_names=["c1", "c2", "c3"],
            test=SimpleNamespace(t=-4.0, df=2),
        )
        return SimpleNamespace(judges={"j": record}, test_items=["t"], selection_items=["s"])

    monkeypatch.setattr(routes, "intervene_run", fake_intervene)
    monkeypatch.setattr(routes, "paired_difference", lambda *a, **k: ((0.5, (0.1, 0.9)), _between(0.6, 0.1, 0.001)))
    gapless = True
    analysis = routes.route_analysis(tmp_path, "j", {3: [1]})
    assert ran == ["total"] and set(analysis.parts) == {"total"} and analysis.route == "neither"
    assert "not significant" in analysis.reason and "not run, as none could have a share: pattern, content, mean" in (
        analysis.reason
    )
    ran.clear()
    gapless = False
    analysis = routes.route_analysis(tmp_path, "j", {3: [1]})
    assert ran == ["total", "pattern", "content", "mean"] and set(analysis.parts) == set(ran)
    assert "not run" not in analysis.reason
    assert analysis.route == "pattern" and analysis.difference == {"estimate": 0.5, "ci": [0.1, 0.9]}
    # the between-judge test is recorded: statistic, df, p, the half-of-total check, the reason
    assert analysis.between["t"] == 3.0 and analysis.between["df"] == 5 and analysis.between["p_route"] == 0.001
    assert analysis.between["half_of_total"] is True and analysis.between["verdict_reason"] == analysis.reason


def test_the_other_counterfactual_puts_the_pairs_other_answer_in_the_own_answers_place():
    prompt = TokenizedPrompt(list(range(20)), {"a": (2, 9), "b": (12, 15)}, "t")  # own answer in A: 7 tokens, B: 3
    (spec,) = route_specs({1: [0]}, ["total"], counterfactual="other").values()
    assert spec.counterfactual == "other" and spec.name.endswith("-other")

    def ids(authors, references=None, kind=spec):
        return counterfactual_ids(kind, [prompt], tokenizer=None, own="me", authors=[authors], references=references)[0]

    # B's tokens cycled from their start to A's length; every other position unchanged
    assert ids(("me", "them")) == [0, 1, 12, 13, 14, 12, 13, 14, 12, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
    assert ids(("them", "me")) == list(range(12)) + [2, 3, 4] + list(range(15, 20))  # A's, cut to B's 3 tokens
    with pytest.raises(InterpError, match="judge that wrote one"):
        ids(("them", "others"))
    (mean,) = route_specs({1: [0]}, ["mean"], counterfactual="other").values()  # no counterfactual to read
    assert mean.name == "route-mean-L1H0"
    with pytest.raises(InterpError, match="route counterfactual 'swap'"):
        check_counterfactual("swap")


def test_explain_tests_every_kind_of_candidate_on_the_test_split_and_writes_its_answer(
    explain_run, tmp_path, forked_cli
):
    source, controls = explain_run
    run = tmp_path / "run"
    shutil.copytree(source, run)
    from interp.run.store import read_run

    judge = read_run(run).config.models[0]
    args = (
        "explain",
        str(run),
        "--judge",
        judge,
        "--control-judge",
        ",".join(controls),
        "--top-k",
        "2",
        "--mlp-k",
        "1",
        "--selection-share",
        "0.5",
        "--json",
        "--timings",
    )
    result = forked_cli(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    printed = json.loads(result.stdout)
    steps = printed["timings"]["steps"]  # --timings: each rung's seconds, within the ladder's wall time
    assert {"localise judge", "localise controls", "candidates", "routes"} <= set(steps)
    assert 0 < printed["timings"]["total_s"] <= printed["timings"]["wall_s"] + 0.2
    (written,) = [json.loads(p.read_text()) for p in (run / "explain").glob("*/explain.json")]
    assert printed["candidates"] == written["candidates"] and printed["answer"] == written["answer"]
    # the judge's localisation is kept where its controls' are (read back by any explain of it on these items, and
    # when it is another judge's control), and copied beside explain.json
    from interp.storage import path_label

    (kept,) = (run / "localize" / "matched").glob(f"{path_label(judge)}-*/localisation.csv")
    (beside,) = (run / "explain").glob("*/localisation.csv")
    assert kept.read_bytes() == beside.read_bytes()
    assert set(written["selection_items"]).isdisjoint(written["test_items"]) and len(written["test_items"]) == 3
    by = {(c["site"], c["selected_by"]) for c in written["candidates"]}
    assert {
        ("attention", "attention"),
        ("attention", "atp"),
        ("head_output", "atp-output"),
        ("mlp_output", "atp-mlp"),
        ("residual", "direction"),
    } <= by
    assert {("attention", "random"), ("head_output", "random"), ("mlp_output", "random")} <= by
    for c in written["candidates"]:
        assert set(c) >= {
            "site",
            "heads",
            "layers",
            "route",
            "selected_by",
            "share_removed",
            "ci",
            "causal",
            "p_value",
            "p_holm",
        }
        if c["site"] in ("attention", "head_output"):
            assert len(c["heads"]) == 2 and all(len(h) == 2 for h in c["heads"])
            if c["selected_by"] != "random":
                assert c["route"] in ("pattern", "content", "neither")
                if c["share_removed"] is None:  # no share of the gap: no route part could have one, none is run
                    assert c["route_detail"]["parts"] == {} and c["route"] == "neither"
                    assert "no route part run" in c["route_detail"]["reason"]
                else:
                    assert set(c["route_detail"]["parts"]) == {"total", "mean", "pattern", "content"}
                    between = c["route_detail"]["between"]  # the between-judge route test, recorded
                    assert {"t", "df", "p_route", "p_route_adjusted", "half_of_total", "verdict_reason"} <= set(between)
                    assert between["verdict_reason"] == c["route_detail"]["reason"]
        else:
            assert c["route"] is None and c["heads"] is None and c["layers"]
        # the power budget: one-sided removal p's, random sets outside the plan (their raw p), the others adjusted
        assert c["alternative"] == "less" and c["role"] == (
            "negative control" if c["selected_by"] == "random" else "primary"
        )
        if c["p_value"] is not None:
            two = c["p_two_sided"]
            assert c["p_value"] == pytest.approx(two / 2) or c["p_value"] == pytest.approx(1 - two / 2)
            assert (
                c["p_holm"] == c["p_value"] if c["role"] == "negative control" else c["p_holm"] >= c["p_value"] - 1e-12
            )
            # the rank check beside the parametric p: the judge's change ranked among 1 + k changes (k = 3)
            assert c["p_rank_controls"] is not None and c["p_rank_controls"] >= 1 / (1 + len(controls)) - 1e-12
            # causal only with a gap to carry: no share (the gap before is not significant), no verdict
            removes = c["ci"] is not None and c["ci"][0] is not None and c["ci"][0] > 0
            assert c["causal"] == (None if c["share_removed"] is None else c["p_holm"] <= 0.05 and removes)
        assert (c["share_removed"] is None) == (c["ci"] is None)
    assert written["answer"].startswith("Attention to its own answer carries")
    assert written["gap_gate"] is True and written["null"] == "matched"
    groups: dict[str, list] = {}  # identical sets (the judge's and every control's) are tested once
    for c in written["candidates"]:
        groups.setdefault(
            json.dumps([c["site"], c["heads"], c["layers"], c["control_sets"]], sort_keys=True), []
        ).append(c)
    assert all(sum(c["tested_with"] is None for c in group) == 1 for group in groups.values())
    plan = written["multiplicity"]
    assert written["schema_version"] == 2 and len(plan["negative_controls"]) == 3
    primaries = [h for h in plan["hypotheses"] if h["role"] == "primary"]
    assert {m for h in primaries for m in h["methods"]} == {"attention", "atp", "atp-output", "atp-mlp", "direction"}
    check_matched_null(run, judge, controls, written)
    # the gap gate read from the clean verdicts alone (experiments/records/null_gap.py, plan 3's amendment 9) is
    # the one every candidate's test applied: the same judge mean, controls' spread and p
    gate = runpy.run_path(str(Path(__file__).parents[2] / "experiments" / "records" / "null_gap.py"))["gap_gate"](
        str(run), judge, 0.5, 0, tuple(controls)
    )
    records = codec.read_causal_results(run)
    assert records and gate["n_test"] == 3 and gate["controls"] == controls
    for record in records:
        (tested,) = record.judges.values()
        before = tested.dbg_test_before
        assert before.x == pytest.approx(gate["dbg_judge"], abs=1e-12)
        assert before.p_value == pytest.approx(gate["p_value"], abs=1e-12)
        assert (tested.share_removed is not None) == gate["gate_passes"]
    # every test is keyed: a second command re-judges nothing
    variants = sorted(p.name for p in (run / "variants").iterdir())
    again = forked_cli(*args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert sorted(p.name for p in (run / "variants").iterdir()) == variants
    assert json.loads(again.stdout)["candidates"] == written["candidates"]


def check_matched_null(run: Path, judge: str, controls: list[str], written: dict) -> None:
    """Every candidate's null is matched: each control has its own set, of the candidate's size, chosen by the
    same method on the same selection items (what the localisation gives for that control, the judge's answer
    read as own); no share where the judge's gap before is at most 0; head sets carry their route parts."""
    from interp.causal.matched import top_heads_of, top_layers_of
    from interp.core.models import own_model
    from interp.locate.heads import LocalizeItems, localize_run
    from interp.run.store import read_run

    loaded = read_run(run)
    selection = written["selection_items"]
    located = {
        c: localize_run(
            loaded,
            c,
            ["attention", "atp", "atp-output", "atp-mlp"],
            on=LocalizeItems(selection, own=own_model(judge)),
            progress=False,
        )
        for c in controls
    }
    for c in written["candidates"]:
        assert c["null"] == "matched" and set(c["control_sets"]) == set(controls)
        assert isinstance(c["gap_before"], float)
        if c["gap_before"] <= 0:
            assert c["share_removed"] is None
        for control, chosen in c["control_sets"].items():
            frame = located[control]
            if c["selected_by"] in ("attention", "atp", "atp-output"):
                mine = frame[frame["method"] == c["selected_by"]].sort_values("rank")
                assert chosen["heads"] == top_heads_of(mine, len(c["heads"]))
            elif c["selected_by"] == "atp-mlp":
                mine = frame[frame["method"] == "atp-mlp"].sort_values("rank")
                assert chosen["layers"] == top_layers_of(mine, len(c["layers"]))
            elif c["heads"]:
                assert len(chosen["heads"]) == len(c["heads"])
            else:
                assert len(chosen["layers"]) == len(c["layers"])
        if c["heads"]:
            assert {"total", "pattern", "content"} <= set(c["route_parts"])
            assert all(set(part) >= {"share_removed", "ci"} for part in c["route_parts"].values())
    randoms = [c for c in written["candidates"] if c["selected_by"] == "random" and c["heads"]]
    # each judge at its own random draw: the controls' draws are not all the judge's
    assert any(s["heads"] != c["heads"] for c in randoms for s in c["control_sets"].values())


def copied_run(explain_run, tmp_path: Path) -> tuple[Path, str, list[str]]:
    """A copy of the tiny run, its tested judge and the control judges."""
    from interp.run.store import read_run

    source, controls = explain_run
    run = tmp_path / "run"
    shutil.copytree(source, run)
    return run, read_run(run).config.models[0], controls


def test_no_gap_gate_calls_every_candidate_on_its_holm_p_alone_and_says_so(explain_run, tmp_path, forked_cli):
    run, judge, controls = copied_run(explain_run, tmp_path)
    options = ["-m", "atp", "--top-k", "1", "--selection-share", "0.5", "--random-sets", "1", "--no-routes"]
    result = forked_cli(
        "explain",
        str(run),
        "--judge",
        judge,
        "--control-judge",
        ",".join(controls),
        *options,
        "--no-gap-gate",
        "--json",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    printed = json.loads(result.stdout)
    assert printed["gap_gate"] is False and printed["settings"]["gap_gate"] is False
    assert printed["answer"].startswith("Diagnostic without the gap gate")
    assert len(printed["candidates"]) == 2
    for c in printed["candidates"]:
        assert c["null"] == "matched" and c["p_holm"] is not None
        assert c["causal"] == (c["p_holm"] <= 0.05)


@pytest.mark.parametrize(
    "options",
    [("--top-k", "8", "--mlp-k", "1"), ("--top-k", "1", "--mlp-k", "3"), ("--top-k", "1")],
    ids=["top-k-every-head", "mlp-k-over-layers", "default-mlp-k-every-layer"],
)
def test_explain_refuses_sets_that_leave_nothing_unchosen_before_writing_anything(
    explain_run, tmp_path, forked_cli, options
):
    """8 heads of a 2-layer, 4-head model (or 2 or 3 MLP layers of 2) would make every random set the candidate
    itself, or cannot be drawn: one line, exit 2, and nothing written (no localisation.csv, no directions)."""
    run, judge, controls = copied_run(explain_run, tmp_path)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    refused = forked_cli("explain", str(run), "--judge", judge, "--control-judge", ",".join(controls), *options)
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert len(refused.stderr.strip().splitlines()) == 1 and "nothing would be left unchosen" in refused.stderr
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before


def test_explain_refuses_a_judge_that_did_not_judge_the_run(explain_run, forked_cli):
    source, _ = explain_run
    result = forked_cli("explain", str(source), "--judge", "nobody")
    assert result.returncode == 2 and "did not judge this run" in result.stderr
    assert not (source / "explain").exists()


def written_files(root: Path) -> dict[str, bytes]:
    """Every file explain wrote into the run (its results, the causal tests' and the keyed store's)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for folder in ("explain", "interventions", "variants")
        for p in sorted((root / folder).rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


PATH_FIELDS = {"explain.json": "run", "result.json": "run_dir"}  # the run's folder, the one field copies differ in


def test_explain_on_ray_writes_the_serial_runs_bytes_and_survives_a_killed_task(
    explain_run, tmp_path, local_ray, one_thread, monkeypatch
):
    """The same explain serially and with every causal test's tasks on a local Ray (2 CPUs), on two copies of
    the run: every file under explain/, interventions/ and variants/ is the same bytes but for the field that
    names the run's folder; no judgment of the Ray run is made in this process; the first Ray task's worker
    dies outright and is retried. Both run torch on one thread, as each Ray task (one CPU) does (`one_thread`)."""
    import numpy as np

    import interp
    from interp.run.store import read_run

    source, controls = explain_run
    serial_run, ray_run = tmp_path / "serial", tmp_path / "ray"
    shutil.copytree(source, serial_run)
    shutil.copytree(source, ray_run)
    judge = read_run(serial_run).config.models[0]
    methods = ("atp", "atp-mlp", "direction")  # every site (the route parts: the head sites) and one head set
    options = dict(control_judges=controls, methods=methods, top_k=1, mlp_k=1, selection_share=0.5, progress=False)
    serial = interp.explain(serial_run, judge, **options)
    on_ray = ray_explain(ray_run, judge, options, tmp_path / "killed", monkeypatch)
    assert (tmp_path / "killed").exists()
    assert on_ray.candidates == serial.candidates and on_ray.answer == serial.answer
    serial_files, ray_files = written_files(serial_run), written_files(ray_run)
    assert serial_files.keys() == ray_files.keys()
    # Each distinct test (a random set can draw the candidate's own site: one test) and each route part run
    # judges the judge and every control: one judgments file each, at least.
    tests = {json.dumps([c.site, c.heads, c.layers]) for c in serial.candidates}
    parts = sum(len(c.route_detail["parts"]) for c in serial.candidates if c.route_detail is not None)
    assert sum(name.endswith("judgments.jsonl") for name in serial_files) >= (len(tests) + parts) * (1 + len(controls))
    assert {c.site for c in serial.candidates} == {"attention", "mlp_output", "residual"}
    assert sum(c.route_detail is not None for c in serial.candidates) == 1
    assert sum(name.endswith("result.json") for name in serial_files) >= len(serial.candidates)
    differing = []
    for name, data in serial_files.items():
        if name.endswith(".npz"):  # a zip: its members' dates differ; their arrays may not
            first, second = np.load(serial_run / name), np.load(ray_run / name)
            assert all(np.array_equal(first[k], second[k]) for k in first.files)
        elif data != ray_files[name]:
            differing.append(name)
            field = PATH_FIELDS[Path(name).name]
            first, second = json.loads(data), json.loads(ray_files[name])
            assert (first.pop(field), second.pop(field)) == (str(serial_run), str(ray_run))
            assert first == second
            assert data.replace(str(serial_run).encode(), b"RUN") == ray_files[name].replace(
                str(ray_run).encode(), b"RUN"
            )
    assert differing  # the field is there, so the comparison above did run


def ray_explain(run: Path, judge: str, options: dict, killed: Path, monkeypatch):
    """`interp.explain` on Ray, where the first task's worker dies outright (as a lost node or the OOM killer
    would) and this process may judge nothing."""
    import interp
    from interp.engine import executor, judges

    def not_here(*args, **kwargs):
        raise AssertionError("the driver judged a variant that a Ray task should have")

    real_map = executor.ray_map

    def first_dies(work, tasks, **kwargs):
        def task_body(task):  # defined here, so Ray ships it by value
            if not os.path.exists(killed):
                open(killed, "w").close()
                os._exit(1)
            return work(task)

        return real_map(task_body, tasks, **kwargs)

    monkeypatch.setattr(judges, "judge_variant", not_here)  # this process only: Ray's workers import their own
    monkeypatch.setattr(executor, "ray_map", first_dies)
    return interp.explain(run, judge, executor="ray", max_memory=0.0, **options)


def test_explain_refuses_an_unknown_executor_or_budget_in_one_line_with_nothing_written(
    explain_run, tmp_path, forked_cli
):
    import interp
    from interp.errors import InterpError

    source, controls = explain_run
    with pytest.raises(InterpError, match="max_memory must be at least 0 GB"):
        interp.explain(tmp_path / "no-run", "judge", max_memory=-1)
    from interp.run.store import read_run

    judge = read_run(source).config.models[0]
    refused = forked_cli(
        "explain", str(source), "--judge", judge, "--control-judge", ",".join(controls), "--executor", "spark"
    )
    assert refused.returncode == 2
    assert refused.stderr.strip() == "error: unknown executor 'spark'; use one of local, ray"
    assert not (source / "explain").exists()


def _plan(candidates, alpha=0.05, **kw):
    from interp.studies.explain import with_plan

    return with_plan(candidates, [f"k{i}" for i in range(len(candidates))], alpha, **kw)[0]


def test_a_candidate_is_causal_only_where_the_judge_has_a_gap_to_carry():
    """Null seed 3 of the bench: the own answer masked at its own top attention heads moved its DBG by +1.1 pts
    against controls that moved 0.02 (Holm p 1e-4), while its gap over the controls was not significant. Such a
    candidate is untested (None), not causal; with a gap the same p is causal, and a large one is not."""
    from interp.studies.explain import Candidate

    def candidate(p, share, method="atp"):
        return Candidate("attention", method, [[1, 0]], None, share, None if share is None else [0.1, 1.0], p)

    no_gap = _plan([candidate(1e-5, None), candidate(0.5, None, "attention")])
    assert [c.causal for c in no_gap] == [None, None] and no_gap[0].p_holm == pytest.approx(2e-5)
    gap = _plan([candidate(1e-5, 0.9), candidate(0.5, 0.1, "attention"), candidate(None, None, "atp-output")])
    assert [c.causal for c in gap] == [True, False, None] and gap[2].p_holm is None
    # a share whose interval does not lie above 0 (it may widen the gap) is not causal, whatever its p
    widening = Candidate("attention", "atp", [[1, 0]], None, -0.4, [-0.9, 0.1], 1e-6)
    assert _plan([widening])[0].causal is False
    # --no-gap-gate: the adjusted p alone, with or without a share
    diagnostic = _plan(
        [
            candidate(1e-5, None),
            dataclasses.replace(widening, selected_by="attention"),
            candidate(0.5, 0.9, "direction"),
        ],
        gap_gate=False,
    )
    assert [c.causal for c in diagnostic] == [True, True, False]


def test_random_sets_are_negative_controls_outside_holm_and_identical_sets_are_one_test():
    """Three methods' primaries and three random sets: Holm over the primaries only (m = 3, not 6), each random
    set called on its raw p; two methods that chose the same sets are one hypothesis (Holm over two)."""
    from interp.studies.explain import Candidate, with_plan

    def candidate(method, p):
        return Candidate("attention", method, [[1, 0]], None, 0.5, [0.2, 0.8], p)

    chosen = [candidate("attention", 0.01), candidate("atp", 0.02), candidate("atp-output", 0.3)]
    randoms = [candidate("random", 0.03), candidate("random", 0.001), candidate("random", 0.6)]
    out, plan = with_plan(chosen + randoms, ["a", "b", "c", "r0", "r1", "r2"], 0.05)
    assert [c.p_holm for c in out[:3]] == pytest.approx([0.03, 0.04, 0.3])  # Holm over 3 primaries
    assert [c.p_holm for c in out[3:]] == [0.03, 0.001, 0.6]  # raw: outside the correction
    assert [c.role for c in out] == ["primary"] * 3 + ["negative control"] * 3
    assert [c.causal for c in out[3:]] == [True, True, False]  # reported, never counted
    assert len(plan.negative_controls) == 3 and {h.key for h in plan.hypotheses} == {"a", "b", "c"}
    # attention and atp chose the same sets (the same key): one test, Holm over two
    out, plan = with_plan(chosen[:1] + [candidate("atp", 0.01)] + chosen[2:], ["a", "a", "c"], 0.05)
    assert [c.p_holm for c in out] == pytest.approx([0.02, 0.02, 0.3]) and len(plan.hypotheses) == 2
    (same,) = [h for h in plan.hypotheses if h.key == "a"]
    assert same.methods == ["attention", "atp"]
    # a method's further candidate is gate-kept behind its primary (fixed sequence): a tiny p does not pass alone
    out, _ = with_plan(
        [candidate("atp", 0.2), candidate("atp", 0.001), candidate("attention", 0.01)], ["a1", "a2", "b"], 0.05
    )
    assert [c.role for c in out] == ["primary", "gate-kept", "primary"]
    assert out[1].p_holm >= out[0].p_holm > 0.05 and out[1].causal is False and out[2].causal is True


def test_the_reports_text_names_the_counterfactual_that_ran_and_the_gap_condition():
    from interp.report.explain import test_text
    from interp.results.codec import parse
    from interp.results.explain import Explanation

    def result(counterfactual: str) -> Explanation:
        candidate = {"site": "attention", "selected_by": "atp", "heads": [[1, 0]], "layers": None}
        candidate |= {"share_removed": None, "ci": None}
        settings = {"selection_share": 0.4, "split_seed": 0, "test_alpha": 0.05, "counterfactual": counterfactual}
        data = {"run": "r", "judge": "j", "settings": settings, "controls": ["a", "b", "c"]}
        data |= {"test_items": ["t1", "t2"], "selection_items": ["s1"]}
        return parse(Explanation, data | {"candidates": [candidate | {"p_value": 0.01}, candidate | {"p_value": None}]})

    text = test_text(result("other"))
    assert "the pair's other answer" in text and "reference answer" not in text and "a gap to carry" in text
    assert "the item's reference answer" in test_text(result("reference"))


def test_the_paired_difference_resamples_both_routes_together():
    """Pattern minus content share from one bootstrap of controls and items: a judge whose gap goes with the pattern
    patch and stays under the content patch gives about 1, clear of 0; two parts that remove the same gives about
    0, with an interval that holds 0 (where marginal intervals would each be wide)."""
    import numpy as np

    from interp.studies.routes import difference_interval

    rng = np.random.default_rng(0)
    items, noise = 40, lambda *shape: rng.normal(0, 0.05, shape)
    before = 0.3 + noise(items)
    judge = np.stack([before, before - 0.3 + noise(items), before + noise(items)])[None]
    controls = noise(4, 3, items)
    estimate, (low, high) = difference_interval(judge, controls, n_boot=400, seed=0)
    assert estimate == pytest.approx(1.0, abs=0.15) and low > 0.5
    same = np.stack([before, before - 0.15 + noise(items), before - 0.15 + noise(items)])[None]
    estimate, (low, high) = difference_interval(same, controls, n_boot=400, seed=0)
    assert abs(estimate) < 0.2 and low < 0 < high


def test_an_explanation_of_schema_1_still_reads_and_its_text_says_holm_over_every_candidate():
    """A file written before the power budget (two-sided p, Holm over every candidate, random sets included) reads
    through the codec's migration, says so in `multiplicity`, and its report text keeps the words it was made
    with; a schema-2 file's text names the plan."""
    from interp.report.explain import test_text
    from interp.results.codec import dump, parse
    from interp.results.explain import Explanation

    candidate = {"site": "attention", "selected_by": "atp", "heads": [[1, 0]], "layers": None}
    candidate |= {"share_removed": 0.5, "ci": [0.1, 0.9], "p_value": 0.01, "p_holm": 0.08}
    data = {"schema_version": 1, "run": "r", "judge": "j", "controls": ["a", "b", "c"], "candidates": [candidate]}
    old = parse(Explanation, data)
    assert "schema 1" in old.multiplicity["rule"] and old.multiplicity["hypotheses"] == []
    assert old.candidates[0].role is None and old.candidates[0].alternative is None
    assert old.candidates[0].p_holm == 0.08 and dump(old)["schema_version"] == 2
    assert "corrected with Holm over the 1 candidates" in test_text(old)
    plan = {"rule": "plan", "hypotheses": [{"key": "k", "role": "primary", "methods": ["atp"]}]}
    new = parse(Explanation, data | {"schema_version": 2, "multiplicity": plan})
    text = test_text(new)
    assert "multiplicity plan" in text and "1 primary candidates" in text and "random rows outside" in text


def test_an_explain_candidate_is_causal_only_where_its_specificity_check_passed():
    """A candidate that passes the adjusted p and the share but whose causal test's specificity check failed (a
    flattening: the own answer's log-odds only rescaled) is not causal, and says why; one whose check passed, or a
    file from before the check (None), is called as before."""
    from interp.studies.explain import Candidate

    def candidate(method, specificity):
        return Candidate("attention", method, [[1, 0]], None, 0.5, [0.2, 0.8], 1e-4, specificity=specificity)

    failed = {"passed": False, "reason": "the judge's intercept is within its controls' spread (p 0.41)"}
    out = _plan(
        [
            candidate("attention", failed),
            candidate("atp", {"passed": True, "reason": ""}),
            candidate("atp-output", None),
        ]
    )
    assert [c.causal for c in out] == [False, True, True]
    assert out[0].reason.startswith("specificity: the judge's intercept")
