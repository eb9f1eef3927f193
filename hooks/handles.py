"""Hook handles for reads the named sites (`interp.hooks.sites`) do not offer, kept here so that nothing outside
`hooks/` registers a forward hook of its own.

`projected_values(hf_model, into)`: each decoder layer's value projection output (`self_attn.v_proj`, one vector
per key/value head side by side, before the heads are repeated for grouped-query attention), kept by layer for the
block. The named site `attn.hook_v` holds the values inside the toolkit's attention function, repeated per query
head; gradient attribution (`interp.locate.heads`) runs the family's eager attention and reads them here.

`stopping_at(module, keep)`: a pass hands the input of one module (a decoder layer) to `keep` and stops there (the
organisms' frozen lower layers, `interp.organisms.frozen`). `edited_outputs([(module, fn)])`: each module's output
becomes `fn(input, output)` (the planted-heads organisms' trained blocks, `interp.organisms.heads`).
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Sequence

import torch
from torch import Tensor

from interp.errors import InterpError
from interp.hooks.sites import decoder_layers


@contextlib.contextmanager
def projected_values(hf_model: torch.nn.Module, into: dict[int, Tensor]) -> Iterator[dict[int, Tensor]]:
    """Keep each layer's value projection output (detached) in `into[layer]` during the block; the handles are
    removed on exit, on errors too."""
    handles = []
    try:
        for index, layer in enumerate(decoder_layers(hf_model)):
            projection = getattr(getattr(layer, "self_attn", None), "v_proj", None)
            if projection is None:
                raise InterpError(f"{type(hf_model).__name__}: layer {index} has no self_attn.v_proj to read values at")
            handles.append(
                projection.register_forward_hook(lambda _m, _a, out, i=index: into.__setitem__(i, out.detach()))
            )
        yield into
    finally:
        for handle in handles:
            handle.remove()


class StopPass(Exception):
    """Raised inside a forward pass by `stopping_at` once the wanted input is kept: the rest of the pass is not run."""


@contextlib.contextmanager
def stopping_at(module: torch.nn.Module, keep: Callable[[Tensor], None]) -> Iterator[None]:
    """During the block, every forward pass that reaches `module` hands its hidden-state input (the first positional
    argument, or `hidden_states`) to `keep` and stops there (`StopPass`: the caller suppresses it). The handle is
    removed on exit, on errors too."""

    def grab(_module, args, kwargs):
        keep(args[0] if args else kwargs["hidden_states"])
        raise StopPass

    handle = module.register_forward_pre_hook(grab, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()


@contextlib.contextmanager
def edited_outputs(edits: Sequence[tuple[torch.nn.Module, Callable[[Tensor, Tensor], Tensor]]]) -> Iterator[None]:
    """During the block, each `(module, fn)`'s output is replaced by `fn(input, output)` (the module's first input):
    a trained delta added to a projection without touching its weights. The handles are removed on exit, on errors
    too."""
    handles = []
    try:
        for module, fn in edits:
            handles.append(module.register_forward_hook(lambda _m, args, output, fn=fn: fn(args[0], output)))
        yield
    finally:
        for handle in handles:
            handle.remove()
