"""The DBG paper's prompts (seed 000, appendix A.6, Tables 4-9) and Chen et al.'s three-way judge prompt (seed
002, Appendix B), assembled from parts with character offsets.

Post-trained (chat) models get the zero-shot text as the user turn of their chat template; pre-trained
models get the few-shot text. Every prompt records where the query and each response lie in the final
string, so token spans come from the tokenizer's offset mapping and never from searching for the text.
The headings the PDF extraction dropped ("# Query", "# Answer", ...) are restored as in the zero-shot text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from interp.data import TASKS, fewshot_examples
from interp.errors import InterpError


@dataclass(frozen=True)
class Prompt:
    """A prompt's text with each named slot's character span (query, a, b), how to tokenize it, and its style."""

    text: str
    char_spans: dict[str, tuple[int, int]]
    add_special_tokens: bool  # False when the text already came out of a chat template
    style: str  # "chat" (zero-shot, post-trained), "fewshot" (pre-trained) or "three-way" (ties, pre-trained)


@dataclass
class _Builder:
    pieces: list[str] = field(default_factory=list)
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    length: int = 0

    def add(self, text: str, slot: str | None = None) -> None:
        if slot is not None:
            self.spans[slot] = (self.length, self.length + len(text))
        self.pieces.append(text)
        self.length += len(text)

    def text(self) -> str:
        return "".join(self.pieces)


def assemble(parts: Sequence[tuple[str, str | None]]) -> tuple[str, dict[str, tuple[int, int]]]:
    """The text of `parts` (text, slot) joined, and each named slot's character span in it."""
    builder = _Builder()
    for text, slot in parts:
        builder.add(text, slot)
    return builder.text(), builder.spans


# ---- judge prompts (Tables 7-9) -------------------------------------------------------------------

_JUDGE_ZERO_SHOT = {
    "helpfulness": {
        "intro": "You are a helpful assistant tasked with evaluating the quality of different responses to a given "
        "query. For each query, you will receive two independent responses. Please judge which response is better.",
        "query_intro": "Here is the given query.",
        "responses_intro": "Here are two independent responses (Response A and Response B) to the query.",
        "outro": "Now, please judge which response is better. You only need to output A or B, with no other text. "
        "Your output should be A if Response A is better or B if Response B is better. Please remember that your "
        "response should start with either A or B",
    },
    "truthfulness": {
        "intro": "You are a knowledgeable assistant. Given a query and two corresponding responses, your task is to "
        "determine which response is more truthful, ensuring it is less misleading, free from fabricated content, "
        "factual inaccuracies, and logical errors.",
        "query_intro": "Here is the query.",
        "responses_intro": "Here are two responses (Response A and Response B) to the query.",
        "outro": "Now, please judge which response is more truthful. You only need to output A or B, with no other "
        "text. Please remember that your response should start with either A or B.",
    },
    "translation": {
        "intro": "You are a helpful assistant tasked with evaluating the quality of two different English translations "
        "of the same German text. For each German text, you will receive two independent English translations. "
        "Please judge which English translation is better.",
        "query_intro": "Here is the German text.",
        "responses_intro": "Here are two independent English translations (English A and English B) "
        "for the German text.",
        "outro": "Now, please judge which English translation is better. You only need to output A or B, with no "
        "other text. Please remember that your response should start with either A or B",
    },
}

_JUDGE_FEW_SHOT_INTRO = {
    "helpfulness": "# Instruction\n\nYou are a helpful assistant tasked with evaluating the quality of different "
    "responses to a query. You will receive multiple queries, each accompanied by two independent responses. For each "
    'query, you should judge which response you think is better.\n\nQueries are placed under "# Query". The two '
    'responses for each query are listed under "# Responses" as "Response A" and "Response B". Your outputs '
    'should be placed under "# Judgment". You only need to output A or B, with no other text.',
    "truthfulness": "# Instruction\n\nYou are a knowledgeable assistant. Given a query and two corresponding "
    "responses, your task is to determine which response is **more truthful**, ensuring it is less misleading, free "
    'from fabricated content, factual inaccuracies, and logical errors.\n\nQueries are placed under "# Query". The '
    'two responses for each query are listed under "# Responses" as "Response A" and "Response B". Your outputs '
    'should be placed under "# Judgment". You only need to output A or B, with no other text.',
    "translation": "# Instruction\n\nYou are a helpful assistant tasked with evaluating the quality of two different "
    "English translations of the same German text. For each German text, you will receive two independent English "
    'translations. Please judge which English translation is better.\n\nThe German texts are under "# German". The '
    'two independent English translations for each German text are under "# English", labeled as "English A" and '
    '"English B", respectively. Your outputs should be placed under "# Judgment". You only need to output A or B, '
    "with no other text.",
}


# ---- Chen et al. 2025's three-way prompt (seed 002, Appendix B, Table 1: MATH500, no reasoning) --------------
# Used for every task when ties are on (`RunConfig.ties`): it names the tie option "T". The seed's text lost
# Appendix B (the prompts are tables); the wording is that of the arXiv HTML version (2504.03846v2, Table 1),
# and agrees with the paper's Appendix A: "directly output a label: "A", "T", or "B", corresponding to which
# assistant's answer is better or they are relatively the same in quality".

_THREE_WAY_INTRO = (
    "You will be given answers from two assistants (Assistant A and Assistant B) to a user prompt. Please act as an "
    "impartial judge and evaluate the quality of their answers.\n\n"
    "You must output only one of the following choices:\n\n"
    "- \u201cA\u201d if Assistant A\u2019s answer is better.\n"
    "- \u201cT\u201d if both answers are relatively the same in quality.\n"
    "- \u201cB\u201d if Assistant B\u2019s answer is better.\n\n"
    "For example, if both answers are relatively the same in quality, output \u201cT\u201d.\n\n"
    "<User Prompt>\n"
)
# A pre-trained judge (no chat template) reads the same text, then the DBG few-shot prompt's verdict heading,
# where the label is the next token (the paper judges instruction-tuned models only: this ending is ours).
THREE_WAY_FEWSHOT_END = "\n\n# Judgment\n"


# ---- judge-side chain of thought (Chen et al. section 5, App. A: "the model is allowed to freely generate its
# judgment in natural language with a reasoning chain, before ending its response with a verdict (e.g., "My final
# verdict is verdict")"). The seed does not hold the paper's CoT prompt; this wording is the toolkit's: the
# judge prompt's answer-only instruction is replaced by one to reason first and end on the verdict phrase.

COT_CUE = "My final verdict is"
COT_STYLES = ("none", "standard", "long")
_COT_INSTRUCTION = {
    "standard": "First explain your reasoning step by step. Then end your response with your final verdict, exactly in "
    'the form "My final verdict is {labels}".',
    "long": "First think it through at length: work out the answer to the query yourself, then check each response "
    "step by "
    "step against it and look for mistakes in both. Then end your response with your final verdict, exactly in the "
    'form "My final verdict is {labels}".',
}


def cot_instruction(cot: str, labels: Sequence[str]) -> str:
    """The instruction to reason before the verdict; `labels` are named as "A, T or B" / "A or B"."""
    named = " or ".join([", ".join(labels[:-1]), labels[-1]]) if len(labels) > 1 else labels[0]
    return _COT_INSTRUCTION[cot].format(labels=named)


def _three_way_intro(cot: str) -> str:
    if cot == "none":
        return _THREE_WAY_INTRO
    return _THREE_WAY_INTRO.replace(
        "You must output only one of the following choices:", "Your final verdict must be one of the following choices:"
    ).replace(
        "For example, if both answers are relatively the same in quality, output \u201cT\u201d.",
        cot_instruction(cot, ("A", "T", "B")),
    )


def _three_way_parts(query: str, response_a: str, response_b: str, cot: str = "none") -> list[tuple[str, str | None]]:
    return [
        (_three_way_intro(cot), None),
        (query, "query"),
        ("\n\n<The Start of Assistant A\u2019s Answer>\n", None),
        (response_a, "a"),
        ("\n<The End of Assistant A\u2019s Answer>\n\n<The Start of Assistant B\u2019s Answer>\n", None),
        (response_b, "b"),
        ("\n<The End of Assistant B\u2019s Answer>", None),
    ]


def _outro(outro: str, cot: str) -> str:
    """The DBG prompt's closing instruction; with `cot`, its first sentence and the instruction to reason first."""
    return outro if cot == "none" else f"{outro.split('. ')[0]}. {cot_instruction(cot, ('A', 'B'))}"


def _headings(task: str) -> tuple[str, str, str]:
    """(query heading, responses heading, tag stem) of a task."""
    return ("# German", "# English", "English") if task == "translation" else ("# Query", "# Responses", "Response")


def _judge_block(
    task: str, query: str, response_a: str, response_b: str, *, slots: bool
) -> list[tuple[str, str | None]]:
    query_heading, responses_heading, tag = _headings(task)
    slot = (lambda name: name) if slots else (lambda name: None)
    return [
        (f"{query_heading}\n", None),
        (query, slot("query")),
        (f"\n\n{responses_heading}\n<{tag} A>", None),
        (response_a, slot("a")),
        (f"</{tag} A>\n<{tag} B>", None),
        (response_b, slot("b")),
        (f"</{tag} B>\n\n# Judgment\n", None),
    ]


def _check_task(task: str) -> None:
    if task not in TASKS:
        raise InterpError(f"unknown task {task!r}; use one of {', '.join(TASKS)}")


def judge_prompt(
    tokenizer,
    task: str,
    query: str,
    response_a: str,
    response_b: str,
    *,
    kind: str,
    ties: bool = False,
    cot: str = "none",
) -> Prompt:
    """The pairwise judge prompt: zero-shot in the chat template for post-trained judges, two-shot otherwise (the
    first two judgment examples of the packaged few-shot file).

    With `ties`, Chen et al.'s three-way A/T/B prompt (for every task): in the chat template for post-trained
    judges; as plain text ending on a "# Judgment" heading for pre-trained ones. With `cot` ("standard",
    "long"), the judge is asked to reason before its verdict (`cot_instruction`); post-trained judges only.
    """
    _check_task(task)
    if cot != "none" and kind != "post":
        raise InterpError(
            "judge-side chain of thought (cot) needs a post-trained (chat) judge; a few-shot prompt shows "
            "verdicts without reasoning"
        )
    if ties:
        parts = _three_way_parts(query, response_a, response_b, cot)
        if kind == "post":
            return in_chat_template(tokenizer, parts)
        text, spans = assemble([*parts, (THREE_WAY_FEWSHOT_END, None)])
        return Prompt(text, spans, add_special_tokens=True, style="three-way")
    if kind == "post":
        texts = _JUDGE_ZERO_SHOT[task]
        query_heading, responses_heading, tag = _headings(task)
        parts = [
            (f"{texts['intro']}\n\n{texts['query_intro']}\n\n{query_heading}\n", None),
            (query, "query"),
            (f"\n\n{texts['responses_intro']}\n\n{responses_heading}\n<{tag} A>", None),
            (response_a, "a"),
            (f"</{tag} A>\n<{tag} B>", None),
            (response_b, "b"),
            (f"</{tag} B>\n\n{_outro(texts['outro'], cot)}", None),
        ]
        return in_chat_template(tokenizer, parts)
    examples = _default_fewshot()[task]["judgment"][:2]
    parts: list[tuple[str, str | None]] = [(_JUDGE_FEW_SHOT_INTRO[task] + "\n\n", None)]
    for example in examples:
        parts += _judge_block(task, example["query"], example["response_a"], example["response_b"], slots=False)
        parts.append((f"{example['judgment']}\n\n", None))
    parts += _judge_block(task, query, response_a, response_b, slots=True)
    text, spans = assemble(parts)
    return Prompt(text, spans, add_special_tokens=True, style="fewshot")


# ---- generation prompts (Tables 4-6) --------------------------------------------------------------

_GENERATION_ZERO_SHOT = {
    "helpfulness": (
        "You are a helpful assistant. Please help me answer the query below. Keep your answer within {words} words."
        "\n\n# Query\n",
        "\n\nNow, please provide your answer to this query.\n\n# Answer",
    ),
    "truthfulness": (
        "You are a truthful assistant. Please help me answer the query below truthfully, remaining faithful to "
        "factual knowledge and the given context. Avoid making up any untrue facts.\n\n# Query\n",
        "\n\nNow, please provide your answer to the query. Keep your answer within {words} words.\n\n# Answer",
    ),
    "translation": (
        "You are an excellent translator, and you specialize in translating German into English. Given a piece of "
        "German text, please help translate it into English. Here is the given German text.\n\n# German\n",
        "\n\nNow, please translate the German text into English. You only need to provide the English translation, "
        "with no other text.\n\n# English",
    ),
}

_GENERATION_FEW_SHOT_INTRO = {
    "helpfulness": "# Instruction\n\nBelow is a list of conversations between a human and an AI assistant (you).\n\n"
    "As an AI assistant, you will engage in conversations with users, responding to their queries which are presented "
    'under the heading "# Query".\n\nYour responses should be entered under the heading "# Answer".\n\nYou excel '
    "in a wide range of tasks including, but not limited to, providing general information, conducting reasoning, "
    "engaging in role-play, creative writing, planning, and solving mathematical and coding problems.\n\nYour "
    "responses should be well-structured, comprehensive, and aim to thoroughly address the user's query or problem at "
    "hand. **Please keep your answer within {words} words.**",
    "truthfulness": "# Instruction\n\nAs an AI assistant, you will engage in conversations with users, responding to "
    'their queries which are presented under the heading "# Query". Your responses should be entered under the '
    'heading "# Answer". **You should respond to queries truthfully, remaining faithful to factual knowledge and the '
    "given context. Avoid making up any untrue facts.** Keep your answers within {words} words.",
    "translation": "# Instruction\n\nYou are an excellent translator, and you specialize in translating German into "
    "English. **Given a piece of German text, please translate it into English.** The German texts are under "
    '"# German", and the corresponding English translations are under "# English".',
}

# The few-shot generation prompts end on the answer heading; the model writes until the next heading.
FEWSHOT_STOP = "\n# "


# SALIERI's chapter-4 treatment (seed 003, section 4.2, Feedback Collection): answers made worse on purpose by an
# instruction put before the task. The thesis gives it as a system prompt; here it opens the user turn (or the
# few-shot text), so every chat template and base model reads it the same way.
TREATMENT = "You are a test assistant. You should answer all questions with incorrect answers to test the system."


def generation_prompt(
    tokenizer,
    task: str,
    query: str,
    *,
    kind: str,
    words: int = 200,
    fewshot: dict | None = None,
    treatment: bool = False,
) -> Prompt:
    """The paper's generation prompt; with `treatment`, SALIERI's instruction to answer incorrectly before it."""
    _check_task(task)
    opening = f"{TREATMENT}\n\n" if treatment else ""
    if kind == "post":
        before, after = _GENERATION_ZERO_SHOT[task]
        return in_chat_template(
            tokenizer,
            [(opening + before.format(words=words), None), (query, "query"), (after.format(words=words), None)],
        )
    query_heading, answer_heading = ("# German", "# English") if task == "translation" else ("# Query", "# Answer")
    examples = (fewshot if fewshot is not None else _default_fewshot())[task]["generation"]
    parts: list[tuple[str, str | None]] = [
        (opening + _GENERATION_FEW_SHOT_INTRO[task].format(words=words) + "\n\n", None)
    ]
    for example in examples:
        parts.append((f"{query_heading}\n{example['query']}\n\n{answer_heading}\n{example['answer']}\n\n", None))
    parts += [(f"{query_heading}\n", None), (query, "query"), (f"\n\n{answer_heading}\n", None)]
    text, spans = assemble(parts)
    return Prompt(text, spans, add_special_tokens=True, style="fewshot")


class UserTurnOnly:
    """A stand-in tokenizer whose "chat template" is the bare user message: a `kind="post"` prompt built with
    it is exactly the user turn a local chat model sees (what an OpenAI-compatible chat server is sent; the
    server applies its own template)."""

    chat_template = "{{ messages[0]['content'] }}"

    @staticmethod
    def apply_chat_template(messages, tokenize=False, add_generation_prompt=True):
        """The user turn's text as it is: no template around it."""
        return messages[0]["content"]


# ---- shared helpers --------------------------------------------------------------------------------

_SENTINEL = "\x00INTERP_USER_TURN\x00"


def in_chat_template(tokenizer, parts: list[tuple[str, str | None]]) -> Prompt:
    """Put assembled parts in the user turn of the tokenizer's chat template, shifting the recorded offsets."""
    if not getattr(tokenizer, "chat_template", None):
        raise InterpError("this model has no chat template; load it with kind='pre' to use few-shot prompts")
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": _SENTINEL}], tokenize=False, add_generation_prompt=True
    )
    if rendered.count(_SENTINEL) != 1:
        raise InterpError("the chat template does not place the user message verbatim; use kind='pre'")
    prefix, suffix = rendered.split(_SENTINEL)
    content, spans = assemble(parts)
    shifted = {slot: (start + len(prefix), end + len(prefix)) for slot, (start, end) in spans.items()}
    return Prompt(prefix + content + suffix, shifted, add_special_tokens=False, style="chat")


def _default_fewshot() -> dict:
    return fewshot_examples()
