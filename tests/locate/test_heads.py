"""Head localisation on a tiny-model run: the AtP* masked output is the exact masked output, every method ranks
every head, the mask scan is the engine's re-judging, the CLI's --json shape; scoring on hand-made rankings."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import interp
from interp.core.models import attention_implementation
from interp.core.spans import tokenized_judge_prompt
from interp.errors import InterpError
from interp.hooks.context import dampen
from interp.locate.heads import METHODS, head_attributions, masked_change, score_map
from interp.metrics.localize import precision_at_k, ranking_auroc, top_k
from tests.api.test_runs import tiny_run  # noqa: F401  (fixture)

# ---- scoring on hand-made rankings ----------------------------------------------------------------------


def test_auroc_and_precision_on_hand_made_rankings():
    heads = [(layer, head) for layer in range(3) for head in range(3)]
    truth = [(2, 0), (1, 1)]
    perfect = {h: (10.0 if h in truth else float(i)) for i, h in enumerate(heads)}
    assert ranking_auroc(perfect, truth) == 1.0 and precision_at_k(perfect, truth) == 1.0
    worst = {h: -v for h, v in perfect.items()}
    assert ranking_auroc(worst, truth) == 0.0 and precision_at_k(worst, truth) == 0.0
    # one true head first, the other below 3 of the 7 others: AUROC = (7 + 4) / 14, precision at 2 = 1/2
    mixed = {h: 0.0 for h in heads} | {(2, 0): 9.0, (0, 0): 5.0, (0, 1): 4.0, (0, 2): 3.0, (1, 1): 2.0}
    assert ranking_auroc(mixed, truth) == pytest.approx(11 / 14)
    assert precision_at_k(mixed, truth) == 0.5 and precision_at_k(mixed, truth, k=5) == pytest.approx(2 / 5)
    flat = {h: 1.0 for h in heads}
    assert ranking_auroc(flat, truth) == 0.5  # ties count half: a constant ranking is chance
    assert ranking_auroc(perfect | {(2, 0): float("nan")}, truth) == pytest.approx(7 / 14)  # NaN ranks last
    assert top_k(mixed, 2) == [(2, 0), (0, 0)]
    with pytest.raises(InterpError, match="no score for the true head"):
        ranking_auroc(perfect, [(9, 9)])
    with pytest.raises(InterpError, match="some heads, not all"):
        ranking_auroc(perfect, heads)


# ---- AtP* on a tiny model -----------------------------------------------------------------------------


def test_masked_change_is_the_exact_masked_output(tiny_llama):
    """The head output AtP* uses under the mask is the one the toolkit's own mask produces (layer 0: nothing
    upstream changes), at every query position and for every head (grouped-query values)."""
    prompt = tokenized_judge_prompt(
        tiny_llama, "helpfulness", "What is 2 + 2?", "It is four, of course.", "Five, I believe it is."
    )
    ids = torch.tensor([prompt.input_ids])
    hf = tiny_llama.hf_model
    attn = hf.model.layers[0].self_attn
    captured = {}
    hooks = [
        attn.o_proj.register_forward_pre_hook(lambda m, a: captured.__setitem__("z", a[0].detach().clone())),
        attn.v_proj.register_forward_hook(lambda m, a, o: captured.__setitem__("v", o.detach().clone())),
    ]
    try:
        with attention_implementation(hf, "eager"), torch.no_grad():
            out = hf(input_ids=ids, output_attentions=True)
            clean = captured["z"]
            with dampen(tiny_llama, target=prompt.spans["a"], alpha=0.0, layers=[0]):
                hf(input_ids=ids)
            masked = captured["z"]
    finally:
        for hook in hooks:
            hook.remove()
    n_heads, T = tiny_llama.n_heads, ids.shape[1]
    dim = clean.shape[-1] // n_heads
    z = clean[0].view(T, n_heads, dim).transpose(0, 1)
    v = (
        captured["v"][0]
        .view(T, -1, dim)
        .transpose(0, 1)
        .repeat_interleave(n_heads // (captured["v"].shape[-1] // dim), 0)
    )
    delta = masked_change(out.attentions[0][0], v, z, prompt.spans["a"])
    assert delta.abs().max() > 1e-4  # the mask changes the outputs
    torch.testing.assert_close(z + delta, masked[0].view(T, n_heads, dim).transpose(0, 1), atol=1e-5, rtol=1e-4)


def _margin_slope(hf, ids, labels, ablate, eps: float = 1e-3) -> float:
    """d(verdict margin)/d(scale) at 0, by finite difference: `ablate(scale)` registers the scaled ablation, returns its
    handle."""
    from interp.locate.heads import verdict_margin

    def margin(scale: float) -> float:
        hook = ablate(scale)
        try:
            with torch.no_grad():
                return float(verdict_margin(hf(input_ids=ids).logits[0, -1], labels, 0))
        finally:
            hook.remove()

    return (margin(eps) - margin(0.0)) / eps


def test_head_attributions_are_first_order_estimates(tiny_llama):
    """Mean-ablating one head's output at the last layer: the AtP estimate matches the exact margin change
    for a small ablation (the estimate is linear in the change; scaled by 1e-3 it is exact to first order)."""
    from interp.core.judge import label_tokens

    prompt = tokenized_judge_prompt(tiny_llama, "helpfulness", "Name a colour.", "Blue is a colour.", "A chair.")
    estimates = head_attributions(tiny_llama, prompt.input_ids, prompt.spans["a"], 0)
    layers = tiny_llama.n_layers
    assert estimates["atp"].shape == estimates["atp-output"].shape == (layers, tiny_llama.n_heads)
    hf, last, head = tiny_llama.hf_model, layers - 1, 1
    dim = hf.config.hidden_size // tiny_llama.n_heads
    ids = torch.tensor([prompt.input_ids])
    labels = label_tokens(tiny_llama.tokenizer).ids

    def ablate(scale: float):
        def hook(module, args):
            x = args[0].clone()
            block = x[..., head * dim : (head + 1) * dim]
            x[..., head * dim : (head + 1) * dim] = block + scale * (block.mean(1, keepdim=True) - block)
            return (x,)

        return hf.model.layers[last].self_attn.o_proj.register_forward_pre_hook(hook)

    exact = _margin_slope(hf, ids, labels, ablate)
    assert exact != 0
    assert float(estimates["atp-output"][last, head]) == pytest.approx(exact, rel=2e-2, abs=1e-4)


def test_mlp_attributions_are_first_order_estimates(tiny_llama):
    """Mean-ablating one layer's MLP output (its mean over the prompt's positions): the "atp-mlp" estimate is the
    exact first-order change of the verdict margin, at the first layer, whose change runs through every later one."""
    from interp.core.judge import label_tokens

    prompt = tokenized_judge_prompt(tiny_llama, "helpfulness", "Name a colour.", "Blue is a colour.", "A chair.")
    estimates = head_attributions(tiny_llama, prompt.input_ids, prompt.spans["a"], 0)
    assert estimates["atp-mlp"].shape == (tiny_llama.n_layers,)
    hf, ids, labels = tiny_llama.hf_model, torch.tensor([prompt.input_ids]), label_tokens(tiny_llama.tokenizer).ids

    def ablate(scale: float):
        return hf.model.layers[0].mlp.register_forward_hook(
            lambda m, a, out: out + scale * (out.mean(1, keepdim=True) - out)
        )

    exact = _margin_slope(hf, ids, labels, ablate)
    assert exact != 0
    assert float(estimates["atp-mlp"][0]) == pytest.approx(exact, rel=2e-2, abs=1e-4)


def test_head_attributions_of_a_frozen_judge_are_those_of_the_same_judge_unfrozen(tiny_llama):
    """An organism's judge comes out of peft's merge with every weight frozen (requires_grad False): AtP still
    differentiates through the head outputs, and gives the same estimates as with trainable weights."""
    prompt = tokenized_judge_prompt(tiny_llama, "helpfulness", "Name a colour.", "Blue is a colour.", "A chair.")
    trainable = head_attributions(tiny_llama, prompt.input_ids, prompt.spans["a"], 0)
    tiny_llama.hf_model.requires_grad_(False)
    try:
        frozen = head_attributions(tiny_llama, prompt.input_ids, prompt.spans["a"], 0)
    finally:
        tiny_llama.hf_model.requires_grad_(True)
    for name in ("atp", "atp-output"):
        assert torch.allclose(frozen[name], trainable[name], atol=1e-6)
        assert frozen[name].abs().sum() > 0


# ---- the command and the API on a tiny run ------------------------------------------------------------


def test_localize_ranks_every_head_per_method(tiny_run, tiny_llama):  # noqa: F811
    root, judge = tiny_run
    table = interp.localize(root, judge, methods=list(METHODS), n_mask_items=2, progress=False)
    n = tiny_llama.n_layers * tiny_llama.n_heads
    assert set(table["method"]) == set(METHODS) and len(table) == len(METHODS) * n
    for method, rows in table.groupby("method"):
        assert sorted(rows["rank"]) == list(range(1, n + 1)) and rows["single_judge"].all()
        assert np.allclose(rows["score"], rows["effect"].abs()) and rows["score"].is_monotonic_decreasing
        assert len(score_map(table, method)) == n
    assert (table[table["method"] == "mask"]["n_items"] == 2).all()
    assert table[table["method"] != "attention"]["effect"].abs().sum() > 0


def test_localize_cli_json(tiny_run, tiny_llama, forked_cli):  # noqa: F811
    root, judge = tiny_run
    result = forked_cli(
        "localize", str(root), "--judge", judge, "--method", "atp", "--method", "attention", "--json", "--no-progress"
    )
    assert result.returncode == 0, result.stderr
    heads = json.loads(result.stdout)["heads"]
    n = tiny_llama.n_layers * tiny_llama.n_heads
    assert len(heads) == 2 * n and {h["method"] for h in heads} == {"atp", "attention"}
    assert all(
        set(h) >= {"layer", "head", "score", "method", "single_judge"} and h["single_judge"] is True for h in heads
    )
    assert (
        root
        / "figures"
        / f"localize_{__import__('interp.storage', fromlist=['keyed_label']).keyed_label(judge)}_atp.png"
    ).is_file()
    bad = forked_cli("localize", str(root), "--judge", judge, "--method", "guess")
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "guess" in bad.stderr
    other = forked_cli("localize", str(root), "--judge", "nobody")
    assert other.returncode == 2 and "did not judge this run" in other.stderr
