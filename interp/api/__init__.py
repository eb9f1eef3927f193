"""The notebook API: one `Judge` object and a few functions over runs, each returning typed objects.

- `Judge` (`interp.api.judge`): load or wrap a judge model, judge pairs given as strings, read P(A), P(B)
  and span attention as tensors, intervene in a `with` block;
- `dbg`, `load_run`, `figure7`, `head_map`, `sweep` (`interp.api.runs`): a finished run as a `RunResult`,
  its figures as matplotlib Figures, a sweep as a pandas DataFrame;
- `intervene` (`interp.api.interventions`): the causal test as an `InterventionResult`.

Import them from `interp` (`interp.Judge`, `interp.figure7`, ...). The package sits beside `interp.cli` at
the top of the layers: both are front ends over the same code below.
"""
