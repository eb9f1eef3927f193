"""nnsight's LanguageModel wrapping (a weight-sharing copy of) the user's HF model: patterns are
`self_attn.output[1]` inside a trace; biases go through the registered `interp_eager` attention function."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from interp.core.backends.bias import biased_attention
from interp.core.backends.layers import attention_modules, shared_weight_copy
from interp.core.backends.protocol import Batch, PatternHook, ResidEdit, ScoreBias
from interp.core.models import LoadedModel


@dataclass
class NNsightBackend:
    model: LoadedModel
    wrapped: object
    traced_model: torch.nn.Module  # what nnsight wraps: a weight-sharing copy of the user's model
    name: str = "nnsight"
    shares_prefix: bool = False

    @classmethod
    def boot(cls, model: LoadedModel) -> "NNsightBackend":
        from nnsight import LanguageModel

        # nnsight installs its own `forward` on the module it wraps; wrap a copy sharing every weight so the
        # user's model object is left exactly as it was.
        traced_model = shared_weight_copy(model.hf_model)
        return cls(model, LanguageModel(traced_model, tokenizer=model.tokenizer), traced_model)

    def forward(
        self,
        batch: Batch,
        *,
        on_pattern: PatternHook | None = None,
        score_bias: ScoreBias | None = None,
        resid_edit: ResidEdit | None = None,
        shared_prefix: int = 0,
    ):
        from interp.core.backends.nnsight_trace import traced_forward

        paths = [path for path, _ in attention_modules(self.traced_model)]
        with torch.inference_mode(), biased_attention(self.traced_model, score_bias):
            if resid_edit:
                return traced_forward(self.wrapped, batch, on_pattern, paths, resid_edit)
            return traced_forward(self.wrapped, batch, on_pattern, paths)
