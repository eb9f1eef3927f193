"""The layout keeps its promises: layers point down (import-linter), no import cycle, small modules that
each say what they are."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from tests.helpers import REPO

PACKAGES = ("interp", "hooks")
MAX_LINES = 600


def modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (REPO / package).rglob("*.py"))


def test_layers_contract_is_kept():
    """pyproject's import-linter contract: cli > experiments > report > analysis > run | hooks > core > base."""
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 kept, 0 broken" in result.stdout


def test_no_import_cycle():
    """For every direct import A -> B, no chain of imports leads from B back to A (lazy imports included)."""
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert len(graph.modules) > 60  # every subpackage is a regular package that grimp sees
    cycles = [
        (importer, imported, chain)
        for importer in sorted(graph.modules)
        for imported in graph.find_modules_directly_imported_by(importer)
        if (chain := graph.find_shortest_chain(importer=imported, imported=importer))
    ]
    assert not cycles, cycles[:5]


def test_a_cycle_would_be_found(tmp_path, monkeypatch):
    """The cycle check can fail: two modules that import each other are reported."""
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic import b\n")
    (package / "b.py").write_text("def f():\n    from cyclic import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyclic", cache_dir=None)
    assert graph.find_shortest_chain(importer="cyclic.b", imported="cyclic.a")
    assert graph.find_shortest_chain(importer="cyclic.a", imported="cyclic.b")


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_module_is_small_and_says_what_it_is(path):
    text = path.read_text()
    assert text.count("\n") <= MAX_LINES, f"{path.name} has {text.count(chr(10))} lines (limit {MAX_LINES})"
    docstring = ast.get_docstring(ast.parse(text))
    if path.name == "__init__.py" and not text.strip():
        return
    assert docstring, f"{path} has no module docstring"
    assert not re.search(r"\bissue \d+", docstring), f"{path}: a docstring names an issue number"


def test_at_least_three_subpackages():
    subpackages = [p.parent.name for p in (REPO / "interp").glob("*/__init__.py")]
    assert {"core", "run", "metrics", "analysis", "experiments", "report", "cli"} <= set(subpackages)
