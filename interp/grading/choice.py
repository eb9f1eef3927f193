"""Multiple-choice answers: the letter (A-E) an answer commits to, from the usual phrasings.

In order of trust: "answer is (B)" / "Answer: B" / "the correct option is (C)" / "my choice is D" (the last
such phrase; the word "is", ":" or "=" must follow, so "I would not answer A here" names nothing, and "the
answer is not A" neither), a bold or boxed letter (`**C**`, `\\boxed{D}`), an answer that starts with a letter
on its own ("B.", "(B)", "B) ...", "B"), and an answer whose only stand-alone capital letter A-E in
parentheses is one letter. Nothing found is "no choice found".
Prose is not a choice: an answer that starts with the article ("A lot of people think ...", "A good answer
...") or "E.g.", and "the answer is a function" (a lower-case letter followed by a word), name no letter.
"""

from __future__ import annotations

import re

LETTERS = "ABCDE"
_PHRASE = re.compile(
    r"(?:answer|option|choice)\s*(?:is\b|:|=)\s*(?:option\s*|choice\s*)?[:\s]*[\(\[*]*\s*"
    r"(?:((?-i:[A-E]))\b(?![\w'])|([a-e])(?=\s*(?:[\)\]*]|$|[.,;:!?](?!\w))))",  # "is a function": prose
    re.IGNORECASE,
)
_MARKED = re.compile(r"(?:\*\*|\\boxed\{|\\textbf\{)\s*\(?([A-E])\)?[.:]?\s*(?:\*\*|\})")
_LEADING = re.compile(
    r"^\s*(?:[\(\[]([A-E])[\)\]]"  # (B), [B]
    r"|([A-E])(?:[\)\]:]|\.(?!\w)|\s*$|\s+[-–—])"  # B) B. B: B alone, B - why ("E.g." is not E)
    r"|([B-E])\s"  # B and a word
    r"|(A)\s+(?=(?:is|because|since|as)\b))"  # "A" and another word is the article ("A lot of ...") but these
)
_PARENTHESISED = re.compile(r"\(([A-E])\)")


def extract_choice(answer: str) -> str | None:
    """The letter the answer picks, upper case, or None."""
    phrases = _PHRASE.findall(answer)
    if phrases:
        return "".join(phrases[-1]).upper()
    marked = _MARKED.findall(answer)
    if marked:
        return marked[-1]
    leading = _LEADING.match(answer)
    if leading:
        return next(letter for letter in leading.groups() if letter)
    parenthesised = set(_PARENTHESISED.findall(answer))
    if len(parenthesised) == 1:
        return parenthesised.pop()
    return None


def reference_choice(reference: str) -> str | None:
    """The letter a reference names: a bare letter ("b", "(B)") or one read as an answer's is; None if none."""
    bare = reference.strip().strip("()").upper()
    return bare if len(bare) == 1 and bare in LETTERS else extract_choice(reference)


def choice_equal(answer: str, reference: str) -> tuple[bool, str]:
    """(correct, reason): the picked letter against the reference letter (itself read the same way)."""
    want = reference_choice(reference)
    if want is None:
        return False, f"reference {reference!r} names no letter A-E"
    got = extract_choice(answer)
    if got is None:
        return False, "no choice found"
    return got == want, f"{got} {'=' if got == want else '!='} {want}"
