"""`--positions` and `--path` on `interp intervene` and `interp explain`: a value a site cannot take, or `--path cached`
on an edit the cached final-position path cannot represent, is one `error:` line, exit 2, nothing written; a spec
moved to the final position runs through the cached path and its result records where it edited."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.test_refusals_before_work import finished_run, refused_unchanged, run_cases, snapshot  # noqa: F401

CASES = {  # name: (the command line, split on spaces; what its one error line says)
    "a spec at every position forced cached": ("intervene {run} --spec {root}/spec.toml --path cached", "represent"),
    "an unknown position": ("intervene {run} --spec {root}/spec.toml --positions middle", "--positions"),
    "positions without a spec": ("intervene {run} --top-heads 2 --selection-share 0.4 --positions final", "--spec"),
    "resample at every position": ("intervene {run} --spec {root}/resample.toml --positions all", "final position"),
    "an unknown path": ("intervene {run} --spec {root}/spec.toml --path fast", "unknown --path"),
    "explain cached at every position": ("explain {run} --judge j --path cached", "--positions final"),
    "explain cached with routes": ("explain {run} --judge j --path cached --positions final", "--no-routes"),
}


def _copy(source, root):
    """The finished run copied under `root`, with the two spec files the cases read."""
    shutil.copytree(source, root / "run")
    (root / "spec.toml").write_text('target = "self"\nalpha = 0.0\nlayers = [1]\n')
    (root / "resample.toml").write_text('site = "head_output"\nop = "resample"\npositions = "final"\n')
    return root


@pytest.fixture(scope="module")
def outcomes(finished_run, tmp_path_factory, forked_cli) -> dict:  # noqa: F811
    roots = {name: _copy(finished_run, tmp_path_factory.mktemp(f"positions{i}")) for i, name in enumerate(CASES)}
    jobs = [(CASES[name][0].split(), root) for name, root in roots.items()]
    return run_cases(forked_cli, jobs, {name: (root, snapshot(root)) for name, root in roots.items()})


@pytest.mark.parametrize("name", list(CASES))
def test_a_bad_position_or_a_forced_path_is_refused_before_writing(outcomes, name):
    refused_unchanged(outcomes[name], CASES[name][1])


def test_a_spec_moved_to_the_final_position_runs_on_the_cached_path(finished_run, tmp_path, forked_cli):  # noqa: F811
    _copy(finished_run, tmp_path)
    args = ["intervene", str(tmp_path / "run"), "--spec", str(tmp_path / "spec.toml"), "--positions", "final"]
    ((code, _, stderr),) = forked_cli.run([([*args, "--path", "cached", "--json"], tmp_path)], parallel=1)
    assert code == 0, stderr[-3000:]
    (spec,) = (tmp_path / "run" / "interventions").glob("*/spec.toml")
    assert 'queries = "final"' in spec.read_text()
    paths = {json.loads(p.read_text()).get("path") for p in (tmp_path / "run" / "variants").glob("*/variant.json")}
    assert paths == {"final_cached"}
