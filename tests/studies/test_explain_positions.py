"""`interp explain --positions final`: every candidate, the tested judge's and each control's, edits at the verdict
position and is judged over the cached keys and values; the settings record it, and the default (`all`) keeps
today's settings and so today's keys."""

from __future__ import annotations

import json

from interp.studies.explain import Request
from tests.studies.test_explain import copied_run, explain_run  # noqa: F401  (fixture)


def test_the_default_positions_keep_todays_settings_and_final_is_recorded():
    assert "positions" not in Request().settings(["c"])
    assert Request(positions="final").settings(["c"])["positions"] == "final"
    assert Request(path="full").settings(["c"]) == Request().settings(["c"])  # the path never changes a result


def test_explain_at_the_final_position_runs_every_candidate_on_the_cached_path(request, tmp_path, forked_cli):
    run, judge, controls = copied_run(request.getfixturevalue("explain_run"), tmp_path)
    options = ["-m", "attention", "-m", "atp-mlp", "--top-k", "1", "--mlp-k", "1", "--selection-share", "0.5"]
    result = forked_cli(
        "explain",
        str(run),
        "--judge",
        judge,
        "--control-judge",
        ",".join(controls),
        *options,
        "--no-routes",
        "--positions",
        "final",
        "--path",
        "cached",
        "--json",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    printed = json.loads(result.stdout)
    assert printed["settings"]["positions"] == "final"
    assert len(printed["candidates"]) == 4  # two chosen, two random
    for candidate in printed["candidates"]:
        spec = candidate["spec"]
        assert spec.get("queries", spec.get("positions")) == "final", spec
    records = [json.loads(p.read_text()) for p in (run / "variants").glob("*/variant.json")]
    edited = {r["path"] for r in records if r["name"] != "none"}  # a control's plain baseline is no edit: full
    assert edited == {"final_cached"}


def test_every_candidate_of_a_judge_shares_one_clean_pass_per_prompt(request, tmp_path, monkeypatch):
    """At the final position the ladder's tests are judged at once: each judge's clean passes cover each test
    prompt once, whatever the number of candidates (before, every test paid its own clean passes)."""
    import interp.engine.final_batch as final_batch
    from interp.run.store import read_run
    from interp.studies.explain import explain_run as explain

    run, judge, controls = copied_run(request.getfixturevalue("explain_run"), tmp_path)
    passes: list[int] = []
    original = final_batch.clean_pass

    def counted(model, batch, **kwargs):
        passes.append(int(batch.input_ids.shape[0]))
        return original(model, batch, **kwargs)

    monkeypatch.setattr(final_batch, "clean_pass", counted)
    asked = Request(
        methods=("attention", "atp-mlp"),
        top_k=1,
        mlp_k=1,
        selection_share=0.5,
        control_judges=tuple(controls),
        routes=False,
        positions="final",
        path="cached",
    )
    result = explain(run, judge, asked, progress=False)
    assert len(result.candidates) == 4  # four tests, each of the judge and every control
    judges = 1 + len(controls)
    prompts = 2 * len(result.test_items)
    assert sum(passes) == judges * prompts, (passes, judges, prompts)
    assert len(read_run(run).items) > len(result.test_items)  # the selection split exists and was not judged here
