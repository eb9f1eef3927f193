"""TransformerLens' TransformerBridge booted on (a weight-sharing copy of) the user's HF model:
`blocks.{l}.attn.hook_pattern`, `blocks.{l}.attn.hook_attn_scores`, `blocks.{l}.hook_resid_post`, and for site
edits the bridge's own hook points of the same names (`interp.hooks.sites`)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from interp.core.backends.layers import final_logits, shared_weight_copy
from interp.core.backends.protocol import Batch, Edits, PatternHook, edit_hooks
from interp.core.models import LoadedModel
from interp.errors import InterpError


def _or_same(edited, activation):
    return activation if edited is None else edited.to(activation.dtype)


@dataclass
class TransformerLensBackend:
    """The transformer_lens backend: a TransformerBridge whose hook points read patterns and apply edits."""

    model: LoadedModel
    bridge: object
    name: str = "transformer_lens"
    shares_prefix: bool = False

    @classmethod
    def boot(cls, model: LoadedModel) -> "TransformerLensBackend":
        """The backend of `model`: a bridge booted on a copy that shares its weights (the model is left untouched)."""
        from transformer_lens.model_bridge import TransformerBridge

        # The bridge swaps its own components into the model it boots on. Boot it on a structural copy that
        # shares every weight tensor, so the user's model object stays untouched and costs no extra memory.
        hf_model = shared_weight_copy(model.hf_model)
        name_or_path = getattr(hf_model.config, "_name_or_path", "") or type(hf_model).__name__
        bridge = TransformerBridge.boot_transformers(
            name_or_path, hf_model=hf_model, tokenizer=model.tokenizer, device=str(model.device)
        )
        return cls(model, bridge)

    def forward(
        self,
        batch: Batch,
        *,
        edits: Edits | None = None,
        on_pattern: PatternHook | None = None,
        shared_prefix: int = 0,
    ):
        """The batch's final-position logits, the standing edits and `edits` applied through the bridge's hook points
        and each layer's `hook_pattern` handed to `on_pattern`; `shared_prefix` is ignored."""
        edits = edit_hooks(self).applied(batch, edits) or Edits()  # the standing edits (`dampen`), then these
        score_bias, resid_edit, site_edit = edits.score_bias or None, edits.resid or None, edits.sites or None
        hooks = []
        for name, fn in (site_edit or {}).items():  # the same names as TransformerLens' own hook points
            if name not in self.bridge.hook_dict:
                raise InterpError(
                    f"hook point {name!r} does not exist on this TransformerLens bridge; use the hf backend"
                )
            hooks.append((name, lambda act, hook, fn=fn: _or_same(fn(act), act)))
        for layer, bias in (score_bias or {}).items():
            hooks.append(
                (
                    f"blocks.{layer}.attn.hook_attn_scores",
                    lambda scores, hook, bias=bias: scores + bias.to(scores.device),
                )
            )
        for layer, edit in (resid_edit or {}).items():
            hooks.append((f"blocks.{layer}.hook_resid_post", lambda resid, hook, edit=edit: edit(resid)))
        if on_pattern is not None:
            for layer in range(self.model.n_layers):
                hooks.append(
                    (f"blocks.{layer}.attn.hook_pattern", lambda pattern, hook, layer=layer: on_pattern(layer, pattern))
                )
        batch = batch.to(self.model.device)
        with torch.inference_mode():
            logits = self.bridge.run_with_hooks(
                batch.input_ids,
                fwd_hooks=hooks,
                attention_mask=batch.attention_mask,
                position_ids=batch.position_ids,
                return_type="logits",
            )
        return final_logits(logits)
