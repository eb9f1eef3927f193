"""Every public function `import interp` exports, and every public method of `Judge`, opens its docstring with an
example that runs: doctest, on a tiny random Llama (`model`, `judge`) and a tiny run it judged (`run_dir`). A line
that loads a packaged model, or re-judges a whole run, is marked `# doctest: +SKIP`; the lines around it run."""

from __future__ import annotations

import doctest
import inspect
import io
from pathlib import Path

import pytest

import interp
from interp.api.judge import Judge
from tests.helpers.runs import ITEMS, small_run_config


def public_functions() -> dict[str, object]:
    """name -> function: the functions among `interp`'s exports, and Judge's public methods (and its call)."""
    found = {
        name: getattr(interp, name) for name in sorted(interp._EXPORTS) if inspect.isfunction(getattr(interp, name))
    }
    for name, member in vars(Judge).items():
        function = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
        if (not name.startswith("_") or name == "__call__") and inspect.isfunction(function):
            found[f"Judge.{name}"] = function
    return found


FUNCTIONS = public_functions()


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_docstring_opens_with_an_example(name):
    """The summary line, then the example: a reader sees the call before its arguments."""
    paragraphs = inspect.cleandoc(FUNCTIONS[name].__doc__ or "").split("\n\n")
    assert len(paragraphs) > 1 and paragraphs[1].startswith(">>> "), f"{name}: no example after the summary"


@pytest.fixture(scope="module")
def namespace(tmp_path_factory, tiny_llama_dir) -> dict:
    """What the examples may name beside `interp`: `model`, `judge` (the tiny Llama) and `run_dir` (its run). The
    model is this module's own: an example that wraps it (nnsight) changes no other test's model."""
    from interp.core.models import load_model

    folder = tmp_path_factory.mktemp("examples-run")
    config = small_run_config(folder, str(tiny_llama_dir), ITEMS[:2], n_boot=20)
    run_dir = interp.dbg(config, folder / "run", progress=False).path
    model = load_model(str(tiny_llama_dir))
    return {"interp": interp, "model": model, "judge": Judge.wrap(model), "run_dir": run_dir}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_example_runs(name, namespace, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # an example that writes writes here
    (test,) = doctest.DocTestFinder(recurse=False).find(FUNCTIONS[name], name, globs=dict(namespace))
    assert any(not example.options.get(doctest.SKIP) for example in test.examples), f"{name}: every line skipped"
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test, out=out.write)
    assert result.failed == 0, out.getvalue()


def test_the_example_check_can_fail(namespace):
    def documented():
        """A function.

        >>> 1 + 1
        3
        """

    (test,) = doctest.DocTestFinder(recurse=False).find(documented, "documented", globs=dict(namespace))
    assert doctest.DocTestRunner().run(test, out=lambda _: None).failed == 1
    assert Path(namespace["run_dir"], "summary.json").is_file()
