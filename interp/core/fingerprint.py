"""What a model *is*, as a short hash of its content: the key of every cache whose entries a model's weights
determine (generated answers, the frozen lower layers' states of organism training).

A model's name, folder or `source` says where it came from, not what it holds: a model retrained into the same
folder, a `generation_config.json` edited in place, or two models wrapped from memory (every one of them
`source="user"`) would share a key. The fingerprint reads the loaded objects instead:

- every parameter's name, shape and dtype, the exact integer sum of its bit patterns (order-free, so the same
  on any thread count or device) and an evenly strided sample of its bits;
- the generation config (what `generate` falls back on: eos ids, repetition penalty, ...);
- the tokenizer's vocabulary fingerprint and chat template.

It costs one pass over the weights (a 135M-parameter model on the CPU: about 0.2 s) and is computed when a key
is made, so a model changed in place between two runs gets a new one.
"""

from __future__ import annotations

import hashlib
import json

import torch

_SAMPLES = 64  # strided elements per tensor kept verbatim beside its sum
_BITS = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}


def _tensor_digest(tensor: torch.Tensor) -> list:
    flat = tensor.detach().contiguous().reshape(-1)
    bits = flat.view(_BITS[flat.element_size()]) if flat.element_size() in _BITS else flat.view(torch.uint8)
    step = max(1, bits.numel() // _SAMPLES)
    sample = bits[::step][:_SAMPLES].cpu().tolist()
    return [list(tensor.shape), str(tensor.dtype), _exact_sum(bits), sample]


_CHUNK = 1 << 22  # elements summed at once: an int64 copy of 32 MB, not of the whole tensor


def _exact_sum(bits: torch.Tensor) -> int:
    """The exact integer sum of a flat integer tensor, in int64 chunks: torch casts a whole tensor to int64 to sum
    it, which for Gemma-3's embedding (168M elements) held 1.3 GB more at the peak of every job that keyed an answer
    by the model."""
    return sum(int(chunk.to(torch.int64).sum().item()) for chunk in bits.split(_CHUNK))


def weights_fingerprint(hf_model: torch.nn.Module) -> str:
    """A hash of every parameter's content (see the module's docstring); the same weights give the same hash
    wherever they are loaded from."""
    digest = hashlib.sha256()
    with torch.no_grad():
        for name, parameter in hf_model.named_parameters():
            digest.update(json.dumps([name, _tensor_digest(parameter)]).encode())
    return digest.hexdigest()[:24]


def generation_settings(hf_model: torch.nn.Module) -> dict:
    """The model's generation config as data (what differs from transformers' defaults), without the version
    stamp transformers writes into it."""
    config = getattr(hf_model, "generation_config", None)
    if config is None:
        return {}
    settings = config.to_diff_dict()
    settings.pop("transformers_version", None)
    return settings


def model_fingerprint(hf_model: torch.nn.Module, tokenizer) -> str:
    """Weights, generation config and tokenizer: what decides a model's answers to a given prompt text."""
    payload = {
        "weights": weights_fingerprint(hf_model),
        "generation": generation_settings(hf_model),
        "tokenizer": tokenizer_fingerprint(tokenizer),
        "chat_template": getattr(tokenizer, "chat_template", None),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:24]


def tokenizer_fingerprint(tokenizer) -> str:
    """A short hash of a tokenizer's vocabulary: token spans stored with it are only valid for the same one."""
    vocab = tokenizer.get_vocab()
    digest = hashlib.sha256(json.dumps(sorted(vocab.items())[:5000]).encode() + str(len(vocab)).encode())
    return digest.hexdigest()[:16]
