"""Docstrings name only what exists (issue 82 item 5): every dotted `interp.x.y` name a docstring in interp/ or
hooks/ puts in backticks imports (a module) or resolves (an attribute, a dataclass or pydantic field)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAME = re.compile(r"`(interp(?:\.[A-Za-z_]\w*)+)(?=[`(\[ ,])")


def _docstrings(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield doc


def _has(obj, attr: str) -> bool:
    fields = {**getattr(obj, "__dataclass_fields__", {}), **getattr(obj, "model_fields", {})}
    return hasattr(obj, attr) or attr in fields


def resolves(name: str) -> bool:
    """Whether `name` is a module, or an attribute chain of the longest module prefix that imports."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not _has(obj, attr):
                return False
            obj = getattr(obj, attr, None)
        return True
    return False


def docstring_names() -> dict[str, set[str]]:
    """Module path -> the dotted `interp.` names its docstrings put in backticks."""
    found: dict[str, set[str]] = {}
    for path in sorted([*(REPO / "interp").rglob("*.py"), *(REPO / "hooks").rglob("*.py")]):
        for doc in _docstrings(path):
            found.setdefault(str(path.relative_to(REPO)), set()).update(NAME.findall(doc))
    return found


def test_every_dotted_name_a_docstring_mentions_exists():
    names = docstring_names()
    assert sum(len(v) for v in names.values()) > 100  # the walk finds the references
    stale = {path: sorted(n for n in found if not resolves(n)) for path, found in names.items()}
    assert not {path: found for path, found in stale.items() if found}


def test_the_check_can_fail():
    assert resolves("interp.hooks.base.HookFunctions") and resolves("interp.results.causal.JudgeTest.within_judge")
    assert not resolves("interp.organisms.evaluate.evaluate_into_manifest")
    assert NAME.findall("see `interp.core.judge.judge_batch(..., edits=)` and `interp.nowhere`") == [
        "interp.core.judge.judge_batch",
        "interp.nowhere",
    ]
