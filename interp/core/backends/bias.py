"""The biased eager attention function: per-layer pre-softmax biases added to each layer's attention scores.

Registered with transformers' `AttentionInterface` as `interp_eager`: the model family's own eager
attention (found in the module that defines the attention class), with the layer's bias added to the
additive mask. Used by the hf and nnsight backends.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Iterator

import torch

from interp.core.backends.layers import attention_modules
from interp.core.backends.protocol import ScoreBias

_BIAS_ATTR = "_interp_score_bias"
_IMPLEMENTATION = "interp_eager"


def _biased_eager(module, query, key, value, attention_mask, **kwargs):
    """The model family's own eager attention, with this layer's bias added to the additive mask."""
    eager = getattr(sys.modules[type(module).__module__], "eager_attention_forward")
    bias = getattr(module, _BIAS_ATTR, None)
    if bias is not None:
        attention_mask = bias if attention_mask is None else attention_mask[..., : bias.shape[-1]] + bias
    return eager(module, query, key, value, attention_mask, **kwargs)


def _register_biased_eager() -> None:
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import eager_mask

    AttentionInterface.register(_IMPLEMENTATION, _biased_eager)
    AttentionMaskInterface.register(_IMPLEMENTATION, eager_mask)


@contextlib.contextmanager
def biased_attention(hf_model: torch.nn.Module, score_bias: ScoreBias | None) -> Iterator[None]:
    """Add per-layer pre-softmax biases for the duration of the block; always restores the model."""
    if not score_bias:
        yield
        return
    _register_biased_eager()
    modules = attention_modules(hf_model)
    config = hf_model.config
    previous = config._attn_implementation
    try:
        for layer, bias in score_bias.items():
            setattr(modules[layer][1], _BIAS_ATTR, bias)
        config._attn_implementation = _IMPLEMENTATION
        yield
    finally:
        config._attn_implementation = previous
        for _, module in modules:
            if hasattr(module, _BIAS_ATTR):
                delattr(module, _BIAS_ATTR)

