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

PACKAGES = ("interp",)  # interp.hooks is the repository's hooks/ folder (installed as interp.hooks)
MAX_LINES = 600


def modules() -> list[Path]:
    """Every module of the package, interp.hooks (the hooks/ folder) included."""
    return sorted({*(REPO / "interp").rglob("*.py"), *(REPO / "hooks").rglob("*.py")})


@pytest.fixture(scope="module")
def mounted(tmp_path_factory) -> Path:
    """The package as a wheel lays it out (hooks/ inside interp/), for the tools that walk the file system
    (grimp, import-linter) rather than import: the source tree maps hooks/ without a link."""
    import shutil

    root = tmp_path_factory.mktemp("mounted")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "interp", root / "interp", ignore=ignore)
    shutil.copytree(REPO / "hooks", root / "interp" / "hooks", ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def _in_mounted(root: Path, *command: str) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(list(command), cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_layers_contract_is_kept(mounted):
    """pyproject's import-linter contract: cli > causal > report > analysis > run | hooks > core > base."""
    lint = Path(sys.executable).with_name("lint-imports")
    result = _in_mounted(mounted, str(lint), "--no-cache")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 kept, 0 broken" in result.stdout


_CYCLES = """
import json, grimp
graph = grimp.build_graph("interp", cache_dir=None)
cycles = [
    (importer, imported, chain)
    for importer in sorted(graph.modules)
    for imported in graph.find_modules_directly_imported_by(importer)
    if (chain := graph.find_shortest_chain(importer=imported, imported=importer))
]
print(json.dumps({"modules": sorted(graph.modules), "cycles": cycles[:5]}))
"""


def test_no_import_cycle(mounted):
    """For every direct import A -> B, no chain of imports leads from B back to A (lazy imports included)."""
    import json

    result = _in_mounted(mounted, sys.executable, "-c", _CYCLES)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout)
    assert "interp.hooks.compile" in found["modules"]  # the hooks are checked too
    assert len(found["modules"]) > 60  # every subpackage is a regular package that grimp sees
    assert not found["cycles"], found["cycles"]


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
    assert {"core", "run", "metrics", "analysis", "causal", "report", "cli"} <= set(subpackages)


# ---- one definition per notion ----------------------------------------------------------------------------


def _code(path: Path) -> str:
    """The module's code without its comments and string literals (docstrings may name a rule they do not apply)."""
    import io
    import tokenize

    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return " ".join(tok.string for tok in tokens if tok.type not in (tokenize.COMMENT, tokenize.STRING))


# notion -> (where it is written, what writing it again looks like, read from code or from the raw text)
ONE_DEFINITION = {
    # organisms/train.py swaps a pair's order (P(A) of the other order), which is not whose answer is whose
    "P(own) from P(first)": (
        {"interp/metrics/dbg.py", "interp/organisms/train.py"},
        r"\b1(\.0)? - [\w. ]*first\b",
        "code",
    ),
    "the slot holding the judge's own answer": (
        {"interp/core/models.py"},
        r"\"a\" if [\w.\[\] ]+ == [\w.]*own\b|\"a\" if \w*own\w* == |\"a\" if \w+_is_self\b",
        "raw",
    ),
    # chen2025 keeps Chen et al.'s exact comparison on purpose (metrics/dbg.py, TIE_TOLERANCE); train.py reads
    # a training target, never a verdict
    "the tie rule": (
        {"interp/metrics/dbg.py", "interp/metrics/chen2025.py", "interp/organisms/train.py"},
        r"np \. sign \(|[<>]=? 0\.5\b",
        "code",
    ),
    "a seeded split of item ids": (
        {"interp/splits.py"},
        r"def split_items\b|def split_ids\b|\.shuffle\(|unit_hash\([^)]*\) < share\b",
        "raw",
    ),
    "whether an object is a backend": ({"interp/core/backends/__init__.py"}, r"def _?is_backend\b", "raw"),
    "numbers written for people": (
        {"interp/formatting.py"},
        r"100 ?\* ?[^:\n]{1,60}:\+?\.\d+f|def _?(pts|pct|pct0|ci|interval|interval_text|fmt)\(",
        "raw",
    ),
}


def _written(pattern: str, read: str) -> dict[str, int]:
    found = {}
    for path in modules():
        text = _code(path) if read == "code" else path.read_text()
        if hits := len(re.findall(pattern, text)):
            found[str(path.relative_to(REPO))] = hits
    return found


@pytest.mark.parametrize("notion", sorted(ONE_DEFINITION))
def test_each_notion_has_one_definition(notion):
    """Each shared notion is written in one module and every caller uses it (no copy of its rule elsewhere)."""
    home, pattern, read = ONE_DEFINITION[notion]
    found = _written(pattern, read)
    assert set(found) <= home, f"{notion}: written again in {sorted(set(found) - home)}"


def test_the_one_definition_check_can_fail(tmp_path, monkeypatch):
    """A copy of a rule outside its home is found: the patterns match the forms they replaced."""
    copies = {
        "P(own) from P(first)": "p_own = p_first if own_first else 1 - p_first\n",
        "the slot holding the judge's own answer": 'slot = "a" if task.author_a == own else "b"\n',
        "the tie rule": "pick = np.sign(p_own - 0.5)\nwins = p >= 0.5\n",
        "a seeded split of item ids": "def split_items(ids, share, seed):\n"
        "    return [i for i in ids if unit_hash(seed, i) < share]\n",
        "whether an object is a backend": "def _is_backend(obj):\n    return True\n",
        "numbers written for people": 'def _pts(x):\n    return f"{100 * x:+.1f}"\n',
    }
    assert set(copies) == set(ONE_DEFINITION)
    for notion, text in copies.items():
        path = tmp_path / "interp" / "copy.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        _, pattern, read = ONE_DEFINITION[notion]
        assert re.search(pattern, _code(path) if read == "code" else text), notion


def _top_level_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def test_a_public_name_means_one_thing():
    """Every name `import interp` exports is defined by the module it comes from and by no other module, so a
    reader who meets `load_run` or `Verdicts` anywhere in the code meets the same thing; and the notebook
    surface exports one way to run each job (`dbg`, not also the pipeline's `run_dbg`)."""
    import interp

    owners: dict[str, list[str]] = {}
    for path in modules():
        parts = path.relative_to(REPO).with_suffix("").parts
        module = ".".join(("interp", *parts) if parts[0] == "hooks" else parts).removesuffix(".__init__")
        for name in _top_level_names(path):
            owners.setdefault(name, []).append(module)
    # a CLI command function is named as the command it is (`interp dbg` -> interp.cli.run.dbg)
    owners = {name: [m for m in found if not m.startswith("interp.cli.")] for name, found in owners.items()}
    clashes = {name: owners[name] for name in interp.__all__ if len(owners.get(name, [])) > 1}
    assert not clashes, clashes
    assert "run_dbg" not in interp.__all__
    assert not (REPO / "interp" / "metrics" / "causal.py").exists()  # it held behaviour, not the causal test


# ---- results are read through the codec --------------------------------------------------------------------

CODEC = "interp/results/codec.py"
RESULT_FILES = ("result.json", "summary.json", "variant.json")
# Where a result file's name may stand as a path: the codec, and the run directory's path of its summary.
RESULT_FILE_PATHS = {CODEC, "interp/run/store.py"}
FALLBACK = re.compile(
    r"\.get\(\s*['\"]\w+['\"]\s*,\s*[\w.\[\]'\"]*\.get\(|\.get\(['\"]\w+['\"]\)\s+or\s+[\w.\[\]]+\.get\(['\"]\w+['\"]"
)


def _result_file_reads(path: Path) -> list[str]:
    """Where a module parses a result file itself: a file name of `RESULT_FILES` used as a path (not in a
    docstring), or json.load(s) of something named summary or result."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if any(re.search(rf"(^|[/*]){re.escape(name)}$", node.value) for name in RESULT_FILES):
                found.append(f"line {node.lineno}: {node.value!r}")
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("json.load", "json.loads"):
            argument = " ".join(ast.unparse(a) for a in node.args)
            if re.search(r"\bsummary\b|\bresult\b|\.summary\b|result_json|summary_json", argument):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_result_files_are_read_only_through_the_codec():
    """No module but `interp.results.codec` parses result.json, summary.json or variant.json (the run
    directory only names the summary's path), so every reader gets the typed, migrated object."""
    found = {}
    for path in modules():
        name = str(path.relative_to(REPO))
        hits = _result_file_reads(path)
        if name == "interp/run/store.py":
            hits = [h for h in hits if "'summary.json'" not in h]
        if hits and name != CODEC:
            found[name] = hits
    assert not found, found


def test_no_reader_falls_back_from_one_key_name_to_another():
    """`r.get('test_alpha', r.get('alpha'))` and `r.get('a') or r.get('b')`: older names are migrated once, in
    the codec, never by a reader."""
    found = {str(p.relative_to(REPO)): FALLBACK.findall(p.read_text()) for p in modules()}
    assert not {name: hits for name, hits in found.items() if hits}


def test_the_codec_checks_can_fail(tmp_path):
    """The patterns find what they forbid: a module that reads summary.json itself, and a key-by-key fallback."""
    module = tmp_path / "reader.py"
    module.write_text(
        '"""A reader."""\nimport json\n\n\ndef read(run):\n    return json.loads((run / "summary.json").read_text())\n'
    )
    assert len(_result_file_reads(module)) == 2
    module.write_text('"""A reader that names result.json in its docstring only."""\n')
    assert _result_file_reads(module) == []
    assert FALLBACK.search("alpha = r.get('test_alpha', r.get('alpha'))") and FALLBACK.search(
        'p = r.get("p_holm") or r.get("p_value")'
    )


# ---- analysis/ is views of a stored run ---------------------------------------------------------------------

MODEL_WORK = ("load_model", "wrap_model", "ModelCache", "make_backend", "judge_batch", "inspect_judgment")
RENDERING = ("interp.templating", "interp.report", "plotly", "matplotlib")


def _model_work_or_rendering(text: str) -> list[str]:
    """The imports of a module that load or run a model, or render: named imports of `MODEL_WORK`, any import
    of `interp.core.backends` or of a `RENDERING` module (lazy ones inside functions too)."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules, names = [node.module], [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            modules, names = [alias.name for alias in node.names], []
        else:
            continue
        found += [n for n in names if n in MODEL_WORK]
        found += [m for m in modules if m.startswith(("interp.core.backends", *RENDERING))]
    return found


def test_analysis_loads_no_model_and_renders_nothing():
    """`interp.analysis` reads stored runs: it loads no model and runs no pass (those are `interp.core` and
    `interp.run`, glued in `interp.api`) and renders nothing (`interp.report`)."""
    found = {p.name: _model_work_or_rendering(p.read_text()) for p in (REPO / "interp" / "analysis").glob("*.py")}
    assert not {name: hits for name, hits in found.items() if hits}
    assert _model_work_or_rendering("def f():\n    from interp.core.models import load_model, own_model\n") == [
        "load_model"
    ]
    assert _model_work_or_rendering("import plotly.graph_objects as go\n") == ["plotly.graph_objects"]


# ---- docs/layout.md is the map of the code ---------------------------------------------------------------------

LAYOUT = REPO / "docs" / "layout.md"


def _layout_rooms() -> dict[str, list[str]]:
    """room path -> the modules its row names (the Rooms table of docs/layout.md)."""
    rooms = {}
    section = LAYOUT.read_text().split("\n## Rooms\n", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        match = re.match(r"^\| `([^`]+)`[^|]*\|[^|]*\|(.*)\|\s*$", line)
        if match:
            rooms[match.group(1)] = re.findall(r"`([\w.]+\.py)`", match.group(2))
    return rooms


def test_layout_names_every_layer_as_the_contract_does():
    import tomllib

    contract = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
    assert re.findall(r"^\d+\. `([^`]+)`", LAYOUT.read_text(), flags=re.M) == contract


def test_layout_names_every_room_and_every_room_exists():
    """Every package, subpackage and top-level module of interp (and hooks/) is a room of docs/layout.md, every
    room it names exists, and every module a room lists is in it; the modules a room holds are all listed."""
    rooms = _layout_rooms()
    packages = {
        f"{p.parent.relative_to(REPO)}/" for p in (REPO / "interp").rglob("__init__.py") if p.parent != REPO / "interp"
    }
    expected = (
        packages
        | {f"interp/{p.name}" for p in (REPO / "interp").glob("*.py") if p.name != "__init__.py"}
        | {"hooks/", "interp/builtin/"}
    )
    assert set(rooms) == expected, (sorted(set(rooms) - expected), sorted(expected - set(rooms)))
    for room, listed in rooms.items():
        if not room.endswith("/"):
            continue
        present = {p.name for p in (REPO / room).glob("*.py") if p.name not in ("__init__.py", "__main__.py")}
        if room != "interp/builtin/":
            assert set(listed) == present, (room, sorted(set(listed) - present), sorted(present - set(listed)))


def test_the_layout_check_can_fail(tmp_path, monkeypatch):
    """A room that does not exist, or a package the page leaves out, is found."""
    page = tmp_path / "layout.md"
    page.write_text(LAYOUT.read_text().replace("| `interp/results/`", "| `interp/outcomes/`"))
    monkeypatch.setattr(sys.modules[__name__], "LAYOUT", page)
    rooms = _layout_rooms()
    assert "interp/outcomes/" in rooms and "interp/results/" not in rooms
    with pytest.raises(AssertionError):
        test_layout_names_every_room_and_every_room_exists()
