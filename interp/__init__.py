"""interp: why do LLM judges prefer their own answers? Measure (DBG), look inside (attention), intervene.

The package is layered; a module imports only from its own layer or the layers below it:

- `interp.cli`          the `interp` command line (thin commands over the API)
- `interp.experiments`  the causal-test engine, interventions with controls, sweeps, steering, the demo
- `interp.report`       figures and report sections
- `interp.analysis`     views of a finished run: stored span attention, Figure 7, heads, metric lenses
- `interp.run`          a DBG run: its directory, records, responses, judging, gold, summary, pipeline
- `hooks`               interventions as data and the one mechanism that applies them (uses `interp.core`)
- `interp.core`         models, prompts, token spans, backends, span attention, judging one batch
- base                  `interp.metrics` (pure functions), `interp.data`, `interp.config`, `interp.storage`,
                        `interp.errors`

This module re-exports what notebooks use most; everything else is imported from its module.
"""

from interp.config import RunConfig
from interp.core.backends import BACKENDS, Backend, Batch, left_pad, make_backend
from interp.core.judge import Judgment, inspect_judgment, judge_batch, label_tokens
from interp.core.models import LoadedModel, load_model, wrap_model
from interp.core.spans import TokenizedPrompt, build_judge_prompt, tokenized_judge_prompt
from interp.data import Item, builtin_items, load_items
from interp.errors import InterpError
from interp.run.pipeline import run_dbg
from interp.run.store import Run, RunDir, load_run

__all__ = [
    "BACKENDS", "Backend", "Batch", "InterpError", "Item", "Judgment", "LoadedModel", "Run", "RunConfig", "RunDir",
    "TokenizedPrompt", "build_judge_prompt", "builtin_items", "inspect_judgment", "judge_batch", "label_tokens",
    "left_pad", "load_items", "load_model", "load_run", "make_backend", "run_dbg", "tokenized_judge_prompt", "wrap_model",
]  # fmt: skip
