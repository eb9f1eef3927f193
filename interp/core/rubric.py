"""SALIERI's pointwise judge prompt (seed 003, Appendix A: Prometheus' absolute-grading prompt): one answer scored
1-5 against a rubric, written as "Feedback: ... [RESULT] n".

The text is the thesis' Appendix A. The Feedback Collection items it scores carry their own rubric and
reference answer; the toolkit's items do not, so each task has a default rubric (`RUBRICS`, the toolkit's
wording, in the form of the Feedback Collection rubrics: a criterion and one description per score), and an
item without a reference answer gets Prometheus 2's no-reference wording (the reference line and block left
out). The query and the answer are slots (`query`, `a`), so span attention reads the one answer.
"""

from __future__ import annotations

from interp.core.prompts import Prompt, assemble, in_chat_template
from interp.errors import InterpError

SCORE_LABELS = ("1", "2", "3", "4", "5")
RESULT_MARK = "[RESULT]"

_TASK_DESCRIPTION = (
    "###Task Description:\n"
    "An instruction (might include an Input inside it), a response to evaluate, {reference_clause}and a score rubric "
    "representing a evaluation criteria are given.\n"
    "1. Write a detailed feedback that assess the quality of the response strictly based on the given score rubric, "
    "not evaluating in general.\n"
    "2. After writing a feedback, write a score that is an integer between 1 and 5. You should refer to "
    "the score rubric.\n"
    '3. The output format should look as follows: "Feedback: (write a feedback for criteria) [RESULT] (an integer '
    'number between 1 and 5)"\n'
    "4. Please do not generate any other opening, closing, and explanations.\n\n"
    "###The instruction to evaluate:\n"
)
_REFERENCE_CLAUSE = "a reference answer that gets a score of 5, "

RUBRICS: dict[str, tuple[str, tuple[str, str, str, str, str]]] = {
    "helpfulness": (
        "Does the response answer the query helpfully, correctly and completely?",
        (
            "The response does not address the query, or is wrong or harmful.",
            "The response addresses the query only in part, with major errors or omissions.",
            "The response answers the query, with some errors, gaps or irrelevant content.",
            "The response answers the query correctly and helpfully, with minor gaps.",
            "The response answers the query correctly, completely and helpfully.",
        ),
    ),
    "truthfulness": (
        "Is the response truthful: free of fabricated content, factual errors and misleading claims?",
        (
            "The response is mostly false or misleading.",
            "The response holds major factual errors or fabrications.",
            "The response is partly true, with some errors or misleading claims.",
            "The response is true, with minor imprecision.",
            "The response is entirely true and not misleading.",
        ),
    ),
    "translation": (
        "Is the English text an accurate and fluent translation of the German text?",
        (
            "The translation is unrelated to the source or unreadable.",
            "The translation conveys little of the source's meaning.",
            "The translation conveys the main meaning, with errors or awkward wording.",
            "The translation is accurate and fluent, with minor slips.",
            "The translation is accurate, complete and fluent.",
        ),
    ),
}


def result_cue(tokenizer) -> str:
    """What the score is read after: "[RESULT]" when the tokenizer has single tokens for " 1" ... " 5" (their
    probabilities are read with the bare digits'); else "[RESULT] ", the space its own token, as the judge would
    write it (SmolLM2's and Gemma's tokenizers split " 5" into a space and the digit)."""
    spaced = all(len(tokenizer.encode(f" {label}", add_special_tokens=False)) == 1 for label in SCORE_LABELS)
    return RESULT_MARK if spaced else f"{RESULT_MARK} "


def rubric_text(task: str) -> str:
    """The `###Score Rubrics:` block of a task: `[criterion]` and one line per score."""
    if task not in RUBRICS:
        raise InterpError(f"no score rubric for task {task!r}; use one of {', '.join(RUBRICS)}")
    criterion, scores = RUBRICS[task]
    return f"[{criterion}]\n" + "\n".join(f"Score {k}: {text}" for k, text in enumerate(scores, start=1))


def pointwise_prompt(tokenizer, task: str, query: str, response: str, reference: str | None, *, kind: str) -> Prompt:
    """The rubric prompt for one answer: in the chat template for post-trained judges, as plain text (ending on
    "###Feedback:") for pre-trained ones. Slots: `query`, `a` (the answer), `reference` when there is one."""
    clause = _REFERENCE_CLAUSE if reference else ""
    parts: list[tuple[str, str | None]] = [
        (_TASK_DESCRIPTION.format(reference_clause=clause), None),
        (query, "query"),
        ("\n\n###Response to evaluate:\n", None),
        (response, "a"),
    ]
    if reference:
        parts += [("\n\n###Reference Answer (Score 5):\n", None), (reference, "reference")]
    parts.append((f"\n\n###Score Rubrics:\n{rubric_text(task)}\n\n###Feedback:", None))
    if kind == "post":
        return in_chat_template(tokenizer, parts)
    text, spans = assemble(parts)
    return Prompt(text, spans, add_special_tokens=True, style="rubric")
