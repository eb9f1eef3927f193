"""Attention interventions: specs, the compiled score bias, and its exactness.

Most checks run on tiny random Llama and Gemma-3 models (2 layers, 4 heads, 2 kv heads, hidden 64) that
share SmolLM2's tokenizer; the `slow` ones repeat the key checks on the two packaged models.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from interp.core.backends import BACKENDS, Edits, left_pad
from interp.core.judge import judge_batch, label_tokens
from interp.core.models import LoadedModel, attention_implementation, load_model, resolve_spec
from interp.core.spans import build_judge_prompt
from interp.errors import InterpError
from interp.hooks.compile import (
    bias_builder,
    compile_bias,
    resolve_target,
    scale_and_renormalise,
)
from interp.hooks.context import dampen, emphasise
from interp.hooks.emphasis import emphasis_spec
from interp.hooks.nodes import as_intervention
from interp.hooks.spec import AttentionIntervention, load_spec, validate_against
from tests.helpers.models import backend_for, three_layer_tiny

PAIRS = [
    ("What is the capital of France?", "Paris is the capital of France.", "The capital is Lyon, I think."),
    ("Name a prime number.", "Seven is prime.", "Nine, because it is odd and therefore prime."),
]


# ---- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def tokenizer_folder():
    return resolve_spec("smollm2-135m-instruct")[0]


@pytest.fixture(scope="session", params=["llama", "gemma3"])
def tiny(request, tmp_path_factory, tokenizer_folder) -> LoadedModel:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
    return load_model(str(three_layer_tiny(request.param, tmp_path_factory.mktemp(f"tiny-{request.param}"), tokenizer)))


def prompts_for(model: LoadedModel, pairs=PAIRS):
    return [build_judge_prompt(model, "helpfulness", *pair) for pair in pairs]


def batch_for(model: LoadedModel, prompts):
    return left_pad([p.input_ids for p in prompts], model.tokenizer.pad_token_id)


def compiled(spec, model, batch, offsets, prompts, **authors):
    targets = [
        resolve_target(spec, p, judge_model=model.name, author_a=None, author_b=None, **authors) for p in prompts
    ]
    return compile_bias(spec, batch, offsets, prompts, model.n_layers, model.n_heads, targets), targets


def capture(backend, batch, score_bias=None):
    patterns = {}
    logits = backend.forward(
        batch,
        on_pattern=lambda layer, p: patterns.__setitem__(layer, p.detach().float().clone()),
        edits=Edits(score_bias=score_bias or {}),
    )
    return logits, patterns


def hidden_keys(width: int, offsets, targets, queries: str) -> torch.Tensor:
    """[batch, query, key] True where the spec hides/dampens a key for a query (built independently)."""
    mask = torch.zeros(len(offsets), width, width, dtype=torch.bool)
    for row, ((start, end), offset) in enumerate(zip(targets, offsets, strict=False)):
        rows = slice(width - 1, width) if queries == "final" else slice(offset + end, width)
        mask[row, rows, offset + start : offset + end] = True
    return mask


def oracle_logits(model: LoadedModel, prompt, span, queries: str, *, keep_last: bool, attention: str) -> torch.Tensor:
    """A plain HF forward with a 4-D additive mask: causal, plus -inf on the hidden keys; under the backend's
    attention implementation, so the comparison is of the masking, not of the eager and SDPA kernels."""
    n = len(prompt)
    mask = torch.full((n, n), float("-inf")).triu(1)
    mask[hidden_keys(n, [0], [span], queries)[0]] = float("-inf")
    with torch.inference_mode(), attention_implementation(model.hf_model, attention):
        out = model.hf_model(
            input_ids=torch.tensor([prompt.input_ids]),
            attention_mask=mask[None, None],
            position_ids=torch.arange(n)[None],
            use_cache=False,
            logits_to_keep=1 if keep_last else 0,
        )
    return out.logits[:, -1, :].float()


# ---- the key checks, shared by the tiny and the real models ----------------------------------------


def check_alpha_one_is_exact(model, backend, prompts, base=None):
    batch, offsets = batch_for(model, prompts)
    base = backend.forward(batch) if base is None else base
    bias, _ = compiled(AttentionIntervention(target="a", alpha=1.0), model, batch, offsets, prompts)
    assert all(float(t.abs().max()) == 0.0 for t in bias.values())
    assert torch.equal(backend.forward(batch, edits=Edits(score_bias=bias)), base)


_ORACLES: dict[tuple, torch.Tensor] = {}


def check_alpha_zero_matches_oracle(model, backend, prompt, queries="outside", target="a", base=None):
    batch, offsets = batch_for(model, [prompt])
    spec = AttentionIntervention(target=target, alpha=0.0, queries=queries)
    bias, (span,) = compiled(spec, model, batch, offsets, [prompt])
    hooked = backend.forward(batch, edits=Edits(score_bias=bias))
    # The hf backend computes only the last position's logits (logits_to_keep=1); the other two compute all
    # positions. Match that in the oracle, so the comparison is of the masking, not of lm_head GEMM kernels.
    attention = getattr(backend, "attn_implementation", "eager")
    key = (id(model), tuple(prompt.input_ids), span, queries, backend.name == "hf", attention)
    if key not in _ORACLES:
        _ORACLES[key] = oracle_logits(model, prompt, span, queries, keep_last=backend.name == "hf", attention=attention)
    torch.testing.assert_close(hooked, _ORACLES[key], atol=1e-5, rtol=0)
    base = backend.forward(batch) if base is None else base
    assert (hooked - base).abs().max() > 1e-4  # and the mask did something


def check_single_head(model, backend, prompts, layer: int, head: int, alpha: float = 0.3, base=None):
    batch, offsets = batch_for(model, prompts)
    base_logits, base = capture(backend, batch) if base is None else base
    spec = AttentionIntervention(target="a", alpha=alpha, layers=(layer,), heads=(head,))
    bias, targets = compiled(spec, model, batch, offsets, prompts)
    assert set(bias) == {layer} and bias[layer].shape[1] == model.n_heads
    hooked_logits, hooked = capture(backend, batch, bias)
    assert sorted(hooked) == sorted(base) == list(range(model.n_layers))
    for earlier in range(layer):
        assert torch.equal(hooked[earlier], base[earlier]), f"layer {earlier} changed"
    others = [h for h in range(model.n_heads) if h != head]
    assert torch.equal(hooked[layer][:, others], base[layer][:, others])
    expected = scale_and_renormalise(
        base[layer][:, head], hidden_keys(batch.input_ids.shape[1], offsets, targets, "outside"), alpha
    )
    torch.testing.assert_close(hooked[layer][:, head], expected, atol=1e-5, rtol=0)
    assert (hooked[layer][:, head] - base[layer][:, head]).abs().max() > 1e-3
    assert not torch.equal(hooked_logits, base_logits)  # the edit reaches the output


def check_all(model, backend, prompts, layer: int, head: int):
    """The three key checks sharing one unhooked forward pass (with pattern capture)."""
    batch, _ = batch_for(model, prompts)
    base_logits, base_patterns = capture(backend, batch)
    check_alpha_one_is_exact(model, backend, prompts, base=base_logits)
    if len(prompts) == 1:
        check_alpha_zero_matches_oracle(model, backend, prompts[0], base=base_logits)
    check_single_head(model, backend, prompts, layer, head, base=(base_logits, base_patterns))


# ---- tiny models: the key checks on every backend ------------------------------------------------------


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_alpha_one_reproduces_logits_exactly(tiny, backend_name):
    check_alpha_one_is_exact(tiny, backend_for(tiny, backend_name), prompts_for(tiny))


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_alpha_zero_equals_plain_hf_with_4d_mask(tiny, backend_name):
    prompt = prompts_for(tiny)[0]
    check_alpha_zero_matches_oracle(tiny, backend_for(tiny, backend_name), prompt)


@pytest.mark.parametrize("queries,target", [("final", "a"), ("final", "b"), ("final", "both"), ("outside", (3, 20))])
def test_alpha_zero_oracle_other_query_sets_and_targets(tiny, queries, target):
    check_alpha_zero_matches_oracle(tiny, backend_for(tiny, "hf"), prompts_for(tiny)[1], queries, target)


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_single_head_changes_only_that_head(tiny, backend_name):
    check_single_head(tiny, backend_for(tiny, backend_name), prompts_for(tiny), layer=1, head=2)


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_key_checks_share_one_base_pass(tiny, backend_name):
    """The combined form the slow tests use: pattern capture leaves the logits unchanged."""
    check_all(tiny, backend_for(tiny, backend_name), prompts_for(tiny, PAIRS[:1]), layer=2, head=0)


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_masking_response_a_changes_p_a(tiny, backend_name):
    backend = backend_for(tiny, backend_name)
    prompts = prompts_for(tiny)
    labels = label_tokens(tiny.tokenizer)
    plain = judge_batch(backend, prompts, labels, readout=None)
    spec = AttentionIntervention(target="a", alpha=0.0)
    masked = judge_batch(backend, prompts, labels, readout=None, bias=bias_builder(spec, tiny))
    for before, after in zip(plain, masked, strict=False):
        assert abs(before.probs["A"] - after.probs["A"]) > 1e-6


def test_padding_does_not_change_the_intervention(tiny):
    """A prompt judged alone and left-padded in a batch gets the same intervened logits."""
    backend = backend_for(tiny, "hf")
    prompts = prompts_for(tiny)
    spec = AttentionIntervention(target="b", alpha=0.1, layers=(0, 2), heads=(1, 3))
    batch, offsets = batch_for(tiny, prompts)
    assert max(offsets) > 0
    together = backend.forward(batch, edits=Edits(score_bias=bias_builder(spec, tiny)(batch, offsets, prompts)))
    for row, prompt in enumerate(prompts):
        alone_batch, alone_offsets = batch_for(tiny, [prompt])
        alone_bias = bias_builder(spec, tiny)(alone_batch, alone_offsets, [prompt])
        alone = backend.forward(alone_batch, edits=Edits(score_bias=alone_bias))
        torch.testing.assert_close(together[row : row + 1], alone, atol=1e-4, rtol=0)


# ---- the identity behind the mechanism ------------------------------------------------------------


@settings(max_examples=30, derandomize=True, deadline=None)
@given(
    alpha=st.one_of(st.just(0.0), st.just(1.0), st.floats(min_value=1e-6, max_value=1.0)),
    seed=st.integers(0, 2**31 - 1),
    queries=st.integers(1, 6),
    keys=st.integers(1, 12),
    scale=st.floats(min_value=0.1, max_value=8.0),
)
def test_log_alpha_bias_equals_scale_and_renormalise(alpha, seed, queries, keys, scale):
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(2, 3, queries, keys, generator=generator, dtype=torch.float64) * scale
    key_mask = torch.rand(2, 1, queries, keys, generator=generator) < 0.5
    key_mask[..., torch.randint(keys, (1,), generator=generator)] = False  # every row keeps a visible key
    log_alpha = float("-inf") if alpha == 0 else math.log(alpha)
    bias = torch.zeros_like(scores).masked_fill(key_mask, log_alpha)  # float64, as the scores
    biased = torch.softmax(scores + bias, dim=-1)
    reference = scale_and_renormalise(torch.softmax(scores, dim=-1), key_mask, alpha)
    torch.testing.assert_close(biased, reference, atol=1e-12, rtol=1e-9)


# ---- compile_bias -----------------------------------------------------------------------------------


def test_compile_bias_values_shapes_and_padding(tiny):
    prompts = prompts_for(tiny)
    batch, offsets = batch_for(tiny, prompts)
    width = batch.input_ids.shape[1]
    spec = AttentionIntervention(target="a", alpha=0.25)
    bias, targets = compiled(spec, tiny, batch, offsets, prompts)
    assert set(bias) == set(range(tiny.n_layers))
    assert all(t.shape == (2, 1, width, width) for t in bias.values())
    assert len({id(t) for t in bias.values()}) == 1  # one tensor shared by every layer
    hidden = hidden_keys(width, offsets, targets, "outside")
    tensor = bias[0][:, 0]
    assert torch.all(tensor[hidden] == math.log(0.25)) and torch.all(tensor[~hidden] == 0)
    padded_row = offsets.index(max(offsets))
    assert torch.all(tensor[padded_row, : offsets[padded_row]] == 0)
    assert torch.all(tensor[padded_row, :, : offsets[padded_row]] == 0)

    final = AttentionIntervention(target="a", alpha=0.0, queries="final", heads={1: (0, 3)})
    bias, _ = compiled(final, tiny, batch, offsets, prompts)
    assert set(bias) == {1} and bias[1].shape == (2, tiny.n_heads, width, width)
    assert torch.isneginf(bias[1][:, [0, 3], -1]).any() and torch.all(bias[1][:, [0, 3], :-1] == 0)
    assert torch.all(bias[1][:, [1, 2]] == 0)


# ---- targets ------------------------------------------------------------------------------------


def test_resolve_target_slots_self_other(tiny):
    prompt = prompts_for(tiny)[0]
    resolve = lambda target, **kw: resolve_target(AttentionIntervention(target=target, alpha=0.0), prompt, **kw)  # noqa: E731
    nobody = dict(judge_model="judge", author_a=None, author_b=None)
    assert resolve("a", **nobody) == prompt.spans["a"] and resolve("b", **nobody) == prompt.spans["b"]
    assert resolve((2, 5), **nobody) == (2, 5)
    assert resolve("both", **nobody) == (prompt.spans["a"][0], prompt.spans["b"][1])  # A comes first in the prompt
    authors = dict(judge_model="judge", author_a="rival", author_b="judge")
    assert resolve("self", **authors) == prompt.spans["b"] and resolve("other", **authors) == prompt.spans["a"]
    with pytest.raises(InterpError, match="needs the authors"):
        resolve("self", **nobody)
    with pytest.raises(InterpError, match="neither response"):
        resolve("other", judge_model="judge", author_a="x", author_b="y")
    with pytest.raises(InterpError, match="both responses"):
        resolve("self", judge_model="judge", author_a="judge", author_b="judge")


def test_random_target_is_seeded_same_length_and_elsewhere(tiny):
    prompt = prompts_for(tiny)[0]
    n = len(prompt)
    (a0, a1), (b0, b1) = prompt.spans["a"], prompt.spans["b"]
    authors = dict(judge_model="judge", author_a="rival", author_b="judge")
    spans = []
    for seed in range(20):
        spec = AttentionIntervention(target="random", alpha=0.0, seed=seed)
        s, e = resolve_target(spec, prompt, **authors)
        assert (s, e) == resolve_target(spec, prompt, **authors)  # reproducible
        assert e - s == b1 - b0  # as long as the self span (b)
        assert 1 <= s and e <= n - 1  # not the first token, not the final position
        assert (e <= a0 or s >= a1) and (e <= b0 or s >= b1)
        spans.append((s, e))
    assert len(set(spans)) > 5
    no_authors = resolve_target(
        AttentionIntervention(target="random", alpha=0.0), prompt, judge_model=None, author_a=None, author_b=None
    )
    assert no_authors[1] - no_authors[0] == a1 - a0


# ---- specs: serialisation and bad input -------------------------------------------------------------


def test_spec_round_trips_and_is_hashable(tmp_path):
    spec = AttentionIntervention(
        target=(3, 9), alpha=0.5, layers=[2, 1], heads={2: [3, 0], 1: [1]}, queries="final", seed=4, name='self "mask"'
    )
    assert spec.layers == (1, 2) and spec.heads_table == {1: (1,), 2: (0, 3)}
    assert spec.selection(10) == {1: (1,), 2: (0, 3)}
    assert hash(spec) == hash(AttentionIntervention.from_dict(spec.to_dict()))
    assert AttentionIntervention.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    path = tmp_path / "spec.toml"
    path.write_text(spec.to_toml())
    assert load_spec(path) == spec
    for other in (
        AttentionIntervention(target="self", alpha=0.0),
        AttentionIntervention(target="random", alpha=1, heads=(2,), seed=3),
    ):
        path.write_text(other.to_toml())
        assert load_spec(path) == other
    assert AttentionIntervention(target="a", alpha=0.0).selection(3) == {0: None, 1: None, 2: None}
    emphasis = AttentionIntervention(target="other", alpha=1.5, emphasis=True)
    path.write_text(emphasis.to_toml())
    assert load_spec(path) == emphasis


def test_example_spec_loads():
    from pathlib import Path

    spec = load_spec(Path(__file__).parents[2] / "experiments" / "configs" / "ablation_example.toml")
    assert spec.target == "self" and spec.alpha == 0.0 and spec.layers is None and spec.heads is None


@pytest.mark.parametrize(
    "toml,words",
    [
        ('target = "a"\nalpha = 1.5\n', ["'alpha'", "[0, 1]"]),
        ('target = "a"\nalpha = -0.1\n', ["'alpha'", "[0, 1]"]),
        ('target = "a"\nalpha = 0.0\nlayer = [1]\n', ["unknown key 'layer'"]),
        ('target = "mine"\nalpha = 0.0\n', ["'target'"]),
        ("target = [5]\nalpha = 0.0\n", ["'target'"]),
        ("target = [9, 3]\nalpha = 0.0\n", ["'target'", "start < end"]),
        ("alpha = 0.0\n", ["needs key 'target'"]),
        ('target = "a"\nalpha = 0.0\nqueries = "all"\n', ["'queries'"]),
        ('target = "a"\nalpha = 0.0\nheads = { x = [1] }\n', ["'heads'"]),
        ('target = "a"\nalpha = 0.0\nlayers = []\n', ["'layers'"]),
        ('target = "a"\nalpha = \n', ["not valid TOML"]),
    ],
)
def test_bad_spec_files_give_one_line_errors(tmp_path, toml, words):
    path = tmp_path / "bad.toml"
    path.write_text(toml)
    with pytest.raises(InterpError) as info:
        load_spec(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    for word in words:
        assert word in message


def test_bad_alpha_in_code():
    with pytest.raises(InterpError, match=r"'alpha' = 1.5 is out of range.*\[0, 1\]"):
        AttentionIntervention(target="a", alpha=1.5)
    with pytest.raises(InterpError, match="not a finite number"):
        AttentionIntervention(target="a", alpha=float("nan"))


@dataclass
class SpyBackend:
    """Records forward calls; any call fails the test (errors must come before model work)."""

    model: LoadedModel
    name: str = "spy"
    calls: list = field(default_factory=list)

    def forward(self, batch, *, edits=None, on_pattern=None):
        self.calls.append(batch)
        raise AssertionError("forward ran before the bad input was reported")


def test_bad_layer_head_span_fail_before_model_work(tiny):
    spy = SpyBackend(tiny)
    prompts = prompts_for(tiny)
    labels = label_tokens(tiny.tokenizer)
    cases = [
        (
            AttentionIntervention(target="a", alpha=0.0, layers=(99,)),
            f"layer 99 is out of range; this model has {tiny.n_layers} layers",
        ),
        (
            AttentionIntervention(target="a", alpha=0.0, heads=(99,)),
            f"head 99 is out of range; this model has {tiny.n_heads} heads",
        ),
        (AttentionIntervention(target="a", alpha=0.0, heads={99: (0,)}), "layer 99 is out of range"),
        (AttentionIntervention(target="self", alpha=0.0), "needs the authors"),
    ]
    for spec, message in cases:
        with pytest.raises(InterpError, match=message) as info:
            judge_batch(spy, prompts, labels, bias=bias_builder(spec, tiny))
        assert "\n" not in str(info.value)
    n = len(prompts[0])
    with pytest.raises(InterpError, match=rf"span \[0, 5000\) does not exist in a prompt of {n} tokens"):
        judge_batch(
            spy, prompts[:1], labels, bias=bias_builder(AttentionIntervention(target=(0, 5000), alpha=0.0), tiny)
        )
    with pytest.raises(InterpError, match="per layer"):
        validate_against(AttentionIntervention(target="a", alpha=0.5, heads=(4,)), n_layers=3, n_heads=4)
    with pytest.raises(InterpError, match="got authors for 1 prompts"):
        judge_batch(
            spy,
            prompts,
            labels,
            bias=bias_builder(AttentionIntervention(target="self", alpha=0.0), tiny, authors=[("x", tiny.name)]),
        )
    assert spy.calls == []


# ---- the context manager ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_dampen_applies_compile_bias_and_restores(tiny, backend_name):
    backend = backend_for(tiny, backend_name)
    prompts = prompts_for(tiny)
    batch, offsets = batch_for(tiny, prompts)
    base = backend.forward(batch)
    target = (5, 30)
    spec = AttentionIntervention(target=target, alpha=0.0, layers=(1,))
    expected = backend.forward(batch, edits=Edits(score_bias=compiled(spec, tiny, batch, offsets, prompts)[0]))
    with dampen(backend, target=target, alpha=0.0, layers=[1]) as used:
        assert used == spec
        inside, patterns = capture(backend, batch)  # other forward options pass through
    assert sorted(patterns) == list(range(tiny.n_layers))
    assert torch.equal(inside, expected) and not torch.equal(inside, base)
    assert torch.equal(backend.forward(batch), base)
    assert "forward" not in vars(backend) and tiny.hf_model.config._attn_implementation == "eager"

    with pytest.raises(RuntimeError, match="boom"):
        with dampen(backend, "b", alpha=0.5, heads={0: [1]}, prompts=prompts):
            backend.forward(batch)
            raise RuntimeError("boom")
    assert torch.equal(backend.forward(batch), base)
    assert "forward" not in vars(backend) and tiny.hf_model.config._attn_implementation == "eager"

    raised = AttentionIntervention(target=target, alpha=3.0, layers=(1,), emphasis=True)
    expected = backend.forward(batch, edits=Edits(score_bias=compiled(raised, tiny, batch, offsets, prompts)[0]))
    with emphasise(backend, target, alpha=3.0, layers=[1]) as used:
        assert used == raised
        assert torch.equal(backend.forward(batch), expected) and not torch.equal(expected, base)
    assert torch.equal(backend.forward(batch), base)


def test_dampen_on_a_plain_hf_model_and_validation(tiny):
    from interp.core.backends import make_backend

    hf = tiny.hf_model
    prompts = prompts_for(tiny)
    batch, offsets = batch_for(tiny, prompts)
    backend = make_backend(tiny, "hf", attn_implementation="eager")  # a plain call keeps the model's eager attention

    def run():
        with torch.inference_mode():
            out = hf(
                input_ids=batch.input_ids,
                attention_mask=batch.attention_mask,
                position_ids=batch.position_ids,
                use_cache=False,
                logits_to_keep=1,
            )
        return out.logits[:, -1].float()

    base = run()
    own_forward = vars(hf).get("forward")  # nnsight installs one on the model it wraps; it must survive
    with dampen(tiny, "a", alpha=0.0, prompts=prompts):
        inside = run()
    spec = AttentionIntervention(target="a", alpha=0.0)
    bias = compiled(spec, tiny, batch, offsets, prompts)[0]
    assert torch.equal(inside, backend.forward(batch, edits=Edits(score_bias=bias)))
    assert (
        torch.equal(run(), base)
        and vars(hf).get("forward") is own_forward
        and hf.config._attn_implementation == "eager"
    )
    with pytest.raises(RuntimeError):
        with dampen(hf, (1, 4), alpha=0.0):
            raise RuntimeError
    assert torch.equal(run(), base) and vars(hf).get("forward") is own_forward

    with pytest.raises(InterpError, match="layer 99"):
        with dampen(backend, (1, 4), layers=[99]):
            pass
    with pytest.raises(InterpError, match="'alpha' = 2.0 is out of range"):
        with dampen(backend, (1, 4), alpha=2.0):
            pass
    with pytest.raises(InterpError, match=r"dampen lowers attention .* use emphasise"):
        with dampen(backend, emphasis_spec(4.0)):
            pass
    with pytest.raises(InterpError, match=r"emphasise raises attention .* use dampen"):
        with emphasise(backend, (1, 4), alpha=0.5):
            pass
    with pytest.raises(InterpError, match="op 'dampen' takes alpha in \\[0, 1\\].*use op 'emphasis'"):
        as_intervention(site="attention", op="dampen", target="a", alpha=2.0)
    with pytest.raises(InterpError, match="needs the tokenized prompts"):
        with dampen(backend, "a"):
            backend.forward(batch)
    assert "forward" not in vars(backend)


# ---- the CLI ----------------------------------------------------------------------------------------


def test_cli_inspect_intervene_prints_the_spec(tiny, tmp_path):
    from typer.testing import CliRunner

    from interp.cli import app

    folder = tiny.source.split(":", 1)[1]  # "folder:/path/to/tiny-model"
    spec_path = tmp_path / "a.toml"
    spec_path.write_text('target = "a"\nalpha = 0.0\nname = "mask-a"\n')
    args = [
        "inspect",
        "--model",
        folder,
        "--query",
        PAIRS[0][0],
        "--response-a",
        PAIRS[0][1],
        "--response-b",
        PAIRS[0][2],
        "--json",
    ]
    plain = CliRunner().invoke(app, args)
    masked = CliRunner().invoke(app, args + ["--intervene", str(spec_path)])
    assert plain.exit_code == 0 and masked.exit_code == 0, (plain.output, masked.output)
    before, after = json.loads(plain.stdout), json.loads(masked.stdout)
    assert after["intervention"]["name"] == "mask-a" and after["intervention"]["target"] == "a"
    assert "intervention" not in before and abs(before["p_a"] - after["p_a"]) > 1e-6


# ---- the real models ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def smollm():
    return load_model("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def gemma():
    return load_model("gemma3-270m")


@pytest.mark.slow
@pytest.mark.parametrize("backend_name", BACKENDS)
@pytest.mark.parametrize("model_name", ["smollm", "gemma"])
def test_real_models_exact_oracle_single_head(request, model_name, backend_name):
    model = request.getfixturevalue(model_name)
    backend = backend_for(model, backend_name)
    check_all(model, backend, prompts_for(model, PAIRS[:1]), layer=model.n_layers // 2, head=1)


@pytest.mark.slow
def test_cli_bad_spec_exits_2_with_one_error_line(tmp_path, forked_cli):
    cases = {"alpha.toml": 'target = "a"\nalpha = 1.5\n', "layer.toml": 'target = "a"\nalpha = 0.0\nlayers = [99]\n'}
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        result = forked_cli(
            "inspect",
            "--model",
            "smollm2-135m-instruct",
            "--query",
            "q",
            "--response-a",
            "x",
            "--response-b",
            "y",
            "--intervene",
            path,
        )
        assert result.returncode == 2, result.stderr
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len([line for line in lines if line.startswith("error:")]) == 1, result.stderr
        assert lines[-1].startswith("error:") and ("'alpha'" in lines[-1] or "layer 99" in lines[-1])
