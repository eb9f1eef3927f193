"""Judging: label tokens and probabilities, empty responses, and `inspect_judgment` on every backend."""

from __future__ import annotations

import json

import pytest
import torch

from interp.core.attention import per_token_mean
from interp.core.backends import BACKENDS
from interp.core.judge import (
    inspect_judgment,
    judge_batch,
    judgment_record,
    label_tokens,
)
from interp.core.prompts import TASKS
from interp.core.spans import build_judge_prompt
from interp.errors import InterpError
from tests.helpers.reference import (
    ANSWER_A,
    ANSWER_B,
    BATCH_ITEMS,
    QUERY,
    TINY,
    TOL,
    assert_close,
    check_inspect_shape,
    plain_hf,
    single_token_label_ids,
    slow,
    tokenized,
)

# ---- label tokens ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TINY)
def test_label_tokens_cover_bare_and_spaced_variants(request, name):
    model = request.getfixturevalue(name)
    tokenizer = model.tokenizer
    labels = label_tokens(tokenizer)
    assert labels.labels == ("A", "B")
    for label, ids in zip(labels.labels, labels.ids, strict=False):
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
    for backend_name, readout in (("hf", "final"), ("hf", "after"), ("nnsight", "final")):
        (judgment,) = judge_batch(bset[backend_name], [prompt], label_tokens(model.tokenizer), readout=readout)
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


# ---- the Python API: inspect_judgment on every backend ---------------------------------------------


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
