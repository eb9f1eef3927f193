"""Does an intervention take effect on this model? One probe forward with a mask, checked before any work.

The hooks replace the attention function that each decoder layer's `self_attn` module calls through
transformers' attention interface (`span_rows`), or, in TransformerLens, the scores hook. A model whose
`self_attn` modules compute attention their own way (XGLM, MVP, TrOCR, ... in transformers 5) never calls it:
every mask is then a silent no-op, and the span attention would be whatever the module returns (its own
weights, or nothing). A model whose config counts other layers or heads than its attention modules have (a
BART-family decoder whose config's layer count is the encoder's) would be indexed wrongly.

`check_intervention_takes_effect(backend)` runs a few tokens twice, plain and with one key masked at every
layer, and requires: every layer's pattern reaches the pattern hook with the config's heads; the masked key's
weight is 0 in the masked pass where it was not in the plain one; and the output changed. Anything else is
one line naming the architecture. The verdict is kept in the model's `meta`, so it runs once per model and
backend.
"""

from __future__ import annotations

import torch
from torch import Tensor

from interp.core.backends.layers import attention_modules
from interp.core.backends.protocol import Batch, Edits, left_pad
from interp.core.models import LoadedModel, check_finite_output
from interp.errors import InterpError

PROBE_TEXT = "Which of the two answers is better, A or B? The first one is."
_VERIFIED = "intervention_verified"  # meta key: the backend names this model passed the probe with


def _architecture(model: LoadedModel) -> str:
    return type(model.hf_model).__name__


def _refuse(model: LoadedModel, why: str) -> InterpError:
    return InterpError(
        f"model {model.name} ({_architecture(model)}) is not supported: {why}; interventions and span attention "
        "need a decoder whose self_attn layers run transformers' attention interface (e.g. Llama, Gemma, Qwen, OPT)"
    )


def _probe_batch(model: LoadedModel) -> tuple[Batch, int]:
    ids = list(model.tokenizer.encode(PROBE_TEXT))[:16]
    if len(ids) < 4:
        raise _refuse(model, f"its tokenizer gives only {len(ids)} tokens for a probe sentence")
    batch, _ = left_pad([ids], model.tokenizer.pad_token_id or 0)
    return batch, len(ids)


def _patterns(backend, batch: Batch, bias: dict[int, Tensor] | None) -> tuple[Tensor, dict[int, Tensor | None]]:
    seen: dict[int, Tensor | None] = {}

    def keep(layer: int, pattern) -> None:
        seen[layer] = pattern.detach().float().cpu() if isinstance(pattern, Tensor) else None

    logits = backend.forward(batch, edits=Edits(score_bias=bias or {}), on_pattern=keep)
    return logits, seen


def check_intervention_takes_effect(backend) -> None:
    """Refuse, in one line naming the architecture, a model on which a mask would not act (see module doc)."""
    model: LoadedModel = backend.model
    if backend.name in model.meta.get(_VERIFIED, ()):
        return
    if backend.name != "transformer_lens":  # hf and nnsight hook the `self_attn` modules, one per layer
        found = len(attention_modules(model.hf_model))
        if found != model.n_layers:
            raise _refuse(model, f"its config says {model.n_layers} layers but it has {found} self_attn modules")
    batch, n = _probe_batch(model)
    key = n // 2  # a middle key, seen by the queries after it
    dtype = next(model.hf_model.parameters()).dtype
    bias = torch.zeros(1, 1, n, n, dtype=dtype)
    bias[0, 0, key + 1 :, key] = float("-inf")
    try:
        plain_logits, plain = _patterns(backend, batch, None)
        masked_logits, masked = _patterns(backend, batch, {layer: bias for layer in range(model.n_layers)})
    except (RuntimeError, ValueError, IndexError, AttributeError, TypeError, KeyError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise _refuse(model, f"a probe forward under a mask failed ({type(exc).__name__}: {first})") from None
    if not bool(torch.isfinite(plain_logits).all()):
        check_finite_output(model)  # NaN weights would fail every check below for another reason: say the real one
    layers = sorted(plain)
    if layers != list(range(model.n_layers)):
        raise _refuse(model, f"its config says {model.n_layers} layers but attention patterns came from {len(layers)}")
    if any(plain[layer] is None or masked.get(layer) is None for layer in layers):
        raise _refuse(
            model,
            "its attention layers return no attention pattern to the hook (they bypass the hooked attention function)",
        )
    shapes = {tuple(plain[layer].shape[:2]) for layer in layers}
    if shapes != {(1, model.n_heads)}:
        raise _refuse(
            model,
            f"its config says {model.n_heads} heads but its attention patterns have {sorted(s[1] for s in shapes)}",
        )
    before = torch.stack([plain[layer][..., -(n - key - 1) :, key] for layer in layers])
    after = torch.stack([masked[layer][..., -(n - key - 1) :, key] for layer in layers])
    rows_masked = bool((before > 0).any()) and not bool((after.abs() > 1e-6).any())
    output_moved = not torch.equal(plain_logits, masked_logits)
    if not (rows_masked and output_moved):
        what = {
            (False, False): "a mask changes neither its attention rows nor its output",
            (False, True): "a mask does not reach the attention rows its layers report",
            (True, False): "a mask changes its attention rows but not its output",
        }[rows_masked, output_moved]
        raise _refuse(model, f"{what} (its layers do not run the hooked attention function)")
    model.meta[_VERIFIED] = (*model.meta.get(_VERIFIED, ()), backend.name)
