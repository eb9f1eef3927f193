"""Where a decoder's attention modules and layers are, and how to edit a layer's output."""

from __future__ import annotations

import copy
from typing import Callable

import torch
from torch import Tensor

from interp.core.placement import to_host
from interp.errors import InterpError


def attention_modules(hf_model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """(path, module) of every decoder self-attention module, in layer order."""
    found = [(name, module) for name, module in hf_model.named_modules() if name.endswith("self_attn")]
    if not found:
        raise InterpError(f"{type(hf_model).__name__}: found no '*.self_attn' attention modules to hook")
    return found


def decoder_layer_paths(hf_model: torch.nn.Module) -> list[str]:
    """Path of every decoder layer (the parent of its `self_attn` module), in layer order."""
    return [path.rsplit(".", 1)[0] for path, _ in attention_modules(hf_model)]


def edit_layer_output(edit: Callable[[Tensor], Tensor], output):
    """Apply `edit` to a decoder layer's hidden states, whether the layer returns a tensor or a tuple."""
    if isinstance(output, tuple):
        return (edit(output[0]),) + tuple(output[1:])
    return edit(output)


def final_logits(logits: Tensor) -> Tensor:
    """The last position's logits, float32, on the CPU (one transfer per batch)."""
    return to_host(logits[:, -1, :]).float()


def shared_weight_copy(module: torch.nn.Module) -> torch.nn.Module:
    """A structural copy of `module` that shares every parameter and buffer (no extra weight memory).

    Wrappers that install their own components or `forward` (TransformerBridge, nnsight) are booted on
    such a copy, so the user's model object stays exactly as it was.
    """
    memo = {id(t): t for t in list(module.parameters()) + list(module.buffers())}
    return copy.deepcopy(module, memo)
