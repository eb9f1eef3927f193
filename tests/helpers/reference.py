"""Independent references for the core tests: plain transformers outputs, label spellings, tolerances."""

from __future__ import annotations

import pytest
import torch

from interp.core.prompts import judge_prompt
from interp.core.spans import tokenize_prompt

slow = pytest.mark.slow
TOL = 1e-4
BATCH_TOL = 1e-5

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
    """Independent of interp.core.judge: every single-token spelling of the label, bare or after a space."""
    found = set()
    for spelling in (label, " " + label):
        ids = tokenizer.encode(spelling, add_special_tokens=False)
        if len(ids) == 1:
            found.add(ids[0])
    return found


def plain_hf(model, prompt, readout: str = "final"):
    """Plain transformers: final logits, renormalised A/B probabilities, and span masses [layer, head, span]."""
    ids = torch.tensor([prompt.input_ids])
    with torch.no_grad():
        out = model.hf_model(ids, output_attentions=True, logits_to_keep=1)  # attentions still cover every position
    assert len(out.attentions) == model.n_layers
    assert all(a.shape[-2:] == (ids.shape[1], ids.shape[1]) for a in out.attentions)
    seq = ids.shape[1]
    if readout == "final":
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


BATCH_ITEMS = [
    ("What is 2+2?", "4", "It is four, because two plus two makes four."),
    (QUERY, ANSWER_A, ANSWER_B),
    ("Name a colour.", "Blue.\nOr maybe green, or red, or any other colour you like best.", "Red"),
]


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
