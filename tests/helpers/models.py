"""Models for the tests: tiny random models built from a config (fast) and booted-backend caches.

The tiny models use the real tokenizers of the packaged models (read from the dequantised cache folder,
offline), so every prompt tokenizes exactly as it would for the real judge, while a forward pass costs
milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from interp.core.backends import make_backend
from interp.core.models import LoadedModel, resolve_spec

SMOLLM2 = "smollm2-135m-instruct"
GEMMA3 = "gemma3-270m"
TINY_SHAPE = dict(
    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=64, intermediate_size=128
)


def packaged_tokenizer(alias: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_spec(alias)[0])


def write_gguf(path: Path, architecture: str, metadata: Callable = lambda writer: None) -> Path:
    """A small but valid GGUF file: header, the metadata `metadata(writer)` adds to a `gguf.GGUFWriter` declaring
    `architecture`, and one tensor."""
    import numpy as np
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), architecture)
    metadata(writer)
    writer.add_tensor("token_embd.weight", np.zeros((8, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def save_tiny(folder: Path, config, model_class, tokenizer, seed: int) -> Path:
    torch.manual_seed(seed)
    model = model_class(config).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def three_layer_tiny(kind: str, folder: Path, tokenizer) -> Path:
    """A 3-layer random Llama or Gemma-3 (window wider than any test prompt) with `tokenizer`, saved to
    `folder`: a middle layer to steer or mask, and no sliding mask for the 4-D mask oracle to model."""
    from transformers import Gemma3ForCausalLM, LlamaForCausalLM

    shape = dict(num_hidden_layers=3, head_dim=16, max_position_embeddings=2048, initializer_range=0.02)
    if kind == "llama":
        return save_tiny(folder, tiny_llama_config(tokenizer, **shape), LlamaForCausalLM, tokenizer, seed=0)
    config = tiny_gemma3_config(tokenizer, **shape, sliding_window=1024, layer_types=None)  # default layer types
    return save_tiny(folder, config, Gemma3ForCausalLM, tokenizer, seed=0)


_BOOTED: dict[tuple[int, str], object] = {}


def backend_for(model: LoadedModel, name: str):
    """One booted backend per (model, backend name) for the whole session (booting TL is not free)."""
    key = (id(model), name)
    if key not in _BOOTED:
        _BOOTED[key] = make_backend(model, name)
    return _BOOTED[key]


def tiny_llama_config(tokenizer, **overrides):
    from transformers import LlamaConfig

    values = dict(
        TINY_SHAPE,
        vocab_size=len(tokenizer),
        max_position_embeddings=4096,
        initializer_range=0.2,  # larger than the default so attention is far from uniform
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        attn_implementation="eager",
    )
    values.update(overrides)
    return LlamaConfig(**values)


def tiny_gemma3_config(tokenizer, **overrides):
    from transformers import Gemma3TextConfig

    values = dict(
        TINY_SHAPE,
        head_dim=16,
        vocab_size=len(tokenizer),
        max_position_embeddings=4096,
        sliding_window=48,  # shorter than every judge prompt, so the sliding mask matters
        layer_types=["sliding_attention", "full_attention"],
        initializer_range=0.2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        attn_implementation="eager",
    )
    values.update(overrides)
    return Gemma3TextConfig(**values)


def module_hooks(module: torch.nn.Module) -> dict[str, list[str]]:
    """Names of the forward (pre-)hooks on every submodule, to see whether anything was left behind."""
    found = {}
    for name, sub in module.named_modules():
        hooks = [
            getattr(h, "__qualname__", repr(h))
            for h in (*sub._forward_hooks.values(), *sub._forward_pre_hooks.values())
        ]
        if hooks:
            found[name] = hooks
    return found


class BackendSet:
    """The three backends on one LoadedModel, booted lazily and once; remembers the model's output first.

    `before` holds plain HF logits and attentions on a probe input computed before any backend was booted,
    so tests can check that booting left the user's model object as it was.
    """

    def __init__(self, model: LoadedModel):
        self.model = model
        self.probe = torch.tensor([model.tokenizer.encode("The judge reads two answers and picks one.")])
        with torch.no_grad():
            out = model.hf_model(self.probe, output_attentions=True)
        self.before_logits = out.logits.detach().clone()
        self.before_attentions = [a.detach().clone() for a in out.attentions]
        # transformers installs its own output-capturing hooks on the first output_attentions call
        self.before_hooks = module_hooks(model.hf_model)
        self._backends: dict = {}

    module_hooks = staticmethod(module_hooks)

    def __getitem__(self, name: str):
        if name not in self._backends:
            self._backends[name] = make_backend(self.model, name)
        return self._backends[name]


@dataclass
class RealRun:
    root: Path
    config: object  # interp.config.RunConfig
    loaded: dict
