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


# ---- rooms named for what they hold ---------------------------------------------------------------------------

# experiments/' folders that may share a name with a package of interp/: the organisms' recipes, which the checks
# (and `interp organism train`) name by path.
EXPERIMENT_FOLDERS_NAMED_LIKE_A_PACKAGE = {"organisms"}


def _named_as_its_folder(root: Path) -> list[str]:
    """Modules whose name is their folder's (`causal/causal.py`): a name that says nothing the path does not."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if p.stem == p.parent.name)


def test_no_module_is_named_as_its_folder(tmp_path):
    assert not [*_named_as_its_folder(REPO / "interp"), *_named_as_its_folder(REPO / "hooks")]
    (tmp_path / "causal").mkdir()
    (tmp_path / "causal" / "causal.py").write_text("")
    assert _named_as_its_folder(tmp_path) == ["causal/causal.py"]


def _packages_of_interp() -> set[str]:
    """The name of every package under interp/ (subpackages too) and of interp.hooks."""
    return {p.parent.name for p in (REPO / "interp").rglob("__init__.py") if p.parent != REPO / "interp"} | {"hooks"}


def test_no_folder_of_experiments_is_named_like_a_package():
    """experiments/ holds configs, benches and research records, each folder named for its role; a folder named
    like a package of interp/ (`experiments/causal/` beside `interp/causal/`) reads as part of the product."""
    folders = {p.name for p in (REPO / "experiments").rglob("*") if p.is_dir() and p.name != "__pycache__"}
    clashes = (folders & _packages_of_interp()) - EXPERIMENT_FOLDERS_NAMED_LIKE_A_PACKAGE
    assert not clashes, sorted(clashes)
    assert {"causal", "studies", "engine"} <= _packages_of_interp()  # the check can fail: those names are taken


# The role folders of experiments/: run, sweep and intervention configs; the organisms' recipes (and their variants);
# the research records (plan.md and the one-off analyses it names). The benches stay at the top level, as
# `experiments/bench_<topic>.py`, the path the project guide gives them.
EXPERIMENT_ROLE_FOLDERS = {"configs", "organisms", "records"}


def _strays_of_experiments(root: Path) -> list[str]:
    """What experiments/' top level holds beside `bench_*.py` scripts, a README or `__init__.py`, and the role
    folders (Python's `__pycache__` aside: importing a bench writes one)."""
    strays = []
    for path in root.iterdir():
        if path.is_dir():
            fits = path.name in EXPERIMENT_ROLE_FOLDERS | {"__pycache__"}
        else:
            fits = re.fullmatch(r"bench_[a-z0-9_]+\.py", path.name) or path.name in {"README.md", "__init__.py"}
        if not fits:
            strays.append(path.name)
    return sorted(strays)


def test_experiments_top_level_holds_only_benches_and_role_folders(tmp_path):
    """A config, a record or a figure script left at experiments/' top level hides among the benches; each kind
    has its folder, so a reader finds every config in one place and every bench by its path."""
    assert not _strays_of_experiments(REPO / "experiments")
    assert EXPERIMENT_ROLE_FOLDERS <= {p.name for p in (REPO / "experiments").iterdir()}  # no role listed in vain
    (tmp_path / "configs").mkdir()
    (tmp_path / "figures").mkdir()
    for name in ("bench_causal.py", "ablation_sweep.toml", "mechanism_figures.py"):
        (tmp_path / name).write_text("")
    assert _strays_of_experiments(tmp_path) == ["ablation_sweep.toml", "figures", "mechanism_figures.py"]


def test_no_subpackage_or_module_of_interp_is_named_as_an_exported_name():
    """`interp.localize` is a function; a subpackage of that name would replace it on the package the moment it
    is imported (Python sets the submodule as an attribute of its parent)."""
    import interp

    own = {p.parent.name for p in (REPO / "interp").glob("*/__init__.py")} | {"hooks"}
    own |= {p.stem for p in (REPO / "interp").glob("*.py") if p.name != "__init__.py"}
    assert not own & set(interp.__all__), sorted(own & set(interp.__all__))


def _imports_of_experiments(tree: ast.AST, scripts: set[str]) -> list[str]:
    """Absolute imports of the experiments/ folder, or of one of its scripts by its bare name (a script that put
    experiments/ on sys.path), lazy ones inside functions too."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [f"line {node.lineno}: {n}" for n in names if n.split(".")[0] in {"experiments", *scripts}]
    return found


def test_interp_imports_nothing_from_experiments():
    """The product never reads a research record, a bench or a recipe's code: experiments/ builds on interp/,
    never the other way."""
    scripts = {p.stem for p in (REPO / "experiments").rglob("*.py")}
    found = {
        path.relative_to(REPO).as_posix(): hits
        for path in modules()
        if (hits := _imports_of_experiments(ast.parse(path.read_text()), scripts))
    }
    assert not found, found
    lazy = "def f():\n    from experiments.records import null_gap\n    import mechanism_figures\n"
    assert len(_imports_of_experiments(ast.parse(lazy), {"mechanism_figures"})) == 2
    assert not _imports_of_experiments(ast.parse("from interp.cli import experiments\n"), scripts)


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


# ---- functions that fit on a screen ------------------------------------------------------------------------------

MAX_BODY_LINES = 80  # a function's statements, its signature and docstring aside: one screen
MAX_PARAMETERS = 8  # self and cls aside; *args and **kwargs count one each

# A shrinking list, (path, qualified name): functions still over a limit whose files (or whose callers' files) are
# being rewritten for typed results and one intervention family (issue 70, items 1 and 2). Delete an entry once its
# function fits; never add one.
LONG_ALLOWED: set[tuple[str, str]] = set()
MANY_PARAMETERS_ALLOWED: set[tuple[str, str]] = set()


def _exported() -> set[tuple[str, str]]:
    """(path, name) of every function `import interp` and `import interp.hooks` export (their `__all__`): the
    public API, whose keywords are its interface (`interp.hooks.dampen(model, "self", alpha=0.5)`, docs/runs.md)."""
    import interp
    import interp.hooks

    exported = set()
    for name, module in {**interp._EXPORTS, **interp.hooks._EXPORTS}.items():
        parts = module.split(".")
        root = REPO / "hooks" if parts[:2] == ["interp", "hooks"] else REPO / "interp"
        rest = parts[2:] if parts[:2] == ["interp", "hooks"] else parts[1:]
        path = root.joinpath(*rest)
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        exported.add((path.relative_to(REPO).as_posix(), name))
    return exported


def _functions(path: Path):
    """(qualified name, node) of every function and method defined in the module."""

    def walk(node, prefix: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield prefix + child.name, child
                yield from walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)

    yield from walk(ast.parse(path.read_text()), "")


def body_lines(node: ast.FunctionDef) -> int:
    """Lines from the first statement after the docstring to the function's end."""
    body = node.body
    first = body[0]
    if len(body) > 1 and isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        body = body[1:]
    return node.end_lineno - body[0].lineno + 1


def parameters(node: ast.FunctionDef) -> int:
    """Parameters, self and cls aside; *args and **kwargs count one each."""
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (args.vararg is not None) + (args.kwarg is not None)


def _public_api(rel: str, qualname: str, exported: set[tuple[str, str]]) -> bool:
    return (
        rel.startswith("interp/cli/")
        or (rel, qualname) in exported
        or (rel == "interp/api/judge.py" and qualname.startswith("Judge.") and qualname.count(".") == 1)
    )


def test_no_function_is_longer_than_a_screen():
    found = {
        (path.relative_to(REPO).as_posix(), name): body_lines(node)
        for path in modules()
        for name, node in _functions(path)
        if body_lines(node) > MAX_BODY_LINES
    }
    assert set(found) <= LONG_ALLOWED, {key: n for key, n in found.items() if key not in LONG_ALLOWED}
    assert LONG_ALLOWED <= set(found), f"fits now, delete from LONG_ALLOWED: {sorted(LONG_ALLOWED - set(found))}"


def test_no_internal_function_takes_more_than_eight_parameters():
    """The command line and the public API (what `import interp` exports, and Judge's methods) take keyword
    options, which are their interface; an internal function that needs more takes an options object."""
    exported = _exported()
    found = {}
    for path in modules():
        rel = path.relative_to(REPO).as_posix()
        for name, node in _functions(path):
            if parameters(node) > MAX_PARAMETERS and not _public_api(rel, name, exported):
                found[(rel, name)] = parameters(node)
    assert set(found) <= MANY_PARAMETERS_ALLOWED, {k: n for k, n in found.items() if k not in MANY_PARAMETERS_ALLOWED}
    stale = sorted(MANY_PARAMETERS_ALLOWED - set(found))
    assert not stale, f"fits now, delete from MANY_PARAMETERS_ALLOWED: {stale}"


def test_the_function_checks_can_fail():
    tree = ast.parse("def f(a, b, c, d, e, f, g, h, i):\n" + "    x = 1\n" * 81)
    (node,) = tree.body
    assert body_lines(node) == 81 and parameters(node) == 9
    method = ast.parse('class C:\n    def m(self, a):\n        """Doc."""\n        return a\n').body[0].body[0]
    assert body_lines(method) == 1 and parameters(method) == 1


# Public functions and classes without a docstring: none now, and the list never grows.
UNDOCUMENTED_ALLOWED: set[tuple[str, str]] = set()


def undocumented(source: str) -> list[str]:
    """The public functions and classes at the top level of a module's source that have no docstring."""
    return [
        node.name
        for node in ast.parse(source).body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and not node.name.startswith("_")
        and not ast.get_docstring(node)
    ]


def test_every_public_definition_has_a_docstring():
    """Every public function and class of interp/ and hooks/ says what it is or does: help(), an editor and the
    API pages show that line."""
    found = {(path.relative_to(REPO).as_posix(), name) for path in modules() for name in undocumented(path.read_text())}
    assert found <= UNDOCUMENTED_ALLOWED, sorted(found - UNDOCUMENTED_ALLOWED)
    stale = sorted(UNDOCUMENTED_ALLOWED - found)
    assert not stale, f"documented now, delete from UNDOCUMENTED_ALLOWED: {stale}"


def test_the_docstring_check_can_fail(monkeypatch):
    source = "def f():\n    return 1\n\n\nclass C:\n    x = 1\n\n\n"
    source += 'async def g():\n    """Doc."""\n\n\ndef _h():\n    pass\n'
    assert undocumented(source) == ["f", "C"]
    assert undocumented('class C:\n    """Doc."""\n\n    def m(self):\n        pass\n') == []  # methods: not here
    monkeypatch.setattr(sys.modules[__name__], "UNDOCUMENTED_ALLOWED", UNDOCUMENTED_ALLOWED | {("hooks/x.py", "f")})
    with pytest.raises(AssertionError, match="delete from UNDOCUMENTED_ALLOWED"):
        test_every_public_definition_has_a_docstring()


def _private_imports(path: Path) -> list[str]:
    """`from interp... import _name` in the module: a private name used outside the module that defines it."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "interp":
            found += [
                f"{node.module}.{alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            ]
    return found


def test_no_private_name_is_imported_across_modules(tmp_path):
    sources = [*modules(), *sorted((REPO / "experiments").rglob("*.py"))]
    found = {path.relative_to(REPO).as_posix(): names for path in sources if (names := _private_imports(path))}
    assert not found, found
    bad = tmp_path / "bad.py"
    bad.write_text("from interp.api.runs import _secret, public\n")
    assert _private_imports(bad) == ["interp.api.runs._secret"]


# Modules outside hooks/ that still register forward hooks themselves. A shrinking list: delete an entry once its
# hooks go through hooks/ (the organisms' frozen-layer and planted-head training now do: `interp.hooks.handles`).
RAW_HOOKS_ALLOWED: set[str] = set()


def _hooks_a_forward(tree: ast.AST) -> list[str]:
    """What a module does to a module's forward: registers a raw forward (pre-)hook, or assigns `forward`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("register_forward_hook", "register_forward_pre_hook"):
            found.append(f"line {node.lineno}: {node.attr}")
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == "forward":
                found.append(f"line {node.lineno}: .forward =")
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "__setattr__":
            if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "forward":
                found.append(f"line {node.lineno}: setattr(..., 'forward', ...)")
    return found


def test_only_hooks_touches_a_modules_forward():
    """One intervention family: every hook on a module's forward is registered in hooks/ (the named sites and
    their handles), and no module anywhere replaces a `forward`."""
    offenders = {}
    for path in sorted((REPO / "interp").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        found = _hooks_a_forward(ast.parse(path.read_text()))
        if found and rel not in RAW_HOOKS_ALLOWED:
            offenders[rel] = found
    for path in sorted((REPO / "hooks").rglob("*.py")):
        found = [f for f in _hooks_a_forward(ast.parse(path.read_text())) if "forward" in f and "register" not in f]
        if found:
            offenders[path.relative_to(REPO).as_posix()] = found
    assert not offenders, offenders
    for rel in RAW_HOOKS_ALLOWED:  # the list only shrinks
        assert _hooks_a_forward(ast.parse((REPO / rel).read_text())), f"{rel} no longer hooks: drop it from the list"


def test_every_intervention_kind_is_one_family():
    """Every registered kind subclasses the one base, and a variant holds a list of them."""
    import dataclasses

    from interp.engine.variants import Variant
    from interp.hooks.base import Intervention, kind_class, registered_kinds

    assert {"attention", "steering", "zero", "add"} <= set(registered_kinds())
    assert all(issubclass(kind_class(kind), Intervention) for kind in registered_kinds())
    assert [f.name for f in dataclasses.fields(Variant)][:2] == ["name", "interventions"]
