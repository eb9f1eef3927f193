"""Hook handles for reads the named sites (`interp.hooks.sites`) do not offer, kept here so that nothing outside
`hooks/` registers a forward hook of its own.

`projected_values(hf_model, into)`: each decoder layer's value projection output (`self_attn.v_proj`, one vector
per key/value head side by side, before the heads are repeated for grouped-query attention), kept by layer for the
block. The named site `attn.hook_v` holds the values inside the toolkit's attention function, repeated per query
head; gradient attribution (`interp.locate.heads`) runs the family's eager attention and reads them here.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

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
