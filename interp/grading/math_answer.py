"""Math answers: the final answer of a worked solution (the last \\boxed{...}, else a closing "answer is ..." or
the last line), normalised, compared with the reference as text and, where both parse, as exact numbers.

Normalisation: `$` signs, `\\left`/`\\right`, `\\!`, `\\,`, `\\text{...}` units and text, `^\\circ` and `%`, a leading
`x =`, thousands commas (`1,000`), a trailing `.0`, spaces, braces around the whole answer (`{{1}}`),
surrounding parentheses of a single number, and simple LaTeX fractions (`\\frac{a}{b}`, `\\dfrac`, `\\tfrac`,
`\\frac12`) to `a/b`. Numbers compare exactly as fractions (`0.5` = `1/2` = `\\frac{1}{2}`); anything else (and a
number of more than 4300 digits, past Python's limit on
converting text to int) compares as normalised text. The reason shows at most 60 characters of each side.
"""

from __future__ import annotations

import re
from fractions import Fraction

_FINAL = re.compile(r"(?:final answer|answer)\s*(?:is|:)?\s*[:=]?\s*(.+)", re.IGNORECASE)
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_FRAC_DIGITS = re.compile(r"\\[dt]?frac\s*(\d)\s*(\d)")
_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}")
_THOUSANDS = re.compile(r"(?<![\d.])(\d{1,3})((?:,\d{3})+)(?![\d])")


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}` (or `\\fbox{...}`), braces balanced; None when there is none."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    brace = text.find("{", start)
    if brace < 0:
        return None
    depth = 0
    for index in range(brace, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[brace + 1 : index]
    return None


def final_answer(text: str) -> str:
    """The answer a solution ends with: the last box, else the last "answer is ...", else its last line."""
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        match = _FINAL.search(line)
        if match:
            return match.group(1).strip().rstrip(".")
    return lines[-1] if lines else ""


def _unwrapped(text: str) -> str:
    """`text` without the braces that enclose all of it (`{{1}}` -> `1`, not `{1}+{2}`); one pass."""
    partner, stack = {}, []
    for index, char in enumerate(text):
        if char == "{":
            stack.append(index)
        elif char == "}" and stack:
            partner[stack.pop()] = index
    depth = 0
    while depth < len(text) // 2 and partner.get(depth) == len(text) - 1 - depth:
        depth += 1
    return text[depth : len(text) - depth]


def normalise(answer: str) -> str:
    """The comparable text of an answer (see the module's list)."""
    text = answer.strip()
    text = _TEXT.sub(lambda m: m.group(1) if not m.group(1).strip().isalpha() else "", text)
    for token in (
        "\\$",
        "\\left",
        "\\right",
        "\\!",
        "\\,",
        "\\;",
        "\\ ",
        "$",
        "^\\circ",
        "^{\\circ}",
        "\\%",
        "%",
        "\\displaystyle",
    ):
        text = text.replace(token, "")
    text = _FRAC.sub(r"(\1)/(\2)", text)
    text = _FRAC_DIGITS.sub(r"\1/\2", text)
    text = _THOUSANDS.sub(lambda m: m.group(1) + m.group(2).replace(",", ""), text)
    text = re.sub(r"\s+", "", text).rstrip(".")
    text = _unwrapped(text)  # {{1}} -> 1: braces that only group the whole answer
    text = re.sub(r"^[a-z]=(?=[^=])", "", text)  # x = 5 -> 5
    text = re.sub(r"\((-?\d+(?:\.\d+)?)\)", r"\1", text)  # (3)/(4) -> 3/4
    if re.fullmatch(r"-?\d+\.0+", text):
        text = text.split(".")[0]
    return text.lower()


def as_number(text: str) -> Fraction | None:
    """An exact number from normalised text: an integer, a decimal or a/b; None for anything else."""
    match = re.fullmatch(r"(-?\d+(?:\.\d+)?)(?:/(-?\d+(?:\.\d+)?))?", text)
    if not match:
        return None
    try:  # past Python's limit on digits in an int (4300), a number compares as its text
        numerator = Fraction(match.group(1))
        denominator = Fraction(match.group(2)) if match.group(2) is not None else Fraction(1)
    except ValueError:
        return None
    return numerator / denominator if denominator else None


def _shown(text: str, limit: int = 60) -> str:
    """A side of the comparison as the reason shows it: quoted, at most `limit` characters of it."""
    return repr(text) if len(text) <= limit else f"{text[: limit // 2]!r}...({len(text)} characters)"


def math_equal(answer: str, reference: str) -> tuple[bool, str]:
    """(correct, reason): the answer's final answer against the reference, both normalised."""
    got = normalise(final_answer(answer))
    boxed = last_boxed(reference)
    want = normalise(reference if boxed is None else boxed)
    if not got:
        return False, "no final answer found"
    got_number, want_number = as_number(got), as_number(want)
    if got_number is not None and want_number is not None:
        same = got_number == want_number
    else:
        same = got == want
    return same, f"{_shown(got)} {'=' if same else '!='} {_shown(want)}"
