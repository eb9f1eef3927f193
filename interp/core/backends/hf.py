"""The plain transformers backend: every layer runs `span_rows` attention (SDPA plus the exact pattern rows a
hook reads, biases in the mask); forward hooks on each `self_attn` module read those rows, edits go through
decoder-layer hooks."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor
from transformers import DynamicCache

from interp.core.backends.layers import (
    attention_modules,
    decoder_layer_paths,
    edit_layer_output,
    final_logits,
)
from interp.core.backends.protocol import (
    AttnImplementation,
    Batch,
    ColumnAwareHook,
    Edits,
    PatternHook,
    ResidEdit,
    ScoreBias,
    edit_hooks,
)
from interp.core.backends.shared_prefix import (
    SharedPrefixLayout,
    suffix_biases,
    window_covers,
)
from interp.core.backends.span_rows import rows_for, span_rows_attention
from interp.core.models import LoadedModel
from interp.hooks.sites import output_hook, site_hooks


def _pattern_hooks(hf_model: torch.nn.Module, on_pattern: PatternHook, remap: Callable[[Tensor], Tensor] | None = None):
    """Handles that hand each layer's pattern (its attention module's `output[1]`) to `on_pattern`."""
    hooks = []
    for layer, (_, module) in enumerate(attention_modules(hf_model)):
        if remap is None:
            read = lambda out, layer=layer: on_pattern(layer, out[1])  # noqa: E731
        else:
            read = lambda out, layer=layer: on_pattern(layer, remap(out[1]))  # noqa: E731
        hooks.append(output_hook(module, read))
    return hooks


def resid_edit_hooks(hf_model: torch.nn.Module, resid_edit: ResidEdit) -> list:
    """Handles that apply each layer's residual edit to its decoder layer's output."""
    paths = decoder_layer_paths(hf_model)
    return [
        output_hook(hf_model.get_submodule(paths[layer]), lambda out, edit=edit: edit_layer_output(edit, out))
        for layer, edit in resid_edit.items()
    ]


class PrefixCache(DynamicCache):
    """A shared prefix's keys and values. Once `frozen`, the suffix pass reads it without growing it: each
    layer attends to prefix + suffix keys, and the suffix's are dropped when the layer is done (kept, every
    layer's would stay alive for the whole pass: ~190 MB for 8 x 512 tokens of SmolLM2, more than the pass's
    own activations)."""

    frozen = False

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        """The layer's keys and values with these appended: stored while the prefix runs, not stored once frozen."""
        if not self.frozen:
            return super().update(key_states, value_states, layer_idx, *args, **kwargs)
        layer = self.layers[layer_idx]
        return torch.cat([layer.keys, key_states], dim=-2), torch.cat([layer.values, value_states], dim=-2)


@dataclass
class HFBackend:
    """The hf backend: the user's transformers model itself, hooked for one pass at a time."""

    model: LoadedModel
    name: str = "hf"
    shares_prefix: bool = True  # forward(..., shared_prefix=n) runs a common prefix once per batch
    attn_implementation: AttnImplementation = "sdpa"  # eager: the reference (every layer's whole pattern)

    def forward(
        self,
        batch: Batch,
        *,
        edits: Edits | None = None,
        on_pattern: PatternHook | None = None,
        shared_prefix: int = 0,
    ):
        """`shared_prefix=n`: every row starts with the same n tokens; compute their keys and values once.

        Results equal the plain pass up to float rounding; patterns then hold only the suffix's query rows
        (keys in the batch's columns). Falls back to the plain pass when a bias or a residual edit touches the
        prefix, or a sliding window is shorter than the batch.
        """
        edits = edit_hooks(self).applied(batch, edits) or Edits()  # the standing edits (`dampen`), then these
        score_bias, resid_edit, site_edit = edits.score_bias or None, edits.resid or None, edits.sites or None
        if shared_prefix > 0 and not site_edit and window_covers(self.model.hf_model, batch.input_ids.shape[1]):
            layout = SharedPrefixLayout.of(batch, shared_prefix)  # bookkeeping stays on the CPU
            suffix_bias = suffix_biases(layout, score_bias)
            if suffix_bias is not None and layout.edits_spare_prefix(resid_edit, self.model.hf_model):
                return self._forward_shared(batch, layout, on_pattern, suffix_bias, resid_edit)
        batch = batch.to(self.model.device)
        handles = _pattern_hooks(self.model.hf_model, on_pattern) if on_pattern is not None else []
        handles += resid_edit_hooks(self.model.hf_model, resid_edit or {})
        attention = span_rows_attention(
            self.model.hf_model, rows_for(on_pattern), score_bias, eager=self.attn_implementation == "eager"
        )
        if site_edit:
            attention = _both(site_hooks(self.model.hf_model, site_edit), attention)
        return _call_hooked(
            self.model.hf_model,
            handles,
            attention,
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            position_ids=batch.position_ids,
            use_cache=False,
        )

    def _forward_shared(
        self, batch: Batch, layout: SharedPrefixLayout, on_pattern, suffix_bias: ScoreBias, resid_edit: ResidEdit | None
    ):
        hf_model = self.model.hf_model
        device = self.model.device
        cache = PrefixCache(config=hf_model.config)
        with torch.inference_mode(), span_rows_attention(hf_model, None, eager=self.attn_implementation == "eager"):
            hf_model(
                input_ids=layout.prefix_ids(batch).to(device), past_key_values=cache, use_cache=True, logits_to_keep=1
            )
            cache.batch_repeat_interleave(batch.input_ids.shape[0])
        cache.frozen = True
        handles = []
        if on_pattern is not None:
            if isinstance(on_pattern, ColumnAwareHook):  # a reducer re-indexes its key masks once
                handles = _pattern_hooks(hf_model, on_pattern.in_columns(layout.batch_columns))
            else:
                handles = _pattern_hooks(hf_model, on_pattern, layout.pattern_to_batch)
        suffix_edits = {layer: layout.edit_on_suffix(edit) for layer, edit in (resid_edit or {}).items()}
        handles += resid_edit_hooks(hf_model, suffix_edits)
        return _call_hooked(
            hf_model,
            handles,
            span_rows_attention(hf_model, rows_for(on_pattern), suffix_bias, eager=self.attn_implementation == "eager"),
            input_ids=layout.suffix_ids.to(device),
            attention_mask=layout.attention_mask.to(device),
            position_ids=layout.position_ids().to(device),
            past_key_values=cache,
            use_cache=True,
        )


@contextlib.contextmanager
def _both(first: contextlib.AbstractContextManager, second: contextlib.AbstractContextManager):
    with first, second:
        yield


def _call_hooked(
    hf_model: torch.nn.Module, handles: list, attention: contextlib.AbstractContextManager, **inputs
) -> Tensor:
    """One forward pass with the given hooks inside `attention` (which sets the layers' attention up and
    restores it); the hooks are removed whatever happens."""
    try:
        with torch.inference_mode(), attention:
            out = hf_model(**inputs, logits_to_keep=1)
    finally:
        for handle in handles:
            handle.remove()
    return final_logits(out.logits)
