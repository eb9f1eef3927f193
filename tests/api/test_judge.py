"""The `Judge` object: the same numbers as the lower-level path, documented dims, interventions that restore."""

from __future__ import annotations

import pytest
import torch

import interp
from interp.core.backends import make_backend
from interp.core.judge import judge_batch, label_tokens
from interp.core.spans import build_judge_prompt
from interp.errors import InterpError
from interp.hooks.spec import AttentionIntervention, as_spec
from tests.helpers.reference import ANSWER_A, ANSWER_B, BATCH_ITEMS, BATCH_TOL, QUERY, TINY, assert_close, plain_hf

AUTHORS = ("writer-x", "writer-y")


@pytest.fixture
def judge(request):
    """A Judge around a tiny model (fixture name in `request.param`), with writer-x as its own model."""
    return interp.Judge.wrap(request.getfixturevalue(request.param), own="writer-x")


def lower_level(model, task, query, a, b):
    """The path every run takes: the tokenized prompt, label tokens built by hand, one `judge_batch`."""
    prompt = build_judge_prompt(model, task, query, a, b)
    (judgment,) = judge_batch(make_backend(model, "hf"), [prompt], label_tokens(model.tokenizer))
    return prompt, judgment


@pytest.mark.parametrize("judge", TINY, indirect=True)
def test_one_pair_equals_the_lower_level_path(judge):
    v = judge(QUERY, ANSWER_A, ANSWER_B, task="truthfulness", authors=AUTHORS)
    prompt, expected = lower_level(judge.model, "truthfulness", QUERY, ANSWER_A, ANSWER_B)
    assert v.prompt.input_ids == prompt.input_ids and v.spans == prompt.spans
    assert v.p_a == pytest.approx(expected.probs["A"], abs=1e-9) and v.p_b == pytest.approx(
        expected.probs["B"], abs=1e-9
    )
    assert v.label_mass == pytest.approx(expected.label_mass, abs=1e-9)
    assert_close(v.mass, expected.mass, 1e-6, "span attention")
    # dims: [layer, head, span], span 0 = A, 1 = B; per-token mean = mass / span length
    assert v.mass.shape == v.mean.shape == (judge.n_layers, judge.n_heads, 2)
    lengths = [prompt.spans[s][1] - prompt.spans[s][0] for s in ("a", "b")]
    assert v.span_tokens.tolist() == lengths
    assert_close(v.mean, v.mass / torch.tensor(lengths, dtype=torch.float32), 1e-7, "per-token mean")
    assert v.p_a + v.p_b == pytest.approx(1.0)
    assert v.own_slot == "a" and v.p_own == v.p_a
    assert_close(v.own_minus_other("mass"), v.mass[..., 0] - v.mass[..., 1], 0, "own minus other")
    record = v.to_dict()
    assert record["p_a"] == v.p_a and record["task"] == "truthfulness" and len(record["layers"]) == judge.n_layers


@pytest.mark.parametrize("judge", ["tiny_llama"], indirect=True)
def test_attention_equals_plain_transformers(judge):
    v = judge(QUERY, ANSWER_A, ANSWER_B)
    _, probs, mass = plain_hf(judge.model, v.prompt)
    assert v.p_a == pytest.approx(probs["A"], abs=1e-4)
    assert_close(v.mass, mass, 1e-4, "mass vs output_attentions")


@pytest.mark.parametrize("judge", TINY, indirect=True)
def test_batch_equals_one_by_one(judge):
    judge.batch_size = 2  # three pairs: two passes, one of them padded
    queries, answers_a, answers_b = map(list, zip(*BATCH_ITEMS, strict=False))
    authors = [AUTHORS, AUTHORS[::-1], AUTHORS]
    batch = judge.batch(queries, answers_a, answers_b, authors=authors)
    assert len(batch) == 3 and batch.mass.shape == (3, judge.n_layers, judge.n_heads, 2) and batch.p_a.shape == (3,)
    assert [v.own_slot for v in batch] == ["a", "b", "a"]
    for v, (q, a, b) in zip(batch, BATCH_ITEMS, strict=False):
        single = judge(q, a, b)
        assert v.p_a == pytest.approx(single.p_a, abs=BATCH_TOL)
        assert_close(v.mass, single.mass, BATCH_TOL, "batched span attention")
    same = judge(queries, answers_a, answers_b, authors=authors)  # lists: the batch form
    assert isinstance(same, interp.Verdicts) and torch.equal(same.p_a, batch.p_a)
    frame = batch.frame()
    assert len(frame) == 3 and frame["p_own"].tolist() == [v.p_own for v in batch]


@pytest.mark.parametrize("judge", TINY, indirect=True)
def test_applying_masks_self_and_restores_the_model(judge):
    model = judge.model
    before = judge(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS)
    ids = torch.tensor([before.prompt.input_ids])
    with torch.no_grad():
        logits_before = model.hf_model(ids).logits
    with judge.applying(target="self", alpha=0.0) as spec:
        assert judge.interventions == (spec,)
        masked = judge(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS)
        swapped = judge(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS[::-1])
    assert masked.interventions == (spec,) and judge.interventions == ()
    # the final position sees nothing of the judge's own response (slot A), then of slot B when swapped
    assert masked.mass[..., 0].abs().max() == 0 and masked.mass[..., 1].min() > 0
    assert swapped.mass[..., 1].abs().max() == 0
    assert masked.p_a != before.p_a
    after = judge(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS)
    assert after.p_a == before.p_a and torch.equal(after.mass, before.mass)
    assert "forward" not in vars(judge.backend) and "forward" not in vars(model.hf_model)
    with torch.no_grad():
        assert torch.equal(model.hf_model(ids).logits, logits_before)


@pytest.mark.parametrize("judge", ["tiny_llama"], indirect=True)
def test_alpha_one_reproduces_the_unhooked_judge(judge):
    before = judge(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS)
    with judge.applying(AttentionIntervention(target="self", alpha=1.0, layers=(0,))):
        same = judge(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS)
    assert same.p_a == pytest.approx(before.p_a, abs=1e-7)
    assert_close(same.mass, before.mass, 1e-6, "alpha = 1")


@pytest.mark.parametrize("judge", ["tiny_llama"], indirect=True)
def test_nested_blocks_and_an_exception_inside(judge):
    with pytest.raises(RuntimeError):
        with judge.applying(target="a", alpha=0.0):
            with judge.applying({"target": "b", "alpha": 0.0}):
                both = judge(QUERY, ANSWER_A, ANSWER_B)
                assert len(judge.interventions) == 2
            raise RuntimeError("leaves the block")
    assert judge.interventions == ()
    assert both.mass.abs().max() == 0  # both spans masked at the final position


@pytest.mark.parametrize("judge", ["tiny_llama"], indirect=True)
def test_self_resolves_through_own(judge):
    with judge.applying(target="self", alpha=0.0):
        with pytest.raises(InterpError, match="authors"):
            judge(QUERY, ANSWER_A, ANSWER_B)  # no authors: "self" cannot be found
        v = judge(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS, own="writer-y")  # own for this call
    assert v.own_slot == "b" and v.mass[..., 1].abs().max() == 0
    organism = interp.Judge(judge.backend)  # own defaults to own_model(name): here the folder name itself
    assert organism.own == interp.own_model(judge.name)


def test_an_organism_name_judges_as_its_base(tiny_llama):
    from interp.core.models import wrap_model

    renamed = wrap_model(tiny_llama.hf_model, tiny_llama.tokenizer, name="smollm2-135m-selfpref")
    assert interp.Judge.wrap(renamed).own == "smollm2-135m-instruct"


@pytest.mark.parametrize("judge", ["tiny_llama"], indirect=True)
def test_bad_input_is_one_line(judge):
    with pytest.raises(InterpError, match="empty"):
        judge("", ANSWER_A, ANSWER_B)
    with pytest.raises(InterpError, match="per pair"):
        judge.batch([QUERY, QUERY], [ANSWER_A], [ANSWER_B, ANSWER_B])
    with pytest.raises(InterpError, match="out of range"):
        with judge.applying(target="a", alpha=0.0, layers=[judge.n_layers]):
            pass
    with pytest.raises(InterpError, match="unknown key"):
        with judge.applying(target="a", alpha=0.0, layer=[0]):
            pass
    assert judge.interventions == ()
    with pytest.raises(InterpError, match="tokenizer"):
        interp.Judge.wrap(judge.model.hf_model)


def test_as_spec_reads_every_form(tmp_path):
    spec = as_spec(target="self", alpha=0.0, layers=[3, 1])
    assert spec == AttentionIntervention(target="self", alpha=0.0, layers=(1, 3))
    assert as_spec(spec, alpha=0.5).alpha == 0.5 and as_spec(spec, alpha=0.5).layers == (1, 3)
    assert as_spec({"target": "a", "alpha": 0.25, "heads": {2: [1]}}).heads_table == {2: (1,)}
    path = tmp_path / "spec.toml"
    path.write_text(spec.to_toml())
    assert as_spec(path) == spec
    with pytest.raises(InterpError):
        as_spec(3)


@pytest.mark.parametrize("backend", ["transformer_lens", "nnsight"])
def test_every_backend_gives_the_hf_verdict(tiny_llama, backend):
    hf = interp.Judge.wrap(tiny_llama, own="writer-x")
    other = interp.Judge.wrap(tiny_llama, backend=backend, own="writer-x")
    assert other.backend.name == backend
    expected, got = hf(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS), other(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS)
    assert got.p_a == pytest.approx(expected.p_a, abs=1e-4)
    assert_close(got.mass, expected.mass, 1e-4, f"{backend} vs hf")
    with other.applying(target="self", alpha=0.0):
        masked = other(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS)
    assert masked.mass[..., 0].abs().max() == 0 and masked.p_a != got.p_a


def test_wrap_an_hf_model_and_an_nnsight_language_model(tiny_llama):
    from nnsight import LanguageModel

    from interp.core.backends.layers import shared_weight_copy

    hf = interp.Judge.wrap(tiny_llama.hf_model, tiny_llama.tokenizer, name="tiny", own="writer-x")
    assert hf.name == "tiny" and hf.backend.name == "hf"
    # nnsight installs its own `forward` on the module it wraps: give it a copy, not the session's model
    lm = LanguageModel(shared_weight_copy(tiny_llama.hf_model), tokenizer=tiny_llama.tokenizer)
    traced = interp.Judge.wrap(lm, name="tiny", own="writer-x")
    assert traced.backend.name == "nnsight" and traced.backend.wrapped is lm
    expected, got = hf(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS), traced(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS)
    assert got.p_a == pytest.approx(expected.p_a, abs=1e-5)
    assert_close(got.mass, expected.mass, 1e-5, "nnsight vs hf")
    with traced.applying(target="self", alpha=0.0):
        masked = traced(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS)
    assert masked.mass[..., 0].abs().max() == 0
    assert traced(QUERY, ANSWER_A, ANSWER_B, authors=AUTHORS).p_a == got.p_a


def test_wrap_says_what_it_changes_on_your_objects(tiny_llama_dir):
    """Wrapping needs eval mode and a pad token; where your objects lack them, the change is
    made in place and said in one warning; objects that need nothing are left alone, silently."""
    import warnings

    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = (
        AutoModelForCausalLM.from_pretrained(tiny_llama_dir),
        AutoTokenizer.from_pretrained(tiny_llama_dir),
    )
    model.train()
    tokenizer.pad_token = None
    with pytest.warns(
        UserWarning, match=r"changed your objects: put the model in eval mode.*set tokenizer.pad_token"
    ) as caught:
        interp.Judge.wrap(model, tokenizer, name="tiny")
    assert len(caught) == 1 and not model.training and tokenizer.pad_token == tokenizer.eos_token
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        interp.Judge.wrap(model, tokenizer, name="tiny")  # nothing left to change: no warning


def test_readout_is_not_a_specs_queries(tiny_llama):
    """`queries` is a spec key (where a mask acts: outside | final); the Judge's read-out positions are `readout`."""
    judge = interp.Judge.wrap(tiny_llama, readout="after")
    assert judge.readout == "after"
    with pytest.raises(InterpError, match=r"readout=.*`queries` is a spec's key"):
        interp.Judge.wrap(tiny_llama, queries="after")
    with pytest.raises(InterpError, match="unknown Judge option 'batchsize'"):
        interp.Judge.wrap(tiny_llama, batchsize=2)
    with pytest.raises(InterpError, match="unknown readout"):
        interp.Judge.wrap(tiny_llama, readout="outside")


def test_judge_intervene_is_gone_applying_replaces_it(tiny_llama):
    """`Judge.intervene` (the old name of `applying`; `interp.intervene` is the causal test) is removed."""
    judge = interp.Judge.wrap(tiny_llama)
    assert not hasattr(judge, "intervene")
    with judge.applying(target="a", alpha=0.0) as spec:
        assert judge.interventions == (spec,)


def test_attn_implementation_is_not_a_run_configs_attention(tiny_llama):
    """`attention` is a run config's key (final | after | none); how a backend computes it is `attn_implementation`."""
    judge = interp.Judge.wrap(tiny_llama, attn_implementation="eager")
    assert judge.backend.attn_implementation == "eager"
    with pytest.raises(InterpError, match=r"attn_implementation=.*`attention` is a run config's key"):
        interp.Judge.wrap(tiny_llama, attention="eager")
