"""Three ways to run the same HF model object, behind one interface (`protocol.Backend`).

`forward(batch, on_pattern=..., score_bias=...)` returns the final-position logits and calls
`on_pattern(layer, pattern)` once per layer with that layer's post-softmax pattern
(`Float[Tensor, "batch head query key"]`), so callers reduce it at once and never keep it. `score_bias`
maps a layer to an additive pre-softmax bias (`Float[Tensor, "batch head|1 query key"]`), the one
mechanism every intervention compiles to. `resid_edit` (optional) maps a layer to a function applied to that
layer's residual-stream output (`Float[Tensor, "batch pos d_model"]` -> same shape; the decoder layer's
output in hf/nnsight, `blocks.{l}.hook_resid_post` in transformer_lens): activation steering.

- `hf`: plain transformers; every layer runs `span_rows` attention (SDPA plus the exact pattern rows a hook
  reads, or the family's eager attention in the reference mode), biases added to its mask; patterns from
  forward hooks on each `self_attn` module.
- `transformer_lens`: TransformerBridge booted on the same HF object; `blocks.{l}.attn.hook_pattern` and
  `blocks.{l}.attn.hook_attn_scores`.
- `nnsight`: LanguageModel wrapping the same object; `self_attn.output[1]`; attention as for `hf`.
"""

from __future__ import annotations

from interp.config import backend_placement_problem
from interp.core.backends.protocol import (
    BACKENDS,
    AttnImplementation,
    Backend,
    BackendName,
    Batch,
    ColumnAwareHook,
    EditHooks,
    Edits,
    PatternHook,
    ResidEdit,
    ScoreBias,
    SiteEdit,
    edit_hooks,
    left_pad,
)
from interp.core.models import LoadedModel
from interp.errors import InterpError


def is_backend(obj) -> bool:
    """Whether `obj` is a backend (it holds a `LoadedModel` and runs `forward`): the one test, wherever a
    backend, a `LoadedModel` or a plain HF model is accepted."""
    return isinstance(getattr(obj, "model", None), LoadedModel) and callable(getattr(obj, "forward", None))


__all__ = [
    "BACKENDS",
    "AttnImplementation",
    "Backend",
    "BackendName",
    "Batch",
    "ColumnAwareHook",
    "EditHooks",
    "Edits",
    "PatternHook",
    "ResidEdit",
    "ScoreBias",
    "SiteEdit",
    "check_backend_fits",
    "edit_hooks",
    "is_backend",
    "left_pad",
    "make_backend",
]


def check_backend_fits(model: LoadedModel, backend: str, *, probe: bool = True) -> None:
    """What `backend`'s forward pass needs of the model, checked before any model work: hf and nnsight hook
    every decoder layer's `self_attn` module (a model without them, e.g. GPT-2, is one line naming it), and
    those modules must run the hooked attention function: a probe forward under a mask must change the
    attention rows and the output (`probe.check_intervention_takes_effect`; XGLM's, for one, do not).
    `probe=False`: verdicts only (a gold judge), where neither masks nor span attention are read."""
    if backend in ("hf", "nnsight"):
        from interp.core.backends.hf import HFBackend
        from interp.core.backends.layers import attention_modules
        from interp.core.backends.probe import check_intervention_takes_effect

        try:
            attention_modules(model.hf_model)
        except InterpError as exc:
            raise InterpError(f"model {model.name} cannot judge with the {backend} backend: {exc}") from None
        if probe:
            check_intervention_takes_effect(HFBackend(model))  # nnsight runs the same attention function


def make_backend(
    model: LoadedModel, backend: str = "hf", *, attn_implementation: AttnImplementation = "sdpa"
) -> Backend:
    """Wrap the model in a backend. `attn_implementation` (hf and nnsight): "sdpa" runs each layer's fast kernel and
    computes only the pattern rows a hook reads; "eager" computes every layer's whole pattern (the reference).
    TransformerLens computes its own patterns (`hook_pattern`) and ignores it.

    >>> backend = interp.make_backend(model, "hf")
    >>> backend.name, backend.model is model
    ('hf', True)
    """
    if attn_implementation not in ("sdpa", "eager"):
        raise InterpError(f"unknown attn_implementation {attn_implementation!r}; use 'sdpa' or 'eager'")
    if backend == "hf":
        from interp.core.backends.hf import HFBackend

        return HFBackend(model, attn_implementation=attn_implementation)
    if backend == "transformer_lens":
        from interp.core.backends.transformer_lens import TransformerLensBackend

        problem = backend_placement_problem(backend, model.placement.device_map)
        if problem:
            raise InterpError(problem)

        return TransformerLensBackend.boot(model)
    if backend == "nnsight":
        from interp.core.backends.nnsight import NNsightBackend

        return NNsightBackend.boot(model, attn_implementation)
    raise InterpError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
