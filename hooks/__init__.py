"""Interventions as data, and the one mechanism that applies them.

- `hooks.spec`: `AttentionIntervention`, a frozen spec (TOML/JSON) of where to dampen or mask attention;
- `hooks.compile`: the spec compiled to additive pre-softmax score biases (`bias_builder`, `compile_bias`);
- `hooks.context`: `dampen(...)`, the same as a context manager that restores the model on exit;
- `hooks.emphasis`: PASTA-style emphasis of the other response (a spec with alpha > 1);
- `hooks.steering`: residual-stream steering along a direction (`steer`, `ResidualSteering`).

`hooks` builds on `interp.core` only; `interp.experiments` and `interp.cli` use it.
"""

from hooks.compile import bias_builder, compile_bias, resolve_target
from hooks.context import dampen
from hooks.emphasis import emphasis_spec, pasta_spec
from hooks.spec import AttentionIntervention, as_spec, load_spec
from hooks.steering import ResidualSteering, steer

__all__ = [
    "AttentionIntervention", "ResidualSteering", "as_spec", "bias_builder", "compile_bias", "dampen", "emphasis_spec", "load_spec",
    "pasta_spec", "resolve_target", "steer",
]  # fmt: skip
