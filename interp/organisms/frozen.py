"""The frozen lower layers of organism training: LoRA sits on the top layers only, so the residual stream
entering the first trained layer never changes for a prompt. It is computed once per example (right-padded
batches: padding after a prompt cannot change its causal hidden states), cached on disk under a key of the
model, the layer and the prompts, and every training pass runs the top layers from it.
`check_frozen_split` measures that cached states + top layers are the same function as the full model.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch
from tqdm.auto import tqdm

from interp.core.backends.shared_trunk import decoder_stack, layers_between
from interp.core.placement import input_device
from interp.core.threads import one_thread_workers, side_by_side
from interp.hooks.handles import StopPass, stopping_at


@contextlib.contextmanager
def stopping_before(hf_model: torch.nn.Module, layer: int) -> Iterator[threading.local]:
    """Within: every forward pass of `hf_model` stops on entering decoder layer `layer`, and the residual it
    carried there is kept in the yielded object's `h`, per thread (passes may run side by side in threads)."""
    caught = threading.local()

    def keep(hidden: torch.Tensor) -> None:
        caught.h = hidden.detach().clone()

    with stopping_at(decoder_stack(hf_model).layers[layer], keep):
        yield caught


def _states_of(
    hf_model: torch.nn.Module, caught: threading.local, prompts: Sequence[Sequence[int]], pad_id: int
) -> list[torch.Tensor]:
    """One right-padded batch through `hf_model` under `stopping_before`: each prompt's `[1, T_i, d]` state."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long, device=input_device(hf_model))
    mask = torch.zeros((len(prompts), width), dtype=torch.long, device=input_device(hf_model))
    for row, prompt in enumerate(prompts):
        ids[row, : len(prompt)] = torch.tensor(list(prompt))
        mask[row, : len(prompt)] = 1
    with torch.inference_mode(), contextlib.suppress(StopPass):
        hf_model(input_ids=ids, attention_mask=mask, use_cache=False)
    return [caught.h[row : row + 1, : len(prompt)].clone() for row, prompt in enumerate(prompts)]


def hidden_before(
    hf_model: torch.nn.Module, layer: int, prompts: Sequence[Sequence[int]], pad_id: int
) -> list[torch.Tensor]:
    """The residual stream entering decoder layer `layer` per prompt, each `[1, T_i, d]` (one right-padded batch)."""
    with stopping_before(hf_model, layer) as caught:
        return _states_of(hf_model, caught, prompts, pad_id)


def frozen_states(
    hf_model: torch.nn.Module,
    layer: int,
    examples: Sequence[Any],  # training examples: each has `input_ids`
    pad_id: int,
    *,
    cache: Path | None,
    key: str,
    progress: bool,
    below: tuple[int, Sequence[torch.Tensor]] | None = None,
) -> tuple[list[torch.Tensor], bool]:
    """`hidden_before` for every example (length-sorted batches of 8), read from or written to `cache`;
    the second value says whether they were read. `below`: (start, every example's state entering layer `start`):
    the states are then computed from those, one example at a time (unpadded, as `advance`), through layers
    start..layer-1 (`key` must name where they came from). On the CPU at one thread per op the batches run side by
    side in `one_thread_workers()` threads, with the same bits. States computed off the CPU are keyed by their device
    type too (other kernels, other rounding; CPU keys predate this), stored on the CPU and read back onto the
    model's device."""
    device = input_device(hf_model)
    keyed = [key, layer, [ex.input_ids for ex in examples]] + ([device.type] if device.type != "cpu" else [])
    digest = hashlib.sha256(json.dumps(keyed).encode()).hexdigest()[:24]
    path = Path(cache) / f"frozen-{digest}.pt" if cache is not None else None
    if path is not None and path.is_file():
        return torch.load(path, map_location=device), True
    hidden: list[torch.Tensor | None] = [None] * len(examples)
    by_length = sorted(range(len(examples)), key=lambda i: len(examples[i].input_ids))
    chunks = [by_length[s : s + 8] for s in range(0, len(by_length), 8)]
    workers = one_thread_workers(device)
    bar = tqdm(total=len(examples), desc="frozen layers", unit="example", disable=not progress)
    with contextlib.ExitStack() as stack:
        caught = stack.enter_context(stopping_before(hf_model, layer))  # before slicing: a full-stack index
        if below is None:
            compute = lambda chunk: _states_of(  # noqa: E731
                hf_model, caught, [examples[i].input_ids for i in chunk], pad_id
            )
        else:
            start, lower = below
            stack.enter_context(only_layers_from(hf_model, start))
            compute = lambda chunk: [_state_from(hf_model, caught, lower[i]) for i in chunk]  # noqa: E731
        for chunk, states in zip(chunks, side_by_side(compute, chunks, workers), strict=False):
            for index, h in zip(chunk, states, strict=False):
                hidden[index] = h
            bar.update(len(chunk))
    bar.close()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save([h.cpu() for h in hidden], path.with_suffix(".tmp"))
        path.with_suffix(".tmp").replace(path)
    return hidden, False


def only_layers_from(hf_model: torch.nn.Module, start: int):
    """Run the model's forward through decoder layers `start`.. only (feed the cached hidden as inputs_embeds)."""
    return layers_between(hf_model, start)


def _state_from(hf_model: torch.nn.Module, caught: threading.local, hidden: torch.Tensor) -> torch.Tensor:
    """Under `stopping_before(stop)` and `only_layers_from(start)`: the state entering `stop` from `hidden`."""
    with torch.inference_mode(), contextlib.suppress(StopPass):
        hf_model(inputs_embeds=hidden, use_cache=False)
    return caught.h


def advance(hf_model: torch.nn.Module, start: int, stop: int, hidden: torch.Tensor) -> torch.Tensor:
    """The residual entering decoder layer `stop`, from `hidden` entering layer `start` (one unpadded prompt)."""
    if stop == start:
        return hidden
    with stopping_before(hf_model, stop) as caught, only_layers_from(hf_model, start):
        return _state_from(hf_model, caught, hidden)


def last_logits(hf_model: torch.nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """The last position's logits from `hidden` fed as the input of the model's (possibly sliced) stack."""
    return hf_model(inputs_embeds=hidden, use_cache=False, logits_to_keep=1).logits[:, -1]


def final_logits_from(hf_model: torch.nn.Module, start: int, hidden: torch.Tensor) -> torch.Tensor:
    """The final-position logits of the model run from layer `start` up on the states `hidden` entering it."""
    with only_layers_from(hf_model, start):
        return last_logits(hf_model, hidden)


def check_frozen_split(hf_model: torch.nn.Module, start: int, input_ids: Sequence[int], pad_id: int) -> float:
    """Max |logit difference| between the full forward and cached-hidden + top layers (~1e-5 when exact)."""
    with torch.inference_mode():
        full = hf_model(
            input_ids=torch.tensor([list(input_ids)], device=input_device(hf_model)), use_cache=False, logits_to_keep=1
        ).logits[:, -1]
        (hidden,) = hidden_before(hf_model, start, [input_ids, list(input_ids) + [pad_id] * 3], pad_id)[:1]
        split = final_logits_from(hf_model, start, hidden)
    return float((full - split).abs().max())
