"""Interventions as data, and the one mechanism that applies them.

- `interp.hooks.spec`: `AttentionIntervention`, a frozen spec (TOML/JSON) of where to dampen or mask attention;
- `interp.hooks.compile`: the spec compiled to additive pre-softmax score biases (`bias_builder`, `compile_bias`);
- `interp.hooks.context`: `dampen(...)` (alpha in [0, 1]) and `emphasise(...)` (alpha > 1), a spec applied as a
  context manager that restores the model on exit;
- `interp.hooks.emphasis`: PASTA-style emphasis of the other response (a spec with alpha > 1);
- `interp.hooks.steering`: residual-stream steering along a direction (`steer`, `ResidualSteering`).

`interp.hooks` (this folder, installed inside the `interp` package) builds on `interp.core` only; `interp.causal` and
`interp.cli` use it.
"""

from interp.hooks.compile import bias_builder, compile_bias, resolve_target
from interp.hooks.context import dampen, emphasise
from interp.hooks.emphasis import emphasis_spec, pasta_spec
from interp.hooks.spec import AttentionIntervention, as_spec, load_spec
from interp.hooks.steering import ResidualSteering, steer

__all__ = [
    "AttentionIntervention",
    "ResidualSteering",
    "as_spec",
    "bias_builder",
    "compile_bias",
    "dampen",
    "emphasise",
    "emphasis_spec",
    "load_spec",
    "pasta_spec",
    "resolve_target",
    "steer",
]
