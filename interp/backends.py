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


def _pattern_hooks(hf_model: torch.nn.Module, on_pattern: PatternHook, remap: Callable[[Tensor], Tensor] | None = None):
    hooks = []
    for layer, (_, module) in enumerate(attention_modules(hf_model)):
        if remap is None:
            hook = lambda _m, _i, out, layer=layer: on_pattern(layer, out[1])  # noqa: E731
        else:
            hook = lambda _m, _i, out, layer=layer: on_pattern(layer, remap(out[1]))  # noqa: E731
        hooks.append(module.register_forward_hook(hook))
    return hooks


def _edit_hooks(hf_model: torch.nn.Module, resid_edit: ResidEdit) -> list:
    paths = decoder_layer_paths(hf_model)
    return [
        hf_model.get_submodule(paths[layer]).register_forward_hook(
            lambda _m, _i, out, edit=edit: _edit_layer_output(edit, out)
        )
        for layer, edit in resid_edit.items()
    ]


@dataclass(frozen=True)
class SharedPrefixLayout:
    """A left-padded batch whose rows all start with the same `prefix` tokens, run as prefix + suffix pass.

    Left-padded row r is [pad x off_r][prefix][suffix_r]. The suffix pass sees [prefix][pad x off_r][suffix_r]:
    the prefix's keys and values come from one batch-1 pass, repeated over the rows. Positions are equal in
    both layouts (pads take no position), and suffix tokens sit in the same columns, so only the first
    off_r + prefix columns are permuted; `key_index`, `batch_columns` and `bias_queries` map the suffix
    pass's columns and rows to and from the left-padded batch, so patterns and biases keep the batch's
    coordinates. A pattern hook with an `in_columns(batch_columns)` method (the span reducer) gets the suffix
    pass's own patterns instead and re-indexes its key masks once, saving a copy of every layer's pattern.
    """

    prefix: int
    offsets: Tensor  # [batch] left padding of each row
    suffix_ids: Tensor  # [batch, T - prefix]
    attention_mask: Tensor  # [batch, T] in the suffix pass's layout
    key_index: Tensor  # [batch, T]: left-padded column k <- suffix-pass column key_index[r, k]
    batch_columns: Tensor  # [batch, T]: suffix-pass column c <- left-padded column batch_columns[r, c]
    bias_queries: Tensor  # [batch, T - prefix]: suffix-pass row q <- left-padded row bias_queries[r, q]

    @classmethod
    def of(cls, batch: Batch, prefix: int) -> "SharedPrefixLayout":
        rows, width = batch.input_ids.shape
        offsets = (batch.attention_mask == 0).sum(-1)
        columns = torch.arange(width)
        off = offsets[:, None]
        in_pads, in_prefix = columns < off, (columns >= off) & (columns < off + prefix)
        key_index = torch.where(in_pads, prefix + columns, torch.where(in_prefix, columns - off, columns))
        batch_columns = torch.where(
            columns < prefix, off + columns, torch.where(columns < prefix + off, columns - prefix, columns)
        )
        suffix_columns = columns[prefix:].expand(rows, -1)
        bias_queries = torch.where(suffix_columns < prefix + off, suffix_columns - prefix, suffix_columns)
        suffix_ids = torch.gather(batch.input_ids, 1, batch_columns[:, prefix:])
        suffix_mask = torch.gather(batch.attention_mask, 1, batch_columns[:, prefix:])
        attention_mask = torch.cat([torch.ones(rows, prefix, dtype=suffix_mask.dtype), suffix_mask], dim=1)
        return cls(prefix, offsets, suffix_ids, attention_mask, key_index, batch_columns, bias_queries)

    def prefix_columns(self, row: int) -> slice:
        """Where the shared prefix sits in `row` of the left-padded batch."""
        first = int(self.offsets[row])
        return slice(first, first + self.prefix)

    def prefix_ids(self, batch: Batch) -> Tensor:
        return batch.input_ids[:1, self.prefix_columns(0)]

    def position_ids(self) -> Tensor:
        return (self.attention_mask.cumsum(-1) - 1).clamp(min=0)[:, self.prefix :]

    def pattern_to_batch(self, pattern: Float[Tensor, "batch head query key"]) -> Float[Tensor, "batch head query key"]:
        index = self.key_index[:, None, None, :].expand(-1, pattern.shape[1], pattern.shape[2], -1)
        return torch.gather(pattern, -1, index)

    def edits_spare_prefix(self, resid_edit: ResidEdit | None, hf_model: torch.nn.Module) -> bool:
        """Whether every edit leaves the prefix positions alone (the prefix pass runs unedited).

        Checked by applying each edit to a random residual stream of the batch's shape: "final" and "spans"
        edits (and coefficient 0) pass, an edit at every position does not.
        """
        if not resid_edit:
            return True
        rows, width = self.attention_mask.shape
        generator = torch.Generator().manual_seed(0)
        probe = torch.randn(rows, width, hf_model.config.get_text_config().hidden_size, generator=generator)
        for edit in {id(e): e for e in resid_edit.values()}.values():
            edited = edit(probe.clone())
            for row in range(rows):
                columns = self.prefix_columns(row)
                if not torch.equal(edited[row, columns], probe[row, columns]):
                    return False
        return True

    def edit_on_suffix(self, edit: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
        """The edit, which expects the whole batch's positions, applied to the suffix pass's positions
        (per-position edits: the prefix columns it is given are placeholders it leaves alone)."""
        prefix = self.prefix

        def on_suffix(hidden: Tensor) -> Tensor:
            placeholder = hidden.new_zeros(hidden.shape[0], prefix, hidden.shape[2])
            return edit(torch.cat([placeholder, hidden], dim=1))[:, prefix:]

        return on_suffix

    def bias_for_suffix(self, bias: Tensor) -> Tensor | None:
        """The suffix pass's bias, or None when the bias touches the prefix (whose pass runs unbiased)."""
        heads = bias.shape[1]
        for row in range(bias.shape[0]):
            columns = self.prefix_columns(row)
            if torch.any(bias[row, :, columns, columns] != 0):
                return None
        bias = bias.expand(len(self.offsets), -1, -1, -1)
        query_index = self.bias_queries[:, None, :, None].expand(-1, heads, -1, bias.shape[-1])
        rows_picked = torch.gather(bias, 2, query_index)
        key_index = self.batch_columns[:, None, None, :].expand(-1, heads, rows_picked.shape[2], -1)
        return torch.gather(rows_picked, 3, key_index)


@dataclass
class HFBackend:
    model: LoadedModel
    name: str = "hf"
    shares_prefix: bool = True  # forward(..., shared_prefix=n) runs a common prefix once per batch

    def forward(
        self,
        batch: Batch,
        *,
        on_pattern: PatternHook | None = None,
        score_bias: ScoreBias | None = None,
        resid_edit: ResidEdit | None = None,
        shared_prefix: int = 0,
    ):
        """`shared_prefix=n`: every row starts with the same n tokens; compute their keys and values once.

        Results equal the plain pass up to float rounding; patterns then hold only the suffix's query rows
        (keys in the batch's columns). Falls back to the plain pass when a bias or a residual edit touches the
        prefix, or a sliding window is shorter than the batch.
        """
        if shared_prefix > 0 and _window_covers(self.model.hf_model, batch.input_ids.shape[1]):
            layout = SharedPrefixLayout.of(batch, shared_prefix)
            suffix_bias = _suffix_biases(layout, score_bias)
            if suffix_bias is not None and layout.edits_spare_prefix(resid_edit, self.model.hf_model):
                return self._forward_shared(batch, layout, on_pattern, suffix_bias, resid_edit)
        handles = _pattern_hooks(self.model.hf_model, on_pattern) if on_pattern is not None else []
        handles += _edit_hooks(self.model.hf_model, resid_edit or {})
        return _call_hooked(
            self.model.hf_model,
            handles,
            score_bias,
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            position_ids=batch.position_ids,
            use_cache=False,
        )

    def _forward_shared(
        self, batch: Batch, layout: SharedPrefixLayout, on_pattern, suffix_bias: ScoreBias, resid_edit: ResidEdit | None
    ):
        from transformers import DynamicCache

        hf_model = self.model.hf_model
        cache = DynamicCache(config=hf_model.config)
        with torch.inference_mode():
            hf_model(input_ids=layout.prefix_ids(batch), past_key_values=cache, use_cache=True, logits_to_keep=1)
            cache.batch_repeat_interleave(batch.input_ids.shape[0])
        handles = []
        if on_pattern is not None:
            in_columns = getattr(on_pattern, "in_columns", None)  # a reducer re-indexes its key masks once
            if in_columns is not None:
                handles = _pattern_hooks(hf_model, in_columns(layout.batch_columns))
            else:
                handles = _pattern_hooks(hf_model, on_pattern, layout.pattern_to_batch)
        suffix_edits = {layer: layout.edit_on_suffix(edit) for layer, edit in (resid_edit or {}).items()}
        handles += _edit_hooks(hf_model, suffix_edits)
        return _call_hooked(
            hf_model,
            handles,
            suffix_bias,
            input_ids=layout.suffix_ids,
            attention_mask=layout.attention_mask,
            position_ids=layout.position_ids(),
            past_key_values=cache,
            use_cache=True,
        )


def _call_hooked(hf_model: torch.nn.Module, handles: list, score_bias: ScoreBias | None, **inputs) -> Tensor:
    """One forward pass with the given hooks and biases; the hooks are removed whatever happens."""
    try:
        with torch.inference_mode(), biased_attention(hf_model, score_bias):
            out = hf_model(**inputs, logits_to_keep=1)
    finally:
        for handle in handles:
            handle.remove()
    return _final_logits(out.logits)


def _window_covers(hf_model: torch.nn.Module, width: int) -> bool:
    """Sliding windows count cache columns, and the shared layout moves pads between prefix and suffix, so
    it equals the plain pass only when every window spans the whole batch."""
    window = getattr(hf_model.config.get_text_config(), "sliding_window", None)
    return window is None or width <= window


def _suffix_biases(layout: SharedPrefixLayout, score_bias: ScoreBias | None) -> ScoreBias | None:
    """Each layer's bias remapped for the suffix pass ({} for none); None if any bias touches the prefix."""
    remapped: dict[int, Tensor] = {}
    by_tensor: dict[int, Tensor] = {}
    for layer, bias in (score_bias or {}).items():
        if id(bias) not in by_tensor:
            suffix = layout.bias_for_suffix(bias)
            if suffix is None:
                return None
            by_tensor[id(bias)] = suffix
        remapped[layer] = by_tensor[id(bias)]
    return remapped


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
