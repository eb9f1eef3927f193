"""nnsight's LanguageModel wrapping (a weight-sharing copy of) the user's HF model: patterns are
`self_attn.output[1]` inside a trace (the rows `span_rows` attention returns); biases in its mask."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from interp.core.backends.layers import attention_modules, shared_weight_copy
from interp.core.backends.protocol import (
    AttnImplementation,
    Batch,
    Edits,
    PatternHook,
    edit_hooks,
)
from interp.core.backends.span_rows import rows_for, span_rows_attention
from interp.core.models import LoadedModel
from interp.core.placement import to_host
from interp.hooks.sites import site_hooks


@dataclass
class NNsightBackend:
    """The nnsight backend: a LanguageModel whose trace reads patterns and applies residual edits."""

    model: LoadedModel
    wrapped: object
    traced_model: torch.nn.Module  # what nnsight wraps: a weight-sharing copy of the user's model
    name: str = "nnsight"
    shares_prefix: bool = False
    attn_implementation: AttnImplementation = "sdpa"

    @classmethod
    def boot(cls, model: LoadedModel, attn_implementation: AttnImplementation = "sdpa") -> "NNsightBackend":
        """The backend of `model`: a LanguageModel wrapping a copy that shares its weights (the model is left
        untouched), on the model's device unless it is sharded."""
        from nnsight import LanguageModel

        # nnsight installs its own `forward` on the module it wraps; wrap a copy sharing every weight so the
        # user's model object is left exactly as it was.
        traced_model = shared_weight_copy(model.hf_model)
        # nnsight builds a transformers pipeline, which moves the model to the pipeline's device unless told
        # where it is (a sharded model, with its device map, is never moved).
        where = {} if getattr(traced_model, "hf_device_map", None) else {"device": model.device}
        return cls(
            model,
            LanguageModel(traced_model, tokenizer=model.tokenizer, **where),
            traced_model,
            attn_implementation=attn_implementation,
        )

    def forward(
        self,
        batch: Batch,
        *,
        edits: Edits | None = None,
        on_pattern: PatternHook | None = None,
        shared_prefix: int = 0,
    ):
        """The batch's final-position logits in one trace, the standing edits and `edits` applied (biases in the
        attention mask, site edits as forward hooks, residual edits in the trace) and each layer's pattern rows
        handed to `on_pattern`; `shared_prefix` is ignored."""
        edits = edit_hooks(self).applied(batch, edits) or Edits()  # the standing edits (`dampen`), then these
        score_bias, resid_edit, site_edit = edits.score_bias or None, edits.resid or None, edits.sites or None
        from interp.core.backends.nnsight_trace import traced_forward

        paths = [path for path, _ in attention_modules(self.traced_model)]
        batch = batch.to(self.model.device)
        with (
            torch.inference_mode(),
            span_rows_attention(
                self.traced_model, rows_for(on_pattern), score_bias, eager=self.attn_implementation == "eager"
            ),
            site_hooks(self.traced_model, site_edit or {}),  # forward hooks on the modules nnsight runs
        ):
            logits = traced_forward(self.wrapped, batch, on_pattern, paths, resid_edit or None)
        return to_host(logits)
