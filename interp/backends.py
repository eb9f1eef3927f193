"""Three ways to run the same HF model object, behind one interface.

`forward(batch, on_pattern=..., score_bias=...)` returns the final-position logits and calls
`on_pattern(layer, pattern)` once per layer with that layer's post-softmax pattern
(`Float[Tensor, "batch head query key"]`), so callers reduce it at once and never keep it. `score_bias`
maps a layer to an additive pre-softmax bias (`Float[Tensor, "batch head|1 query key"]`), the one
mechanism every intervention compiles to. `resid_edit` (optional) maps a layer to a function applied to that
layer's residual-stream output (`Float[Tensor, "batch pos d_model"]` -> same shape; the decoder layer's
output in hf/nnsight, `blocks.{l}.hook_resid_post` in transformer_lens): activation steering.

- `hf`: plain transformers, eager attention; patterns from forward hooks on each `self_attn` module;
  biases through a registered attention function (`interp_eager`) that adds them to the scores.
- `transformer_lens`: TransformerBridge booted on the same HF object; `blocks.{l}.attn.hook_pattern` and
  `blocks.{l}.attn.hook_attn_scores`.
- `nnsight`: LanguageModel wrapping the same object; `self_attn.output[1]`; biases as for `hf`.
"""

from __future__ import annotations

import contextlib
import copy
import sys
from dataclasses import dataclass
from typing import Callable, Iterator, Literal, Protocol

import torch
from jaxtyping import Float, Int
from torch import Tensor

from interp.errors import InterpError
from interp.models import LoadedModel

BackendName = Literal["hf", "transformer_lens", "nnsight"]
BACKENDS: tuple[str, ...] = ("hf", "transformer_lens", "nnsight")
PatternHook = Callable[[int, Tensor], None]
ScoreBias = dict[int, Tensor]
ResidEdit = dict[int, Callable[[Tensor], Tensor]]


@dataclass(frozen=True)
class Batch:
    """A left-padded batch: the final position of every row is the last column."""

    input_ids: Int[Tensor, "batch pos"]
    attention_mask: Int[Tensor, "batch pos"]

    @property
    def position_ids(self) -> Int[Tensor, "batch pos"]:
        return (self.attention_mask.cumsum(-1) - 1).clamp(min=0)


def left_pad(sequences: list[list[int]], pad_id: int) -> tuple[Batch, list[int]]:
    """Pad on the left; return the batch and each row's offset (add it to token indices of that row)."""
    width = max(len(s) for s in sequences)
    offsets = [width - len(s) for s in sequences]
    ids = torch.tensor([[pad_id] * off + s for s, off in zip(sequences, offsets)], dtype=torch.long)
    mask = torch.tensor([[0] * off + [1] * len(s) for s, off in zip(sequences, offsets)], dtype=torch.long)
    return Batch(ids, mask), offsets


class Backend(Protocol):
    name: str
    model: LoadedModel

    def forward(
        self,
        batch: Batch,
        *,
        on_pattern: PatternHook | None = None,
        score_bias: ScoreBias | None = None,
        resid_edit: ResidEdit | None = None,
    ) -> Float[Tensor, "batch vocab"]: ...


def attention_modules(hf_model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """(path, module) of every decoder self-attention module, in layer order."""
    found = [(name, module) for name, module in hf_model.named_modules() if name.endswith("self_attn")]
    if not found:
        raise InterpError(f"{type(hf_model).__name__}: found no '*.self_attn' attention modules to hook")
    return found


def decoder_layer_paths(hf_model: torch.nn.Module) -> list[str]:
    """Path of every decoder layer (the parent of its `self_attn` module), in layer order."""
    return [path.rsplit(".", 1)[0] for path, _ in attention_modules(hf_model)]


def _edit_layer_output(edit: Callable[[Tensor], Tensor], output):
    """Apply `edit` to a decoder layer's hidden states, whether the layer returns a tensor or a tuple."""
    if isinstance(output, tuple):
        return (edit(output[0]),) + tuple(output[1:])
    return edit(output)


# ---- the biased eager attention function (hf and nnsight) ----------------------------------------

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


def _final_logits(logits: Tensor) -> Tensor:
    return logits[:, -1, :].float()


# ---- backends ----------------------------------------------------------------------------------


@dataclass
class HFBackend:
    model: LoadedModel
    name: str = "hf"

    def forward(
        self,
        batch: Batch,
        *,
        on_pattern: PatternHook | None = None,
        score_bias: ScoreBias | None = None,
        resid_edit: ResidEdit | None = None,
    ):
        handles = []
        if on_pattern is not None:
            for layer, (_, module) in enumerate(attention_modules(self.model.hf_model)):
                handles.append(module.register_forward_hook(lambda _m, _i, out, layer=layer: on_pattern(layer, out[1])))
        if resid_edit:
            hf_model = self.model.hf_model
            paths = decoder_layer_paths(hf_model)
            for layer, edit in resid_edit.items():
                module = hf_model.get_submodule(paths[layer])
                handles.append(module.register_forward_hook(lambda _m, _i, out, edit=edit: _edit_layer_output(edit, out)))
        try:
            with torch.inference_mode(), biased_attention(self.model.hf_model, score_bias):
                out = self.model.hf_model(
                    input_ids=batch.input_ids,
                    attention_mask=batch.attention_mask,
                    position_ids=batch.position_ids,
                    use_cache=False,
                    logits_to_keep=1,
                )
        finally:
            for handle in handles:
                handle.remove()
        return _final_logits(out.logits)


def _shared_weight_copy(module: torch.nn.Module) -> torch.nn.Module:
    memo = {id(t): t for t in list(module.parameters()) + list(module.buffers())}
    return copy.deepcopy(module, memo)


@dataclass
class TransformerLensBackend:
    model: LoadedModel
    bridge: object
    name: str = "transformer_lens"

    @classmethod
    def boot(cls, model: LoadedModel) -> "TransformerLensBackend":
        from transformer_lens.model_bridge import TransformerBridge

        # The bridge swaps its own components into the model it boots on. Boot it on a structural copy that
        # shares every weight tensor, so the user's model object stays untouched and costs no extra memory.
        hf_model = _shared_weight_copy(model.hf_model)
        name_or_path = getattr(hf_model.config, "_name_or_path", "") or type(hf_model).__name__
        bridge = TransformerBridge.boot_transformers(name_or_path, hf_model=hf_model, tokenizer=model.tokenizer, device="cpu")
        return cls(model, bridge)

    def forward(
        self,
        batch: Batch,
        *,
        on_pattern: PatternHook | None = None,
        score_bias: ScoreBias | None = None,
        resid_edit: ResidEdit | None = None,
    ):
        hooks = []
        for layer, bias in (score_bias or {}).items():
            hooks.append((f"blocks.{layer}.attn.hook_attn_scores", lambda scores, hook, bias=bias: scores + bias))
        for layer, edit in (resid_edit or {}).items():
            hooks.append((f"blocks.{layer}.hook_resid_post", lambda resid, hook, edit=edit: edit(resid)))
        if on_pattern is not None:
            for layer in range(self.model.n_layers):
                hooks.append((f"blocks.{layer}.attn.hook_pattern", lambda pattern, hook, layer=layer: on_pattern(layer, pattern)))
        with torch.inference_mode():
            logits = self.bridge.run_with_hooks(
                batch.input_ids,
                fwd_hooks=hooks,
                attention_mask=batch.attention_mask,
                position_ids=batch.position_ids,
                return_type="logits",
            )
        return _final_logits(logits)


@dataclass
class NNsightBackend:
    model: LoadedModel
    wrapped: object
    traced_model: torch.nn.Module  # what nnsight wraps: a weight-sharing copy of the user's model
    name: str = "nnsight"

    @classmethod
    def boot(cls, model: LoadedModel) -> "NNsightBackend":
        from nnsight import LanguageModel

        # nnsight installs its own `forward` on the module it wraps; wrap a copy sharing every weight so the
        # user's model object is left exactly as it was.
        traced_model = _shared_weight_copy(model.hf_model)
        return cls(model, LanguageModel(traced_model, tokenizer=model.tokenizer), traced_model)

    def forward(
        self,
        batch: Batch,
        *,
        on_pattern: PatternHook | None = None,
        score_bias: ScoreBias | None = None,
        resid_edit: ResidEdit | None = None,
    ):
        from interp._nnsight_trace import traced_forward

        paths = [path for path, _ in attention_modules(self.traced_model)]
        with torch.inference_mode(), biased_attention(self.traced_model, score_bias):
            if resid_edit:
                return traced_forward(self.wrapped, batch, on_pattern, paths, resid_edit)
            return traced_forward(self.wrapped, batch, on_pattern, paths)


def make_backend(model: LoadedModel, backend: str = "hf") -> Backend:
    if backend == "hf":
        return HFBackend(model)
    if backend == "transformer_lens":
        return TransformerLensBackend.boot(model)
    if backend == "nnsight":
        return NNsightBackend.boot(model)
    raise InterpError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
