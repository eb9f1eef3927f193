"""interp: why do LLM judges prefer their own answers? Measure (DBG), look inside (attention), intervene.

In a notebook:

    import interp
    judge = interp.Judge.load("smollm2-135m-judge")
    v = judge("What is 2 + 2?", "4", "5", authors=("smollm2-135m-instruct", "gemma3-270m"))
    v.p_a, v.mass                        # P(A); attention [layer, head, span]
    with judge.applying(target="self", alpha=0.0):
        judge("What is 2 + 2?", "4", "5", authors=("smollm2-135m-instruct", "gemma3-270m"))
    interp.figure7("runs/demo")          # a matplotlib Figure
    interp.sweep("experiments/configs/ablation_sweep.toml")   # a pandas DataFrame

The package is layered; a module imports only from its own layer or the layers below it:

- `interp.api` | `interp.cli`  the notebook API (`Judge`, run functions) and the `interp` command line
- `interp.studies`      studies on the causal test: explain, sweeps, steering, validation, restyle, the demo
- `interp.causal`       the causal test: a run re-judged under a spec, the judge against control judges
- `interp.locate`       heads ranked by their part in P(own), residual-stream directions
- `interp.engine`       re-judging a run under variants keyed by a hash; where the tasks run (local, Ray)
- `interp.organisms`    judges with a known answer: their data, training and evaluation
- `interp.report`       figures and report sections
- `interp.analysis`     views of a finished run: stored span attention, Figure 7, heads, metric lenses
- `interp.run`          a DBG run: its directory, records, responses, judging, gold, summary, pipeline
- `interp.hooks`        interventions as data and the one mechanism that applies them (uses `interp.core`)
- `interp.core`         models, prompts, token spans, backends, span attention, judging one batch
- `interp.results`      results as typed objects (with `schema_version`) and the one codec that reads them
- base                  `interp.metrics` (pure functions), `interp.data`, `interp.config`, `interp.storage`,
                        `interp.errors`

`import interp` loads nothing heavy: each name below is imported from its module on first use.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any


class HooksFolder(importlib.abc.MetaPathFinder):
    """Finds `interp.hooks` in a source checkout: the repository's hooks/ folder, beside interp/. A wheel
    installs that folder inside the package (pyproject's package-dir), where the ordinary finder, asked
    first, finds it; this one answers only when it did not."""

    def find_spec(self, fullname: str, path=None, target=None):
        """The spec of `interp.hooks` from the repository's hooks/ folder; None for any other module."""
        if fullname != "interp.hooks":
            return None
        init = Path(__file__).resolve().parent.parent / "hooks" / "__init__.py"
        if not init.is_file():
            return None
        return importlib.util.spec_from_file_location(fullname, init, submodule_search_locations=[str(init.parent)])


if not any(type(finder).__name__ == "HooksFolder" for finder in sys.meta_path):
    # right after the path finder (an installed package's interp/hooks wins), before any other install's finder
    _after = next(
        (i + 1 for i, finder in enumerate(sys.meta_path) if finder is importlib.machinery.PathFinder),
        len(sys.meta_path),
    )
    sys.meta_path.insert(_after, HooksFolder())

# name -> the module that defines it (imported on first use)
_EXPORTS: dict[str, str] = {
    # the notebook API
    "Judge": "interp.api.judge",
    "Verdict": "interp.api.judge",
    "Verdicts": "interp.api.judge",
    "RunResult": "interp.api.runs",
    "InterventionResult": "interp.api.interventions",
    "JudgeIntervention": "interp.api.interventions",
    "Effect": "interp.api.interventions",
    "dbg": "interp.api.runs",
    "load_run": "interp.api.runs",
    "figure7": "interp.api.runs",
    "head_map": "interp.api.runs",
    "localize": "interp.api.runs",
    "intervene": "interp.api.interventions",
    "sweep": "interp.api.runs",
    "explain": "interp.api.explain",
    "routes": "interp.api.explain",
    "compare": "interp.api.compare",
    "compare_figure": "interp.api.compare",
    "figure7_across_runs": "interp.api.compare",
    "restyle": "interp.api.restyle",
    "RunComparison": "interp.analysis.compare",
    "AttentionIntervention": "interp.hooks.spec",
    # the layers below, for scripts that compose them
    "RunConfig": "interp.config",
    "BACKENDS": "interp.core.backends",
    "Backend": "interp.core.backends",
    "Batch": "interp.core.backends",
    "left_pad": "interp.core.backends",
    "make_backend": "interp.core.backends",
    "Judgment": "interp.core.judge",
    "inspect_judgment": "interp.core.judge",
    "judge_batch": "interp.core.judge",
    "label_tokens": "interp.core.judge",
    "LoadedModel": "interp.core.models",
    "load_model": "interp.core.models",
    "own_model": "interp.core.models",
    "wrap_model": "interp.core.models",
    "TokenizedPrompt": "interp.core.spans",
    "build_judge_prompt": "interp.core.spans",
    "tokenized_judge_prompt": "interp.core.spans",
    "Item": "interp.data",
    "builtin_items": "interp.data",
    "load_items": "interp.data",
    "InterpError": "interp.errors",
    "Run": "interp.run.store",
    "RunDir": "interp.run.store",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use (PEP 562), then keep it here."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'interp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from interp.analysis.compare import RunComparison
    from interp.api.compare import compare, compare_figure, figure7_across_runs
    from interp.api.explain import explain, routes
    from interp.api.interventions import Effect, InterventionResult, JudgeIntervention, intervene
    from interp.api.judge import Judge, Verdict, Verdicts
    from interp.api.restyle import restyle
    from interp.api.runs import RunResult, dbg, figure7, head_map, load_run, sweep
    from interp.config import RunConfig
    from interp.core.backends import BACKENDS, Backend, Batch, left_pad, make_backend
    from interp.core.judge import Judgment, inspect_judgment, judge_batch, label_tokens
    from interp.core.models import LoadedModel, load_model, own_model, wrap_model
    from interp.core.spans import TokenizedPrompt, build_judge_prompt, tokenized_judge_prompt
    from interp.data import Item, builtin_items, load_items
    from interp.errors import InterpError
    from interp.hooks.spec import AttentionIntervention
    from interp.run.store import Run, RunDir
