"""Models of one job that hold the same weights hold them once.

An organism is its base with a LoRA adapter merged into its top layers: loaded beside the base (or beside another
organism of the same base), its lower layers and embeddings are equal to theirs, bit for bit, but are a second copy
in memory. `share_equal_weights` points each such parameter at the tensor already held, so a job that judges
SmolLM2 and its organisms holds SmolLM2's lower layers once (0.40 GB of parameters a SmolLM2 organism, float32).

What that saves depends on where the weights live. On a GPU the copies are device memory, freed once no model holds
them. On the CPU, transformers memory-maps a safetensors file: an organism's unchanged layers are file pages that
become resident only when read, and comparing them reads them. Measured on the CPU (SmolLM2 and its null organism):
loading the organism added 0.16 GB of RSS, the comparison 0.38 GB more, and letting the copies go gave none of it
back (the file stays mapped while the organism's own layers, views of the same file, are held). Those pages are
clean and the kernel may drop them under memory pressure, but they count in the process's peak RSS.

So an organism loaded beside the very base it names (the same folder, the same placement) never reads its own copy:
`adopt_weights` points its parameters at the base's before anything reads them, its adapter is merged into private
copies of the weights it changes (`private_parameter`: `interp.core.adapters.apply_adapter` never writes into a
tensor it was given), and the file mapping goes once nothing points into it. Measured on the CPU, SmolLM2 and its
two demo organisms loaded and run (`experiments/bench_memory.py --organisms`): peak RSS 1.17 GB adopted, 1.67 GB
read and compared, 1.98 GB when the LoRA is merged into the mapped file's pages (the mapping then stays whole).

Only parameters with the same name, shape, dtype, device and values are shared; a parameter tied to others in its
own model (an embedding and its output head) is replaced under every name it has, so the tie holds. The models are
for inference: a weight changed in place would change every model that shares it (`ModelCache`, the one caller,
serves judging jobs; training loads its own models).
"""

from __future__ import annotations

from typing import Callable, Iterable

import torch


def share_equal_weights(model: torch.nn.Module, others: Iterable[torch.nn.Module]) -> int:
    """Point every parameter of `model` that equals one of `others`' (same name, shape, dtype, device, values) at
    that parameter; returns the bytes no longer held twice."""
    held: dict[str, list[torch.nn.Parameter]] = {}
    for other in others:
        if other is model:
            continue
        for name, parameter in other.named_parameters(remove_duplicate=False):
            held.setdefault(name, []).append(parameter)
    return _point_at(
        model, lambda names, p: next((q for n in names for q in held.get(n, []) if same_tensor(p, q)), None)
    )


def adopt_weights(model: torch.nn.Module, source: torch.nn.Module) -> int:
    """Point every parameter of `model` at `source`'s parameter of the same name, shape, dtype and device, without
    reading either (the caller knows them equal: `model` was loaded from the file `source` was, in the same
    placement, and nothing has written into either); returns the bytes adopted."""
    held = dict(source.named_parameters(remove_duplicate=False))

    def match(names: list[str], parameter: torch.nn.Parameter) -> torch.nn.Parameter | None:
        q = held.get(names[0])
        same = q is not None and (q.shape, q.dtype, q.device) == (parameter.shape, parameter.dtype, parameter.device)
        return q if same else None

    return _point_at(model, match)


def _point_at(model: torch.nn.Module, match: Callable) -> int:
    """Replace each parameter of `model` by `match(its names, it)` where that is another parameter, under every name
    it has (a tie inside `model` is kept); returns the bytes replaced."""
    names: dict[int, list[str]] = {}  # a parameter of `model` -> every name it has there (ties)
    params: dict[int, torch.nn.Parameter] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(parameter), []).append(name)
        params[id(parameter)] = parameter
    replaced = 0
    for key, parameter in params.items():
        other = match(names[key], parameter)
        if other is None or other is parameter:
            continue
        for name in names[key]:
            owner, _, leaf = name.rpartition(".")
            setattr(model.get_submodule(owner) if owner else model, leaf, other)
        replaced += parameter.nbytes
    return replaced


def private_parameter(module: torch.nn.Module, name: str) -> torch.nn.Parameter:
    """Replace `module`'s parameter `name` by a copy of it that no other module holds (before writing into it in
    place), and return the copy."""
    parameter = getattr(module, name)
    copy = torch.nn.Parameter(parameter.detach().clone(), requires_grad=parameter.requires_grad)
    setattr(module, name, copy)
    return copy


def same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal as weights: the same tensor (nothing read), or the same shape, dtype, device and values."""
    return a is b or (a.shape == b.shape and a.dtype == b.dtype and a.device == b.device and bool(torch.equal(a, b)))
