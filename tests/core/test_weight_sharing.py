"""Models of one job that hold equal weights hold them once, and give the same outputs as before."""

from __future__ import annotations

import copy

import torch

from interp.core.backends.shared_trunk import shared_layers
from interp.core.models import ModelCache, load_model
from interp.core.placement import Placement
from interp.core.weight_sharing import share_equal_weights


def _organism(base: torch.nn.Module, seed: int = 1) -> torch.nn.Module:
    """A copy of `base` whose top layer is changed, as a merged LoRA changes an organism's top layers."""
    organism = copy.deepcopy(base)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in organism.model.layers[-1].parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=generator))
    return organism


def test_equal_parameters_are_held_once_and_outputs_do_not_change(tiny_llama):
    base = tiny_llama.hf_model
    organism = _organism(base)
    ids = torch.randint(0, 1000, (2, 9))
    with torch.no_grad():
        before = organism(ids).logits
    lower = dict(organism.model.layers[0].named_parameters())
    expected = sum(p.nbytes for n, p in organism.named_parameters() if not n.startswith("model.layers.1."))
    freed = share_equal_weights(organism, [base])
    assert freed == expected > 0
    for name, p in organism.model.layers[0].named_parameters():
        assert p is dict(base.model.layers[0].named_parameters())[name] and p is not lower[name]
    for name, p in organism.model.layers[-1].named_parameters():  # changed: its own
        assert p is not dict(base.model.layers[-1].named_parameters())[name]
    assert organism.model.embed_tokens.weight is base.model.embed_tokens.weight
    if base.config.tie_word_embeddings:  # a tie inside the organism is kept
        assert organism.lm_head.weight is organism.model.embed_tokens.weight
    with torch.no_grad():
        assert torch.equal(organism(ids).logits, before)
    assert share_equal_weights(organism, [base]) == 0  # nothing left to share
    assert shared_layers(organism, base) == len(base.model.layers) - 1  # the trunk still sees the shared layers


def test_a_job_cache_loads_an_organism_beside_its_base_sharing_the_lower_layers(tiny_llama_dir, tmp_path):
    base = load_model(str(tiny_llama_dir)).hf_model
    folder = tmp_path / "organism"
    _organism(base).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"):
        if (tiny_llama_dir / name).exists():
            (folder / name).write_bytes((tiny_llama_dir / name).read_bytes())
    cache = ModelCache(Placement(device="cpu"))
    a, b = cache.get(str(tiny_llama_dir)), cache.get(str(folder))
    assert b.hf_model.model.layers[0].mlp.up_proj.weight is a.hf_model.model.layers[0].mlp.up_proj.weight
    assert b.hf_model.model.layers[-1].mlp.up_proj.weight is not a.hf_model.model.layers[-1].mlp.up_proj.weight
