"""Interventions as data, the one family they belong to, and the hook handles that apply them.

- `interp.hooks.base`: `Intervention`, the base of every kind, its registry (`register_kind`, `registered_kinds`)
  and `compile_edits`, a list of interventions compiled into the one edit set a backend's `forward` takes;
- `interp.hooks.sites`: the named hook points (TransformerLens' names, `blocks.{l}.hook_resid_post`, ...) and
  `site_hooks`, forward-hook handles at those points that restore the model on exit;
- `interp.hooks.handles`: hook handles for reads the named sites do not offer;
- `interp.hooks.spec`: `AttentionIntervention` (kind "attention"), a frozen spec (TOML/JSON) of where to dampen or
  mask attention;
- `interp.hooks.compile`: the spec compiled to additive pre-softmax score biases (`bias_builder`, `compile_bias`);
- `interp.hooks.context`: `dampen(...)` (alpha in [0, 1]) and `emphasise(...)` (alpha > 1), a spec applied as a
  context manager that restores the model on exit;
- `interp.hooks.emphasis`: PASTA-style emphasis of the other response (a spec with alpha > 1);
- `interp.hooks.steering`: residual-stream steering along a direction (`steer`, `ResidualSteering`, kind
  "steering");
- `interp.hooks.nodes`, `interp.hooks.node_data`: the node kinds (one per `op`) and the data they read;
- `interp.hooks.verdict`: `VerdictTemperature` (kind "temperature"), the verdict logits scaled by lambda.

`interp.hooks` (this folder, installed inside the `interp` package) builds on `interp.core`, whose backends call
`interp.hooks.sites` for their hook handles; `interp.engine` and `interp.cli` use it. Names are loaded on first use
(`interp.hooks.sites` is imported by the backends while `interp.core` loads).
"""

import importlib

_EXPORTS = {
    "AttentionIntervention": "interp.hooks.spec",
    "Intervention": "interp.hooks.base",
    "ResidualSteering": "interp.hooks.steering",
    "VerdictTemperature": "interp.hooks.verdict",
    "as_spec": "interp.hooks.spec",
    "bias_builder": "interp.hooks.compile",
    "compile_bias": "interp.hooks.compile",
    "compile_edits": "interp.hooks.base",
    "dampen": "interp.hooks.context",
    "emphasise": "interp.hooks.context",
    "emphasis_spec": "interp.hooks.emphasis",
    "load_spec": "interp.hooks.spec",
    "pasta_spec": "interp.hooks.emphasis",
    "register_kind": "interp.hooks.base",
    "registered_kinds": "interp.hooks.base",
    "resolve_target": "interp.hooks.compile",
    "steer": "interp.hooks.steering",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    """A name of `__all__`, imported from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'interp.hooks' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
