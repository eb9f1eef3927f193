"""Greedy decoding that lets a batch's finished rows go.

transformers' `generate` keeps every row of a batch in every step until the last row is done: a finished row is
fed its pad token and computed like the others. Answers are short on average and long in a few rows (the demo's 72
SmolLM2 answers: 36 new tokens on average, 4 run to the 96-token cap), so most rows of a batch's late steps were
already done. A decoding step on the CPU is mostly the read of the weights, which a smaller batch does not shorten,
so the gain is the rest (measured on the demo's 72 items, batches of 24, idle 2-core CPU: SmolLM2 36.9 s against
46.7 s, Gemma-3 53.3 s against 58.8 s, the same 144 answers token for token).

`greedy_generate` runs the same steps for the rows still going: the prompt pass, then one token a step, the next
token the argmax of the last position's logits (float32, as `generate` reads them), positions counted from each
row's first real token and the attention mask grown by one a step, as `generate` does for a left-padded batch.
A row that emits an end-of-sequence token or whose new text holds a stop string keeps that token and leaves the
batch: its key/value cache rows are dropped (`Cache.batch_select_indices`). The result has `generate`'s layout: the
prompt, then the new tokens, a finished row padded with the pad token.

It stands in for `generate` only where their steps are the same (`supports_greedy_pruning`): greedy decoding, a
decoder-only model that takes position ids and a key/value cache, a generation config that asks for no logits
processing, and an end-of-sequence id. Elsewhere `generate` runs. tests/run/test_greedy.py compares the two token
for token on tiny Llama and Gemma-3 models.
"""

from __future__ import annotations

import inspect
from typing import Sequence

import torch

# Generation-config keys that change no greedy step (ids, output switches, sampling knobs unused by greedy decoding,
# cache and length bookkeeping); any other key set away from its default sends the batch to `generate`.
NEUTRAL_KEYS = {
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "decoder_start_token_id",
    "use_cache",
    "output_attentions",
    "output_hidden_states",
    "output_scores",
    "output_logits",
    "return_dict_in_generate",
    "transformers_version",
    "_from_model_config",
    "do_sample",
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "typical_p",
    "max_length",
    "max_new_tokens",
    "cache_implementation",
}


def supports_greedy_pruning(hf_model) -> bool:
    """Whether `greedy_generate` takes the same steps as `generate` for this model (see the module's docstring)."""
    config = getattr(hf_model, "generation_config", None)
    if config is None or getattr(hf_model.config, "is_encoder_decoder", False):
        return False
    # do_sample is set by the caller (False), so the config's may be anything; beams it may not be
    if getattr(config, "num_beams", None) not in (None, 1):
        return False
    if getattr(config, "cache_implementation", None) not in (None, "dynamic"):
        return False
    if set(config.to_diff_dict()) - NEUTRAL_KEYS:
        return False
    if not eos_ids(hf_model):  # without one, `generate` lets a row stopped by a stop string run on unpadded
        return False
    parameters = inspect.signature(hf_model.forward).parameters
    return "position_ids" in parameters and ("cache" in parameters or "past_key_values" in parameters)


def eos_ids(hf_model) -> list[int]:
    """The end-of-sequence ids `generate` stops a row at: the generation config's."""
    value = hf_model.generation_config.eos_token_id
    if value is None:
        return []
    return [int(v) for v in (value if isinstance(value, (list, tuple)) else [value])]


def greedy_generate(
    hf_model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    *,
    max_new_tokens: int,
    pad_token_id: int,
    tokenizer=None,
    stop_strings: Sequence[str] = (),
) -> torch.Tensor:
    """`generate(input_ids, attention_mask, max_new_tokens, do_sample=False)` for a left-padded batch, each row let
    go once done (an end-of-sequence token, or one of `stop_strings` in its new text, decoded with `tokenizer`).
    Returns [batch, prompt + max_new_tokens] ids (trailing pad columns beyond the longest row trimmed, as `generate`
    stops when every row is done)."""
    from transformers import DynamicCache

    from interp.run.stop_text import StopText

    batch = input_ids.shape[0]
    device = input_ids.device
    stopped = StopText(tokenizer, list(stop_strings), 0) if stop_strings else None  # reads the new tokens only
    new = torch.full((batch, max_new_tokens), pad_token_id, dtype=input_ids.dtype, device=device)
    stops = torch.tensor(eos_ids(hf_model), dtype=input_ids.dtype, device=device)
    alive = torch.arange(batch, device=device)
    mask = attention_mask
    positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)
    cache = DynamicCache(config=hf_model.config.get_text_config(decoder=True))
    key = "cache" if "cache" in inspect.signature(hf_model.forward).parameters else "past_key_values"
    step_ids, steps = input_ids, 0
    while steps < max_new_tokens and alive.numel():
        out = hf_model(
            input_ids=step_ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{key: cache},
        )
        token = out.logits[:, -1].to(dtype=torch.float32).argmax(-1)
        new[alive, steps] = token
        steps += 1
        done = torch.isin(token, stops) if stops.numel() else torch.zeros_like(token, dtype=torch.bool)
        if stopped is not None:
            done |= stopped(new[alive, :steps], None)
        if bool(done.any()):
            keep = (~done).nonzero().squeeze(-1)
            alive, token, mask, positions = alive[keep], token[keep], mask[keep], positions[keep]
            cache.batch_select_indices(keep)
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
        positions = positions[:, -1:] + 1
        step_ids = token[:, None]
    return torch.cat([input_ids, new[:, :steps]], dim=-1)
