"""Judges that share their lower layers (a base model and its LoRA organisms) run them once per batch, with
the same verdicts and span attention as each judge's own full pass."""

from __future__ import annotations

import copy

import pytest
import torch

from interp.core.backends.hf import HFBackend
from interp.core.backends.shared_trunk import SharedTrunkBackend, TrunkPool, shared_layers, trunk_backends
from interp.core.judge import judge_batch, label_tokens
from interp.core.models import wrap_model
from interp.core.spans import build_judge_prompt
from tests.helpers.models import tiny_gemma3_config, tiny_llama_config
from tests.helpers.reference import BATCH_ITEMS, assert_close

TOL = 1e-5  # float rounding only (the plain pass shares the instructions' prefix, the trunk pass does not)


def family(config, model_class, tokenizer, kind: str, top: int = 1):
    """A base model and two 'organisms': copies whose top `top` layers are changed, as a merged LoRA changes them."""
    torch.manual_seed(0)
    base = model_class(config).eval()
    models = {"base": wrap_model(base, tokenizer, name="base", kind=kind)}
    for seed in (1, 2):
        organism = copy.deepcopy(base)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for layer in organism.model.layers[-top:]:
                for p in layer.parameters():
                    p.add_(0.3 * torch.randn(p.shape, generator=generator))
        models[f"organism-{seed}"] = wrap_model(organism, tokenizer, name=f"organism-{seed}", kind=kind)
    return models


@pytest.fixture(params=["llama", "gemma3"])
def judges(request, smollm2_tokenizer, gemma3_tokenizer):
    from transformers import Gemma3ForCausalLM, LlamaForCausalLM

    if request.param == "llama":
        return family(
            tiny_llama_config(smollm2_tokenizer, num_hidden_layers=4), LlamaForCausalLM, smollm2_tokenizer, "post"
        )
    config = tiny_gemma3_config(
        gemma3_tokenizer, num_hidden_layers=4, layer_types=["sliding_attention", "full_attention"] * 2
    )
    return family(config, Gemma3ForCausalLM, gemma3_tokenizer, "pre")


def test_shared_layers_compares_weights(judges):
    base, organism = judges["base"].hf_model, judges["organism-1"].hf_model
    assert shared_layers(base, organism) == 3 and shared_layers(base, base) == 4
    assert shared_layers(judges["organism-1"].hf_model, judges["organism-2"].hf_model) == 3
    other = copy.deepcopy(base)
    with torch.no_grad():
        other.model.layers[0].mlp.up_proj.weight[0, 0] += 1.0
    assert shared_layers(base, other) == 0


@pytest.mark.parametrize("readout", ["final", "after"])
def test_every_judge_gets_its_own_verdict_and_attention_with_one_trunk_pass_per_batch(judges, readout):
    backends = trunk_backends(judges)
    assert all(isinstance(b, SharedTrunkBackend) for b in backends.values())
    trunk = backends["base"].trunk
    assert trunk.layers == 3 and all(b.trunk is trunk for b in backends.values())
    tokenizer = judges["base"].tokenizer
    labels = label_tokens(tokenizer)
    prompts = [build_judge_prompt(judges["base"], "helpfulness", q, a, b) for q, a, b in BATCH_ITEMS]
    for name, model in judges.items():
        shared = judge_batch(backends[name], prompts, labels, readout=readout)
        plain = judge_batch(HFBackend(model), prompts, labels, readout=readout)
        for s, p in zip(shared, plain, strict=False):
            assert s.probs["A"] == pytest.approx(p.probs["A"], abs=TOL) and s.label_mass == pytest.approx(
                p.label_mass, abs=TOL
            )
            assert_close(s.mass, p.mass, TOL, f"{name}: span attention")
    assert trunk.passes == 1  # one batch: its lower layers ran once for the three judges
    # the organisms differ from the base (their own top layer ran): not one judge's numbers copied to all
    p_a = {name: judge_batch(backends[name], prompts, labels, readout=readout)[0].probs["A"] for name in judges}
    assert len({round(v, 6) for v in p_a.values()}) == 3
    assert trunk.passes == 2 and not trunk.entries  # read by all three, then dropped: a new round runs it again


@pytest.mark.parametrize("layers", [(0,), (3,), (0, 1, 2, 3)])
def test_a_score_bias_is_split_between_the_trunk_and_each_judges_own_layers(judges, layers):
    """A mask (score bias) on the trunk's layers, on a judge's own layer, or on both: each judge's verdict equals
    its plain pass under the same mask; the trunk pass is keyed by its layers' bias (a new mask runs it again)."""
    from interp.hooks.compile import bias_builder
    from interp.hooks.spec import AttentionIntervention

    backends = trunk_backends(judges)
    trunk = backends["base"].trunk
    prompts = [build_judge_prompt(judges["base"], "helpfulness", q, a, b) for q, a, b in BATCH_ITEMS]
    labels = label_tokens(judges["base"].tokenizer)
    for name, model in judges.items():
        bias = bias_builder(AttentionIntervention(target="a", alpha=0.0, layers=layers), model)
        shared = judge_batch(backends[name], prompts, labels, bias=bias)
        plain = judge_batch(HFBackend(model), prompts, labels, bias=bias)
        unmasked = judge_batch(HFBackend(model), prompts, labels)
        assert [s.probs["A"] for s in shared] == pytest.approx([p.probs["A"] for p in plain], abs=TOL)
        assert any(
            abs(p.probs["A"] - u.probs["A"]) > 1e-4 for p, u in zip(plain, unmasked, strict=False)
        )  # the mask acts
    assert trunk.passes == 1


@pytest.mark.parametrize("layer", [0, 3])
def test_steering_in_the_trunk_runs_the_plain_pass_and_above_it_the_judges_own_layers(judges, layer):
    backends = trunk_backends(judges)
    model = judges["organism-1"]
    prompts = [build_judge_prompt(model, "helpfulness", q, a, b) for q, a, b in BATCH_ITEMS]
    labels = label_tokens(model.tokenizer)
    edit = lambda batch, offsets, prompts: {layer: lambda h: h + 0.5}  # noqa: E731
    shared = judge_batch(backends["organism-1"], prompts, labels, edit=edit)
    plain = judge_batch(HFBackend(model), prompts, labels, edit=edit)
    clean = judge_batch(HFBackend(model), prompts, labels)
    assert [s.probs["A"] for s in shared] == pytest.approx([p.probs["A"] for p in plain], abs=TOL)
    assert any(abs(p.probs["A"] - c.probs["A"]) > 1e-4 for p, c in zip(plain, clean, strict=False))  # the edit acts
    assert backends["organism-1"].trunk.passes == (1 if layer == 3 else 0)
    assert len(model.hf_model.model.layers) == 4 and all(  # the stack is whole again and no hook is left
        not block._forward_hooks for block in model.hf_model.model.layers
    )


def _zero_head(tensor):
    out = tensor.clone()
    out[..., 0, :] = 0.0  # [batch, pos, head, d_head]: head 0's output
    return out


def _flat_pattern(tensor):
    keep = (tensor > 0).to(tensor.dtype)  # [batch, head, query, key]: uniform over the keys each row may see
    return keep / keep.sum(-1, keepdim=True)


NODES = {
    "hook_z": ("attn.hook_z", _zero_head),
    "pattern": ("attn.hook_pattern", _flat_pattern),
    "mlp_out": ("hook_mlp_out", torch.zeros_like),  # zero: a scale would be undone by Gemma-3's post-MLP norm
}


@pytest.mark.parametrize("point", list(NODES))
def test_a_node_in_the_judges_own_layers_reuses_the_trunk_and_equals_the_plain_pass(judges, point):
    """A site edit whose hook points lie above the trunk (a route part, a mean-ablated reader) runs only the
    judge's own layers on the trunk's entry, which the clean pass already made; one in the trunk's layers runs
    the plain pass. Either way the verdict equals the plain backend's under the same edit, and the edit acts."""
    name, fn = NODES[point]
    pool = TrunkPool()
    held = list(judges.values())
    labels = label_tokens(judges["base"].tokenizer)
    for judge, model in judges.items():
        backend = pool.backend(model, held)
        prompts = [build_judge_prompt(model, "helpfulness", q, a, b) for q, a, b in BATCH_ITEMS]
        for layer in (3, 0):
            edit = lambda batch, offsets, prompts, layer=layer: {f"blocks.{layer}.{name}": fn}  # noqa: E731
            shared = judge_batch(backend, prompts, labels, edit=edit)
            plain = judge_batch(HFBackend(model), prompts, labels, edit=edit)
            clean = judge_batch(HFBackend(model), prompts, labels)
            assert [s.probs["A"] for s in shared] == pytest.approx([p.probs["A"] for p in plain], abs=TOL)
            assert any(abs(p.probs["A"] - c.probs["A"]) > 1e-4 for p, c in zip(plain, clean, strict=False)), (
                judge,
                layer,
            )
        assert isinstance(backend, SharedTrunkBackend)
        assert judge_batch(backend, prompts, labels)[0].probs["A"] == pytest.approx(clean[0].probs["A"], abs=TOL)
    # one batch: the trunk ran once, for the first judge's edit above it; the clean passes and the other judges
    # read that entry, and the edits at layer 0 ran plain
    assert len(pool.trunks) == 1 and pool.trunks[0].passes == 1


@pytest.mark.parametrize("name", ["blocks.9.hook_mlp_out", "blocks.3.hook_nothing", "mlp_out", "blocks.x.hook_z"])
def test_a_node_name_the_model_lacks_is_one_line_on_the_trunk_too(judges, name):
    from interp.errors import InterpError

    backend = trunk_backends(judges)["organism-1"]
    prompts = [build_judge_prompt(judges["organism-1"], "helpfulness", q, a, b) for q, a, b in BATCH_ITEMS]
    edit = lambda batch, offsets, prompts: {name: torch.zeros_like}  # noqa: E731
    with pytest.raises(InterpError, match="does not exist"):
        judge_batch(backend, prompts, label_tokens(judges["base"].tokenizer), edit=edit)


def test_a_pool_shares_the_trunk_between_judges_that_come_one_at_a_time(judges):
    """The causal test judges each judge over all items in turn: the pool keeps the trunk's entries for the
    judges after the first, and every verdict equals the judge's plain pass."""
    pool = TrunkPool()
    held = list(judges.values())
    labels = label_tokens(judges["base"].tokenizer)
    for model in judges.values():
        backend = pool.backend(model, held)
        assert isinstance(backend, SharedTrunkBackend)
        for rows in (BATCH_ITEMS[:2], BATCH_ITEMS[2:]):
            batch = [build_judge_prompt(model, "helpfulness", q, a, b) for q, a, b in rows]
            shared = judge_batch(backend, batch, labels)
            plain = judge_batch(HFBackend(model), batch, labels)
            assert [s.probs["A"] for s in shared] == pytest.approx([p.probs["A"] for p in plain], abs=TOL)
    assert len(pool.trunks) == 1 and pool.trunks[0].passes == 2  # two batches, three judges: two trunk passes


def test_a_pool_gives_an_unrelated_judge_the_plain_backend(judges, tiny_llama):
    assert type(TrunkPool().backend(tiny_llama, list(judges.values()))) is HFBackend


def test_unrelated_judges_run_plain(judges, tiny_llama):
    backends = trunk_backends({"base": judges["base"], "stranger": tiny_llama})
    assert all(type(b) is HFBackend for b in backends.values())


def test_organism_training_splits_the_stack_with_the_same_function(judges):
    """Training's frozen lower layers (`interp.organisms.frozen.only_layers_from`) go through `layers_between` too: the
    cached hidden states plus the top layers give the full model's logits (Gemma-3 too: its per-layer kinds are
    sliced)."""
    from interp.organisms.frozen import check_frozen_split

    model = judges["base"]
    ids = model.tokenizer.encode("Which answer is better, A or B? Say it in one letter.")
    assert check_frozen_split(model.hf_model, 2, ids, model.tokenizer.pad_token_id) < 1e-4


def test_a_trunk_key_reads_a_bfloat16_bias_and_tells_its_dtype_apart():
    """A GPU run judges in bfloat16 (numpy has no such type): the key hashes the bias's bytes, with its dtype."""
    from interp.core.backends.protocol import Batch
    from interp.core.backends.shared_trunk import _digest

    batch = Batch(torch.ones(1, 4, dtype=torch.long), torch.ones(1, 4, dtype=torch.long))
    bias = torch.zeros(1, 1, 4, 4)
    bias[..., 1] = -2.0
    key16 = _digest(batch, None, {0: bias.to(torch.bfloat16)})
    assert key16 != _digest(batch, None, {0: bias})
    assert key16 == _digest(batch, None, {0: bias.to(torch.bfloat16).clone()})
