"""Where a model lives and in what precision: `device`, `dtype` and `device_map`, checked before any model work.

`device` is `cpu`, `cuda`, `cuda:N`, `mps` or `auto` (a CUDA GPU when torch sees one, else the CPU); `dtype`
is `float32`, `bfloat16` or `float16`, by default float32 on the CPU and bfloat16 on a GPU; `device_map =
"auto"` shards the model over every visible GPU through accelerate (each layer then has its own device, so
tensors are placed per layer, never on "the model's device"). `resolve_placement` turns the keys into a
concrete `Placement` or one line saying what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from interp.config import PlacementKeys, placement_key_problem
from interp.errors import InterpError

DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class Placement:
    """A resolved placement: a concrete device (`cpu`, `cuda:0`, ...), a dtype name and the device map."""

    device: str = "cpu"
    dtype: str = "float32"
    device_map: str | None = None

    @property
    def torch_dtype(self) -> torch.dtype:
        """The torch dtype of `dtype`."""
        return DTYPES[self.dtype]

    def record(self) -> dict:
        """The placement as a run records it."""
        return {"device": self.device, "dtype": self.dtype, "device_map": self.device_map}


def resolve_placement(device: str = "auto", dtype: str | None = None, device_map: str | None = None) -> Placement:
    """A concrete placement on this machine, or an InterpError when the hardware asked for is not here."""
    problem = placement_key_problem(device, dtype, device_map)
    if problem:
        raise InterpError(problem)
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if device == "auto":
        device = "cuda:0" if gpus else "cpu"
    elif device.startswith("cuda"):
        index = int(device.partition(":")[2] or 0)
        if gpus == 0:
            raise InterpError(
                f'device {device!r} asked for, but torch sees no CUDA GPU on this machine; use device "cpu" or "auto"'
            )
        if index >= gpus:
            raise InterpError(f"device {device!r} asked for, but torch sees {gpus} GPU(s) (cuda:0..cuda:{gpus - 1})")
        device = f"cuda:{index}"
    elif device == "mps" and not torch.backends.mps.is_available():
        raise InterpError('device \'mps\' asked for, but this machine has no Apple GPU; use device "cpu" or "auto"')
    if device_map is not None:
        import importlib.util

        if importlib.util.find_spec("accelerate") is None:
            raise InterpError('device_map = "auto" needs the accelerate package; pip install accelerate')
        if device != "cpu" and not device.startswith("cuda"):
            raise InterpError(
                f'device_map = "auto" shards over CUDA GPUs; it cannot be combined with device {device!r}'
            )
    default = "float32" if device == "cpu" else "bfloat16"
    return Placement(device=device, dtype=dtype or default, device_map=device_map)


def placement_of(keys: PlacementKeys) -> Placement:
    """The resolved placement of a config's `device`, `dtype` and `device_map` keys."""
    return resolve_placement(keys.device, keys.dtype, keys.device_map)


def module_device(module: torch.nn.Module) -> torch.device:
    """The device of a module's first parameter (for a sharded model: the device of that part of it)."""
    for parameter in module.parameters():
        return parameter.device
    return torch.device("cpu")


def input_device(hf_model: torch.nn.Module) -> torch.device:
    """Where a model's input ids go: the device of its token embedding."""
    return module_device(hf_model.get_input_embeddings())


def to_host(tensor: Tensor) -> Tensor:
    """A result back on the CPU (once per batch). A `meta` tensor has no values: zeros of its shape stand in,
    so a placement dry run on the meta device goes end to end."""
    if tensor.is_meta:
        return torch.zeros(tensor.shape, dtype=tensor.dtype)
    return tensor.to("cpu")


DRY_RUN = "placement_dry_run"  # a LoadedModel.meta key: weights on `meta` on purpose (a placement dry run)


def check_weights_placed(model) -> None:
    """The model's weights are where and what its placement says, checked before a batch is judged: weights on
    the `meta` device (no values: every verdict would read P(A) 0.5) are one line, and so is a model the caller
    wrapped (`source="user"`) and converted afterwards (`m.to(torch.bfloat16)`: its placement, recorded with every
    result, would say the dtype it had). A model dispatched by accelerate (`hf_device_map`: offloaded weights sit
    on `meta` between its hooks) is left to them, and so is a placement dry run (`meta[DRY_RUN]`: the shapes of a
    pass checked without values)."""
    hf_model = getattr(model, "hf_model", None)
    if not isinstance(hf_model, torch.nn.Module) or getattr(hf_model, "hf_device_map", None):
        return
    weight = next(hf_model.parameters(), None)
    if weight is None:
        return
    if weight.is_meta and not getattr(model, "meta", {}).get(DRY_RUN):
        raise InterpError(
            f"model {model.name} has its weights on the meta device (no values: every verdict would be 0.5); "
            "load them or move the model to a real device (model.to('cpu')) before judging with it"
        )
    if model.source == "user" and weight.dtype != model.placement.torch_dtype:
        raise InterpError(
            f"model {model.name} was wrapped in {model.placement.dtype} and now holds {str(weight.dtype)[6:]} "
            "weights (converted after wrapping); wrap it again after converting, so its results record the dtype "
            "they were judged in"
        )
