"""Token spans decode back to the response text; the judge prompt follows the model kind and is checked."""

from __future__ import annotations

import pytest

from interp.core.models import load_model
from interp.core.prompts import TASKS, judge_prompt
from interp.core.spans import build_judge_prompt, tokenize_prompt
from interp.errors import InterpError
from tests.helpers.reference import (
    ANSWER_A,
    ANSWER_B,
    QUERY,
    REAL,
    TINY,
    style_kinds,
)

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
                    assert (
                        spans["query"][1]
                        <= spans["a"][0]
                        < spans["a"][1]
                        <= spans["b"][0]
                        < spans["b"][1]
                        < len(tokens)
                    )
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
