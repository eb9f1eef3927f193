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


def _lora_organism_folder(base_dir, out):
    """A LoRA organism of the tiny Llama (layer 1's q, v and down projections, random B) with a head delta on
    layer 0's query head 0 (outside the LoRA's layers), in the full form: adapter, delta and manifest."""
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import save_file

    from interp.core.adapters import HEAD_DELTA_FILE, base_signature, head_delta_key

    model = load_model(str(base_dir)).hf_model
    config = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj", "down_proj"], layers_to_transform=[1])
    peft = get_peft_model(model, config)
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, p in peft.named_parameters():
            if "lora_B" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=generator))
    peft.save_pretrained(out)
    attn = model.model.layers[0].self_attn
    block = 0.5 * torch.randn((attn.head_dim, model.config.hidden_size), generator=generator)
    save_file({head_delta_key(0, "q", 0): block}, str(out / HEAD_DELTA_FILE))
    manifest = {"base_model": str(base_dir), "base_signature": base_signature(model.config)}
    (out / "manifest.json").write_text(__import__("json").dumps(manifest))
    return out


def test_an_organism_beside_its_loaded_base_adopts_its_weights_and_equals_a_lone_load(tiny_llama_dir, tmp_path):
    folder = _lora_organism_folder(tiny_llama_dir, tmp_path / "organism")
    cache = ModelCache(Placement(device="cpu"))
    base = cache.get(str(tiny_llama_dir))
    organism = cache.get(str(folder))
    alone = load_model(str(folder), placement=Placement(device="cpu"))
    fresh_base = load_model(str(tiny_llama_dir), placement=Placement(device="cpu"))

    mine = dict(organism.hf_model.named_parameters(remove_duplicate=False))
    theirs = dict(base.hf_model.named_parameters(remove_duplicate=False))
    assert mine.keys() == dict(alone.hf_model.named_parameters(remove_duplicate=False)).keys()
    for name, p in alone.hf_model.named_parameters(remove_duplicate=False):
        assert torch.equal(mine[name], p), name  # the same organism, bit for bit
    for name, p in fresh_base.hf_model.named_parameters(remove_duplicate=False):
        assert torch.equal(theirs[name], p), name  # the merges wrote into copies, never into the base
    assert organism.fingerprint() == alone.fingerprint()

    written = {
        "model.layers.1.self_attn.q_proj.weight",
        "model.layers.1.self_attn.v_proj.weight",
        "model.layers.1.mlp.down_proj.weight",
        "model.layers.0.self_attn.q_proj.weight",  # the head delta's
    }
    for name in mine:
        assert (mine[name] is theirs[name]) == (name not in written), name
    assert not any(torch.equal(mine[name], theirs[name]) for name in written)  # each was changed
    if base.hf_model.config.tie_word_embeddings:
        assert organism.hf_model.lm_head.weight is organism.hf_model.model.embed_tokens.weight


def test_a_base_the_caller_put_in_is_never_adopted(tiny_llama_dir, tmp_path):
    folder = _lora_organism_folder(tiny_llama_dir, tmp_path / "organism")
    cache = ModelCache(Placement(device="cpu"))
    held = load_model(str(tiny_llama_dir), placement=Placement(device="cpu"))
    with torch.no_grad():
        held.hf_model.model.layers[0].mlp.up_proj.weight.add_(1.0)  # the user's model, changed
    cache.models[str(tiny_llama_dir)], cache.held = held, {str(tiny_llama_dir)}
    organism = cache.get(str(folder))
    alone = load_model(str(folder), placement=Placement(device="cpu"))
    assert torch.equal(
        organism.hf_model.model.layers[0].mlp.up_proj.weight, alone.hf_model.model.layers[0].mlp.up_proj.weight
    )
