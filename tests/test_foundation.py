"""Foundation checks (issue 2): models, three backends that agree with plain HF, spans, labels, CLI errors.

Every attention number is checked against plain transformers run in the test itself
(`hf_model(ids, output_attentions=True)`), never against the toolkit's own output alone. Tiny random models
(tests/conftest.py) give fast unit tests with the real tokenizers; the packaged models are marked slow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from interp.attention import per_token_mean
from interp.backends import BACKENDS, Batch, left_pad
from interp.errors import InterpError
from interp.inspection import build_judge_prompt, inspect_judgment, judgment_record
from interp.judge import judge_batch, label_tokens
from interp.models import load_model
from interp.prompts import TASKS, judge_prompt
from interp.spans import tokenize_prompt

slow = pytest.mark.slow
TOL = 1e-4
BATCH_TOL = 1e-5
REPO = Path(__file__).resolve().parents[1]

TINY = ["tiny_llama", "tiny_gemma3"]
REAL = [pytest.param("smollm2", marks=slow), pytest.param("gemma3", marks=slow)]

QUERY = "Which is the capital of Germany, and how big is it?"
ANSWER_A = "Berlin is the capital of Germany; it covers about 892 square kilometres."
ANSWER_B = "The capital is Berlin."


def style_kinds(model) -> list[str]:
    """Prompt styles a model supports: chat (post) only with a chat template; few-shot (pre) always."""
    return (["post"] if getattr(model.tokenizer, "chat_template", None) else []) + ["pre"]


def tokenized(model, task, query, a, b, *, kind):
    return tokenize_prompt(model.tokenizer, judge_prompt(model.tokenizer, task, query, a, b, kind=kind))


def single_token_label_ids(tokenizer, label: str) -> set[int]:
    """Independent of interp.judge: every single-token spelling of the label, bare or after a space."""
    found = set()
    for spelling in (label, " " + label):
        ids = tokenizer.encode(spelling, add_special_tokens=False)
        if len(ids) == 1:
            found.add(ids[0])
    return found


def plain_hf(model, prompt, queries: str = "final"):
    """Plain transformers: final logits, renormalised A/B probabilities, and span masses [layer, head, span]."""
    ids = torch.tensor([prompt.input_ids])
    with torch.no_grad():
        out = model.hf_model(ids, output_attentions=True, logits_to_keep=1)  # attentions still cover every position
    assert len(out.attentions) == model.n_layers
    assert all(a.shape[-2:] == (ids.shape[1], ids.shape[1]) for a in out.attentions)
    seq = ids.shape[1]
    if queries == "final":
        rows = list(range(seq - 1, seq))
    else:
        rows = list(range(max(prompt.spans["a"][1], prompt.spans["b"][1]), seq))
    assert rows, "no query position after both responses"
    mass = torch.stack(
        [
            torch.stack([att[0][:, rows, s:e].sum(-1).mean(-1) for s, e in (prompt.spans["a"], prompt.spans["b"])], -1)
            for att in out.attentions
        ]
    )
    logits = out.logits[0, -1].float()
    probs = torch.softmax(logits.double(), -1)
    pa = float(probs[list(single_token_label_ids(model.tokenizer, "A"))].sum())
    pb = float(probs[list(single_token_label_ids(model.tokenizer, "B"))].sum())
    return logits, {"A": pa / (pa + pb), "B": pb / (pa + pb)}, mass


def assert_close(actual, expected, tol, what):
    actual, expected = torch.as_tensor(actual, dtype=torch.float64), torch.as_tensor(expected, dtype=torch.float64)
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    diff = (actual - expected).abs().max().item() if actual.numel() else 0.0
    assert diff <= tol, f"{what}: max difference {diff:.3g} > {tol}"


# ---- three backends agree with each other and with plain HF output_attentions -------------------


def _agreement_params():
    """Tiny models: every prompt style x two tasks x both query sets. Real models (slow, ~1-2 s a forward):
    chat and few-shot for SmolLM2, few-shot for Gemma (pre-trained, no chat template), every task once,
    the "after" query set once per model."""
    cases = [
        ("tiny_llama", "post", "helpfulness", "final"),
        ("tiny_llama", "post", "helpfulness", "after"),
        ("tiny_llama", "pre", "translation", "final"),
        ("tiny_llama", "pre", "truthfulness", "after"),
        ("tiny_gemma3", "pre", "truthfulness", "final"),
        ("tiny_gemma3", "pre", "truthfulness", "after"),
        ("tiny_gemma3", "pre", "translation", "final"),
        ("smollm2", "post", "helpfulness", "final"),
        ("smollm2", "post", "helpfulness", "after"),
        ("smollm2", "pre", "translation", "final"),
        ("gemma3", "pre", "truthfulness", "final"),
        ("gemma3", "pre", "translation", "after"),
    ]
    return [
        pytest.param(*case, marks=() if case[0].startswith("tiny") else (slow,), id="-".join(case)) for case in cases
    ]


@pytest.mark.parametrize("name,kind,task,queries", _agreement_params())
def test_backends_agree_with_plain_hf(backends, name, kind, task, queries):
    bset = backends(name)
    model = bset.model
    prompt = tokenized(model, task, QUERY, ANSWER_A, ANSWER_B, kind=kind)
    assert len(prompt) <= (model.context_length or len(prompt))
    ref_logits, ref_probs, ref_mass = plain_hf(model, prompt, queries)
    assert ref_mass.shape == (model.n_layers, model.n_heads, 2)
    labels = label_tokens(model.tokenizer)
    first = None
    for backend_name in BACKENDS:
        backend = bset[backend_name]
        (judgment,) = judge_batch(backend, [prompt], labels, queries=queries)
        where = f"{name}/{backend_name}/{kind}/{task}/{queries}"
        assert judgment.spans == prompt.spans
        first = first or judgment  # backends against each other (hf first), then each against plain HF
        assert abs(judgment.probs["A"] - first.probs["A"]) <= TOL, f"{where} vs hf backend: label probs"
        assert_close(judgment.mass, first.mass, TOL, f"{where} vs hf backend: per-head masses")
        assert_close([judgment.probs["A"], judgment.probs["B"]], [ref_probs["A"], ref_probs["B"]], TOL, f"{where} label probs")
        assert abs(judgment.probs["A"] + judgment.probs["B"] - 1.0) < 1e-9
        assert_close(judgment.mass, ref_mass, TOL, f"{where} per-head masses")
        assert_close(judgment.mass.mean(1), ref_mass.mean(1), TOL, f"{where} per-layer masses")
        # the record's per-layer numbers are the head means of the same masses, and means are mass / |span|
        record = judgment_record(judgment)
        width = [e - s for s, e in (prompt.spans["a"], prompt.spans["b"])]
        assert_close([row["mass_a"] for row in record["layers"]], ref_mass[:, :, 0].mean(1), TOL, f"{where} mass_a")
        assert_close([row["mean_b"] for row in record["layers"]], ref_mass[:, :, 1].mean(1) / width[1], TOL, f"{where} mean_b")
        if queries == "final":
            ids = torch.tensor([prompt.input_ids])
            logits = backend.forward(Batch(ids, torch.ones_like(ids)))
            # logits reach ~30 in float32; a full-vocab matmul (TransformerLens, nnsight) and HF's
            # last-position-only one differ by ~3e-5 here, so allow 1e-3 absolute
            assert_close(logits[0], ref_logits, TOL * 10, f"{where} final-position logits")
            assert int(logits[0].argmax()) == int(ref_logits.argmax())


# ---- token spans decode back to the response text --------------------------------------------------

TRICKY_PAIRS = [
    ("The answer is 4!", "Is it 5?"),
    ("First line.\nSecond line.\n\n- a bullet\n- another bullet", "One line only."),
    ("  padded on both sides  ", " leading space only"),
    ("Die Größe des Zimmers beträgt 20 m² – naïve café ☕", "Straße, Übergröße, 東京"),
    ("42 is the answer.", "3.14"),
    ("\nnewline at both edges\n", "ends with a colon:"),
    ("B", "Response A is better."),  # a response that looks like a verdict or a template tag
]


@pytest.mark.parametrize("name", TINY + REAL)
def test_spans_decode_to_response_text(request, name):
    model = request.getfixturevalue(name)
    tokenizer = model.tokenizer
    checked = 0
    for kind in style_kinds(model):
        for task in TASKS:
            for first, second in TRICKY_PAIRS:
                for a, b in ((first, second), (second, first)):
                    prompt = judge_prompt(tokenizer, task, "Wie groß ist das Zimmer? (Größe)", a, b, kind=kind)
                    tokens = tokenize_prompt(tokenizer, prompt)
                    spans = tokens.spans
                    assert spans["query"][1] <= spans["a"][0] < spans["a"][1] <= spans["b"][0] < spans["b"][1] < len(tokens)
                    for slot, text in (("a", a), ("b", b), ("query", "Wie groß ist das Zimmer? (Größe)")):
                        start, end = spans[slot]
                        decoded = tokenizer.decode(tokens.input_ids[start:end])
                        assert decoded.strip() == text.strip(), f"{kind}/{task}/{slot}: {decoded!r} != {text!r}"
                        checked += 1
    assert checked == len(style_kinds(model)) * len(TASKS) * len(TRICKY_PAIRS) * 2 * 3


def test_build_judge_prompt_follows_model_kind(tiny_llama_dir, tiny_llama, tiny_gemma3):
    assert tiny_llama.kind == "post" and tiny_gemma3.kind == "pre"
    forced = load_model(str(tiny_llama_dir), kind="pre")
    assert forced.kind == "pre" and not forced.is_post_trained
    chat = build_judge_prompt(tiny_llama, "helpfulness", QUERY, ANSWER_A, ANSWER_B)
    fewshot = build_judge_prompt(forced, "helpfulness", QUERY, ANSWER_A, ANSWER_B)
    assert chat.text.startswith("<|im_start|>") and chat.text.rstrip().endswith("assistant")
    assert fewshot.text.startswith("# Instruction") and fewshot.text.endswith("# Judgment\n")
    assert fewshot.text.count("# Judgment\n") == 3  # two worked examples, then ours
    with pytest.raises(InterpError, match="chat template"):
        judge_prompt(tiny_gemma3.tokenizer, "helpfulness", QUERY, ANSWER_A, ANSWER_B, kind="post")


# ---- the model object stays the user's -------------------------------------------------------------


@pytest.mark.parametrize("name", TINY + [pytest.param("smollm2", marks=slow)])
def test_booting_backends_leaves_the_model_untouched(backends, name):
    bset = backends(name)  # records the plain HF output before anything is booted
    model = bset.model
    attention_types = [type(m) for n, m in model.hf_model.named_modules() if n.endswith("self_attn")]
    prompt = tokenized(model, "helpfulness", QUERY, ANSWER_A, ANSWER_B, kind="pre")
    labels = label_tokens(model.tokenizer)
    for backend_name in ("transformer_lens", "nnsight"):
        judge_batch(bset[backend_name], [prompt], labels)  # boot and run it once, hooks and all
    with torch.no_grad():
        out = model.hf_model(bset.probe, output_attentions=True)
    assert out.attentions is not None and len(out.attentions) == model.n_layers
    assert all(a is not None and a.shape[1] == model.n_heads for a in out.attentions)
    assert torch.equal(out.logits, bset.before_logits)
    for layer, (now, before) in enumerate(zip(out.attentions, bset.before_attentions)):
        assert torch.equal(now, before), f"layer {layer} attention changed"
    assert [type(m) for n, m in model.hf_model.named_modules() if n.endswith("self_attn")] == attention_types
    assert model.hf_model.config._attn_implementation == "eager"
    assert bset.module_hooks(model.hf_model) == bset.before_hooks  # no hook of ours left behind


# ---- batched (left-padded) judging equals one prompt at a time -------------------------------------

BATCH_ITEMS = [
    ("What is 2+2?", "4", "It is four, because two plus two makes four."),
    (QUERY, ANSWER_A, ANSWER_B),
    ("Name a colour.", "Blue.\nOr maybe green, or red, or any other colour you like best.", "Red"),
]


def _batch_params():
    """Every backend on the tiny models; on the real ones hf and transformer_lens (the bridge handles the
    padding mask itself; nnsight runs the HF forward with the same arguments as hf)."""
    params = []
    for name in TINY:
        params.append(pytest.param(name, "final", BACKENDS, id=f"{name}-final"))
        params.append(pytest.param(name, "after", ("hf",), id=f"{name}-after"))  # the query set lives in the shared reducer
    for name in ("smollm2", "gemma3"):
        params.append(pytest.param(name, "final", ("hf", "transformer_lens"), marks=slow, id=f"{name}-final"))
    return params


@pytest.mark.parametrize("name,queries,backend_names", _batch_params())
def test_batched_judging_equals_one_at_a_time(backends, name, queries, backend_names):
    bset = backends(name)
    model = bset.model
    kind = style_kinds(model)[0]
    prompts = [tokenized(model, "helpfulness", q, a, b, kind=kind) for q, a, b in BATCH_ITEMS]
    assert len({len(p) for p in prompts}) == len(prompts), "prompts should differ in length"
    labels = label_tokens(model.tokenizer)
    for backend_name in backend_names:
        backend = bset[backend_name]
        batched = judge_batch(backend, prompts, labels, queries=queries)
        for index, prompt in enumerate(prompts):
            (single,) = judge_batch(backend, [prompt], labels, queries=queries)
            where = f"{name}/{backend_name}/{queries}/prompt {index}"
            assert batched[index].spans == single.spans == prompt.spans
            assert batched[index].n_tokens == len(prompt)
            assert_close(
                [batched[index].probs["A"], batched[index].probs["B"]], [single.probs["A"], single.probs["B"]], BATCH_TOL, f"{where} probs"
            )
            assert_close(batched[index].mass, single.mass, BATCH_TOL, f"{where} masses")
            assert_close(batched[index].label_mass, single.label_mass, BATCH_TOL, f"{where} label mass")


SHARED_PREFIX_TARGETS = [None, "a", "random"]  # no bias; a bias in the suffix; a control that may fall in the prefix


@pytest.mark.parametrize("target", SHARED_PREFIX_TARGETS)
@pytest.mark.parametrize("queries", ["final", "after"])
@pytest.mark.parametrize("name,shares", [("tiny_llama", True), ("tiny_gemma3_wide_window", True), ("tiny_gemma3", False)])
def test_shared_prefix_pass_equals_one_at_a_time(request, monkeypatch, name, shares, queries, target):
    """The hf backend runs a batch's common prefix once (keys and values repeated over the rows); results
    equal one prompt at a time. A sliding window shorter than the batch (tiny_gemma3: 48) must not share."""
    from hooks.apply import bias_builder
    from hooks.spec import AttentionIntervention
    from interp.backends import HFBackend, make_backend
    from interp.judge import shared_prefix_length

    model = request.getfixturevalue(name)
    backend = make_backend(model, "hf")
    kind = style_kinds(model)[0]
    prompts = [tokenized(model, "helpfulness", q, a, b, kind=kind) for q, a, b in BATCH_ITEMS]
    prompts += [tokenized(model, "helpfulness", q, b, a, kind=kind) for q, a, b in BATCH_ITEMS]
    assert shared_prefix_length(prompts) >= 16
    spec = AttentionIntervention(target=target, alpha=0.0, seed=1) if target else None
    bias = bias_builder(spec, model) if spec else None
    labels = label_tokens(model.tokenizer)
    shared_passes = []
    original = HFBackend._forward_shared
    monkeypatch.setattr(
        HFBackend, "_forward_shared", lambda self, *args: shared_passes.append(1) or original(self, *args)
    )
    batched = judge_batch(backend, prompts, labels, queries=queries, bias=bias)
    if shares and target != "random":
        assert shared_passes, "the batch's common prefix was not shared"
    if not shares:
        assert not shared_passes, "a sliding window shorter than the batch must not share the prefix"
    for index, prompt in enumerate(prompts):
        (single,) = judge_batch(backend, [prompt], labels, queries=queries, bias=bias)
        where = f"{name}/{queries}/{target}/prompt {index}"
        assert_close([batched[index].probs["A"]], [single.probs["A"]], BATCH_TOL, f"{where} probs")
        assert_close(batched[index].mass, single.mass, BATCH_TOL, f"{where} masses")


@pytest.mark.parametrize("positions,shares", [("final", True), ("spans", True), ("all", False)])
def test_shared_prefix_with_residual_edits(tiny_llama, monkeypatch, positions, shares):
    """Steering edits that leave the prefix alone run on the shared-prefix pass; one at every position
    (the prefix included) falls back to the plain pass. Either way batched == one at a time."""
    from interp.backends import HFBackend, make_backend
    from interp.steering import steer

    backend = make_backend(tiny_llama, "hf")
    prompts = [tokenized(tiny_llama, "helpfulness", q, a, b, kind="post") for q, a, b in BATCH_ITEMS]
    direction = torch.randn(tiny_llama.hf_model.config.hidden_size, generator=torch.Generator().manual_seed(0))
    edit = steer(direction, 0, 3.0, "add", positions)
    labels = label_tokens(tiny_llama.tokenizer)
    shared_passes = []
    original = HFBackend._forward_shared
    monkeypatch.setattr(HFBackend, "_forward_shared", lambda self, *args: shared_passes.append(1) or original(self, *args))
    batched = judge_batch(backend, prompts, labels, queries="final", edit=edit)
    assert bool(shared_passes) == shares
    plain = judge_batch(backend, prompts, labels, queries="final")
    assert max(abs(x.probs["A"] - y.probs["A"]) for x, y in zip(batched, plain)) > 1e-4, "the edit should matter"
    for index, prompt in enumerate(prompts):
        (single,) = judge_batch(backend, [prompt], labels, queries="final", edit=edit)
        assert_close([batched[index].probs["A"]], [single.probs["A"]], BATCH_TOL, f"{positions} prompt {index} probs")
        assert_close(batched[index].mass, single.mass, BATCH_TOL, f"{positions} prompt {index} masses")


def test_shared_prefix_patterns_keep_the_batch_columns(tiny_llama):
    """Patterns from the shared-prefix pass are the plain pass's rows for the suffix queries, key for key
    (prefix keys included), so any pattern consumer sees the batch's own coordinates."""
    from interp.backends import make_backend
    from interp.judge import shared_prefix_length

    backend = make_backend(tiny_llama, "hf")
    prompts = [tokenized(tiny_llama, "helpfulness", q, a, b, kind="post") for q, a, b in BATCH_ITEMS]
    batch, offsets = left_pad([p.input_ids for p in prompts], tiny_llama.tokenizer.pad_token_id)
    prefix = shared_prefix_length(prompts)
    plain, shared = {}, {}
    backend.forward(batch, on_pattern=lambda layer, pattern: plain.__setitem__(layer, pattern.clone()))
    backend.forward(batch, on_pattern=lambda layer, pattern: shared.__setitem__(layer, pattern.clone()), shared_prefix=prefix)
    width = batch.input_ids.shape[1]
    for layer in plain:
        assert shared[layer].shape[-2:] == (width - prefix, width)
        for row, offset in enumerate(offsets):
            real_queries = slice(max(prefix, offset + prefix), width)  # the suffix's non-pad query rows
            assert_close(
                shared[layer][row, :, real_queries.start - prefix :], plain[layer][row, :, real_queries], BATCH_TOL,
                f"layer {layer} row {row} pattern",
            )


def test_shared_prefix_stops_before_the_first_response(tiny_llama):
    from interp.judge import shared_prefix_length

    first = tokenized(tiny_llama, "helpfulness", QUERY, ANSWER_A, ANSWER_B, kind="post")
    swapped = tokenized(tiny_llama, "helpfulness", QUERY, ANSWER_B, ANSWER_A, kind="post")
    assert shared_prefix_length([first]) == 0  # one row: nothing to share
    assert shared_prefix_length([first, swapped]) <= min(first.spans["a"][0], swapped.spans["a"][0])
    assert shared_prefix_length([first, swapped]) >= first.spans["query"][1]  # both orders share the query


def test_left_pad_offsets():
    batch, offsets = left_pad([[5, 6, 7], [8]], pad_id=0)
    assert offsets == [0, 2]
    assert batch.input_ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert batch.attention_mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert batch.position_ids.tolist() == [[0, 1, 2], [0, 0, 0]]


# ---- label tokens ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TINY)
def test_label_tokens_cover_bare_and_spaced_variants(request, name):
    model = request.getfixturevalue(name)
    tokenizer = model.tokenizer
    labels = label_tokens(tokenizer)
    assert labels.labels == ("A", "B")
    for label, ids in zip(labels.labels, labels.ids):
        expected = single_token_label_ids(tokenizer, label)
        assert set(ids) == expected and len(ids) == len(set(ids))
        assert len(expected) == 2, f"both tokenizers have a bare and a spaced single token for {label!r}"
        spellings = {tokenizer.decode([i]) for i in ids}
        assert spellings == {label, " " + label}, spellings
    assert not set(labels.ids[0]) & set(labels.ids[1])
    with pytest.raises(InterpError):
        label_tokens(tokenizer, ("A", "A"))  # the same tokens under two labels


@pytest.mark.parametrize("name", TINY)
def test_label_probabilities_sum_to_one(backends, name):
    bset = backends(name)
    model = bset.model
    prompts = [tokenized(model, task, q, a, b, kind="pre") for task in TASKS for q, a, b in BATCH_ITEMS]
    for judgment in judge_batch(bset["hf"], prompts, label_tokens(model.tokenizer)):
        assert abs(judgment.probs["A"] + judgment.probs["B"] - 1.0) < 1e-12
        assert 0.0 <= judgment.probs["A"] <= 1.0 and 0.0 < judgment.label_mass <= 1.0


# ---- empty responses -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TINY)
@pytest.mark.parametrize("empty", ["a", "b"])
def test_empty_response_gives_empty_span_and_null_mean(backends, name, empty):
    bset = backends(name)
    model = bset.model
    a, b = ("", ANSWER_B) if empty == "a" else (ANSWER_A, "")
    other = "b" if empty == "a" else "a"
    prompt = tokenized(model, "helpfulness", QUERY, a, b, kind="pre")
    start, end = prompt.spans[empty]
    assert start == end
    for backend_name, queries in (("hf", "final"), ("hf", "after"), ("nnsight", "final")):
        (judgment,) = judge_batch(bset[backend_name], [prompt], label_tokens(model.tokenizer), queries=queries)
        index = 0 if empty == "a" else 1
        assert torch.all(judgment.mass[:, :, index] == 0)
        record = judgment_record(judgment)
        json.dumps(record, allow_nan=False)  # NaN is recorded as null, so strict JSON works
        assert record["span_tokens"][empty] == 0
        assert all(row[f"mean_{empty}"] is None for row in record["layers"])
        assert all(row[f"mass_{empty}"] == 0.0 for row in record["layers"])
        assert all(isinstance(row[f"mean_{other}"], float) for row in record["layers"])
    mean = per_token_mean(torch.ones(1, 2, 3, 2), torch.tensor([[0.0, 4.0]]))
    assert torch.isnan(mean[..., 0]).all() and torch.all(mean[..., 1] == 0.25)


@pytest.mark.parametrize("slot", ["query", "a", "b"])
@pytest.mark.parametrize("blank", ["", "   \n"])
def test_build_judge_prompt_rejects_empty_text(tiny_llama, slot, blank):
    texts = {"query": QUERY, "a": ANSWER_A, "b": ANSWER_B, slot: blank}
    with pytest.raises(InterpError, match="empty"):
        build_judge_prompt(tiny_llama, "helpfulness", texts["query"], texts["a"], texts["b"])


def test_build_judge_prompt_rejects_prompt_longer_than_context(tiny_llama_short_context_dir):
    model = load_model(str(tiny_llama_short_context_dir))
    assert model.context_length == 64
    with pytest.raises(InterpError, match="context is 64"):
        build_judge_prompt(model, "helpfulness", "Hi?", "Yes.", "No.")


# ---- the Python API: inspect_judgment on every backend ---------------------------------------------

LAYER_KEYS = {"mass_a", "mass_b", "mean_a", "mean_b", "heads_mass_a", "heads_mass_b"}


def check_inspect_shape(result: dict, model) -> None:
    assert {"p_a", "p_b", "spans", "layers"} <= set(result)
    assert abs(result["p_a"] + result["p_b"] - 1.0) < 1e-9
    assert set(result["spans"]) == {"a", "b"}
    for start, end in result["spans"].values():
        assert isinstance(start, int) and isinstance(end, int) and 0 <= start < end
    assert result["spans"]["a"][1] <= result["spans"]["b"][0]
    assert len(result["layers"]) == model.n_layers
    for row in result["layers"]:
        assert LAYER_KEYS <= set(row)
        assert len(row["heads_mass_a"]) == len(row["heads_mass_b"]) == model.n_heads
        for key in ("mass_a", "mass_b", "mean_a", "mean_b"):
            assert 0.0 <= row[key] <= 1.0


@pytest.mark.parametrize("name", TINY + [pytest.param("smollm2", marks=slow)])
def test_inspect_judgment_on_every_backend(backends, name):
    bset = backends(name)
    model = bset.model
    prompt = build_judge_prompt(model, "helpfulness", QUERY, ANSWER_A, ANSWER_B)
    _, ref_probs, ref_mass = plain_hf(model, prompt)
    for backend_name in BACKENDS:
        result = inspect_judgment(bset[backend_name], QUERY, ANSWER_A, ANSWER_B)
        json.dumps(result, allow_nan=False)
        check_inspect_shape(result, model)
        assert result["backend"] == backend_name and result["kind"] == model.kind
        assert result["spans"] == {"a": list(prompt.spans["a"]), "b": list(prompt.spans["b"])}
        assert abs(result["p_a"] - ref_probs["A"]) <= TOL
        heads = torch.tensor([[row["heads_mass_a"], row["heads_mass_b"]] for row in result["layers"]]).transpose(1, 2)
        assert_close(heads, ref_mass, TOL, f"{name}/{backend_name} inspect heads")


# ---- the command line ------------------------------------------------------------------------------


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "interp.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd or REPO,
        timeout=600,
    )


def write_gguf(path: Path, architecture: str) -> Path:
    """A small but valid GGUF file (header, metadata, one tensor) declaring the given architecture."""
    import numpy as np
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), architecture)
    writer.add_block_count(2)
    writer.add_context_length(64)
    writer.add_tensor("token_embd.weight", np.zeros((8, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def bad_input_runs(tmp_path_factory, tiny_llama_dir, tiny_llama_short_context_dir):
    """Run every bad-input case through the CLI at once (each one is a fresh interpreter); gather results.

    Each case gets its own empty INTERP_CACHE so "nothing cached half-way" can be checked; none of them
    needs a packaged model.
    """
    root = tmp_path_factory.mktemp("bad-input")
    bad_gguf = write_gguf(root / "tiny-bert-unknown.gguf", "bert-unknown")
    assert not Path("/tmp/nope.gguf").exists()
    pair = ["--query", "What is 2+2?", "--response-b", "4"]
    cases = {
        "unknown alias": (["--model", "no-such-alias", "--response-a", "Four.", *pair], "unknown model alias"),
        "missing folder": (["--model", "./nope", "--response-a", "Four.", *pair], "not found"),
        "missing gguf": (["--model", "/tmp/nope.gguf", "--response-a", "Four.", *pair], "not found"),
        "unsupported gguf": (["--model", str(bad_gguf), "--response-a", "Four.", *pair], "bert-unknown"),
        "empty response": (["--model", str(tiny_llama_dir), "--response-a", "", *pair], "empty"),
        "too long": (
            ["--model", str(tiny_llama_short_context_dir), "--response-a", "Four. " * 200, *pair],
            "context",
        ),
    }
    running = {}
    for case, (args, _) in cases.items():
        cache = root / case.replace(" ", "-") / "cache"
        cache.mkdir(parents=True)
        process = subprocess.Popen(
            [sys.executable, "-m", "interp.cli", "inspect", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cache.parent,  # ./nope is resolved here, where it certainly does not exist
            env={**os.environ, "INTERP_CACHE": str(cache)},
        )
        running[case] = (process, cache)
    results = {}
    for case, (process, cache) in running.items():
        stdout, stderr = process.communicate(timeout=600)
        results[case] = (process.returncode, stdout, stderr, cache, cases[case][1])
    return results


@pytest.mark.parametrize("case", ["unknown alias", "missing folder", "missing gguf", "unsupported gguf", "empty response", "too long"])
def test_cli_bad_input_is_one_clear_line_and_exit_2(bad_input_runs, case):
    code, stdout, stderr, cache, expected = bad_input_runs[case]
    assert code == 2, f"exit code {code}; stderr:\n{stderr}"
    lines = stderr.splitlines()
    assert len(lines) == 1, f"stderr should be one line, got {len(lines)}:\n{stderr}"
    assert lines[0].startswith("error: ") and expected in lines[0], lines[0]
    assert "Traceback" not in stderr and stdout == ""
    leftovers = [p for p in cache.rglob("*") if p.is_file()]
    assert leftovers == [], f"cached half-way: {leftovers}"
    dequantized = cache / "dequantized"
    assert not dequantized.exists() or list(dequantized.iterdir()) == []


@slow
def test_cli_models_json_lists_both_aliases():
    result = run_cli("models", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["alias"]: row for row in json.loads(result.stdout)}
    assert set(rows) == {"smollm2-135m-instruct", "gemma3-270m"}
    assert (rows["smollm2-135m-instruct"]["kind"], rows["smollm2-135m-instruct"]["layers"], rows["smollm2-135m-instruct"]["heads"]) == ("post", 30, 9)
    assert (rows["gemma3-270m"]["kind"], rows["gemma3-270m"]["layers"], rows["gemma3-270m"]["heads"]) == ("pre", 18, 4)
    assert all(row["source"] for row in rows.values())


@slow
def test_cli_inspect_json_matches_python_api(backends):
    bset = backends("smollm2")
    model = bset.model
    result = run_cli(
        "inspect", "--model", "smollm2-135m-instruct", "--backend", "nnsight",
        "--query", QUERY, "--response-a", ANSWER_A, "--response-b", ANSWER_B, "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    check_inspect_shape(data, model)
    assert len(data["layers"]) == 30 and len(data["layers"][0]["heads_mass_a"]) == 9
    expected = inspect_judgment(bset["hf"], QUERY, ANSWER_A, ANSWER_B)
    assert data["spans"] == expected["spans"]
    assert abs(data["p_a"] - expected["p_a"]) <= TOL
    for got, want in zip(data["layers"], expected["layers"]):
        assert abs(got["mass_a"] - want["mass_a"]) <= TOL and abs(got["mass_b"] - want["mass_b"]) <= TOL
        assert_close(got["heads_mass_b"], want["heads_mass_b"], TOL, "CLI heads_mass_b")
