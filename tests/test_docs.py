"""The README and the docs site: the site builds in strict mode, the organisms' status table is the generator's
output, every repository path the text names exists, and nothing cites a file outside the repository."""

from __future__ import annotations

import importlib
import itertools
import os
import re
import runpy
import subprocess
import sys

import pytest

from interp.core.adapters import shipped_adapters
from tests.helpers import REPO

DOCS = sorted((REPO / "docs").glob("*.md"))
TEXTS = [REPO / "README.md", *DOCS]
# paths in the text are checked when they start with one of the repository's own top-level entries (a run's
# files, such as `figures/...` or `runs/demo`, are outputs, not repository files)
TOP_LEVEL = ("interp/", "hooks/", "experiments/", "tests/", "notebooks/", "docs/", ".ci/")
ROOT_FILES = ("setup.sh", "pyproject.toml", "LICENSE", "mkdocs.yml", "README.md")


def _status_module():
    return runpy.run_path(str(REPO / "experiments" / "organisms" / "status_table.py"))


def test_mkdocs_builds_in_strict_mode(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(REPO / "mkdocs.yml"),
            "-d",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "judge_batch" in api and "AttentionIntervention" in api  # the reference is built from the docstrings


def test_every_docs_page_is_in_the_nav_and_every_nav_entry_exists():
    nav = set(re.findall(r":\s*([\w-]+\.md)\s*$", (REPO / "mkdocs.yml").read_text(), flags=re.M))
    assert nav == {path.name for path in DOCS}


@pytest.mark.parametrize("name", ["README.md", "docs/organisms.md"])
def test_the_organisms_status_table_is_the_generators_output(name):
    module = _status_module()
    table = module["status_table"]()
    assert module["table_in"]((REPO / name).read_text()) == table, (
        f"run: python experiments/organisms/status_table.py --write {name}"
    )
    rows = table.count("\n| `smollm2-135m-")  # one row per shipped organism with held-out figures ...
    members = (
        table.split("not one by one:")[-1].count("`smollm2-135m-") if "not one by one:" in table else 0
    )  # ... the rest named below it
    assert rows + members == len(shipped_adapters()) and rows >= 2


def test_readme_is_short_and_has_the_two_commands_and_a_python_quickstart():
    text = (REPO / "README.md").read_text()
    assert len(text.encode()) <= 15_500
    python = "\n".join(re.findall(r"```python\n(.*?)```", text, flags=re.S))
    for call in ("interp.Judge.load(", "judge(", ".mass", "interp.figure7(", "judge.applying(", "interp.sweep("):
        assert call in python
    assert "## Causal test" in text


def _mentioned_paths(text: str) -> set[str]:
    spans = re.findall(r"`([^`\n]+)`", text)
    tokens = itertools.chain.from_iterable(span.split() for span in spans)
    return {t.split("::")[0].rstrip(".,:;)") for t in tokens if t.startswith(TOP_LEVEL) or t in ROOT_FILES}


def _expand(path: str) -> list[str]:
    braces = re.search(r"\{([^}]*)\}", path)
    if braces is None:
        return [path]
    return [path[: braces.start()] + option + path[braces.end() :] for option in braces.group(1).split(",")]


@pytest.mark.parametrize("doc", TEXTS, ids=lambda p: p.name)
def test_every_repository_path_the_text_names_exists(doc):
    missing = []
    for mentioned in sorted(_mentioned_paths(doc.read_text())):
        if "<" in mentioned or mentioned.isupper():
            continue  # a placeholder
        for path in _expand(mentioned):
            if not (list(REPO.glob(path)) if "*" in path else (REPO / path).exists()):
                missing.append(path)
    assert not missing, f"{doc.name} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", TEXTS, ids=lambda p: p.name)
def test_every_dotted_name_the_text_gives_resolves(doc):
    """`interp.x.y` / `hooks.x` in backticks: the longest importable module prefix, then attributes."""
    names = {m for m in re.findall(r"`((?:interp|hooks)(?:\.\w+)+)(?:\(\))?`", doc.read_text())}
    broken = []
    for name in sorted(names):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
                break
            except ModuleNotFoundError:
                continue
        try:
            for attribute in parts[cut:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            broken.append(name)
    assert not broken, f"{doc.name} names what does not exist: {broken}"


def test_nothing_cites_a_file_outside_the_repository():
    pattern = re.compile(r"DESIGN\.md|shared/seeds|\.\./shared")
    sources = [*TEXTS, *(REPO / "interp").rglob("*.py"), *(REPO / "hooks").rglob("*.py")]
    offenders = [str(p.relative_to(REPO)) for p in sources if pattern.search(p.read_text())]
    assert not offenders
