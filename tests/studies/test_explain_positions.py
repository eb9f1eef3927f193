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
