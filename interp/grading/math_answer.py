"""Math answers: the final answer of a worked solution (the last \\boxed{...}, else a closing "answer is ..." or
the last line), normalised, compared with the reference as text and, where both parse, as exact numbers.

The closing phrase: the text after the line's last "answer" (and "is", ":" or "="), its first `$...$` when it
starts with one, else up to its first full stop ("The final answer is $5$. I hope it is correct." reads 5).
`\\boxed 7` (no braces) boxes the one token after it.

Normalisation: `$` signs, `\\left`/`\\right`, `\\!`, `\\,`, `\\text{...}` units and text, `^\\circ` and `%`, a leading
`x =` or `X =`, thousands commas of a whole answer that is one number (`1,000`, not the pair `(1,234)`), a
trailing `.0`, spaces, braces around the whole answer (`{{1}}`), surrounding parentheses of a single number,
simple LaTeX fractions (`\\frac{a}{b}`, `\\dfrac`, `\\tfrac`, `\\frac12`) to `a/b`, a number followed by a common
unit word (`5 cm`, `3 hours`) to the number, and `a \\times 10^{b}` to `aeb`. Numbers compare exactly as
fractions (`0.5` = `.5` = `+1/2` = `\\frac{1}{2}`, `1e3` = `1000`, exponents up to 1000); anything else (and a
number of more than 4300 digits, past Python's limit on converting text to int) compares as normalised text.
The reason shows at most 60 characters of each side.
"""

from __future__ import annotations

import re
from fractions import Fraction

_FINAL = re.compile(r"answer\s*(?:is\b|:|=)?\s*[:=]?\s*", re.IGNORECASE)
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_UNITS = (
    "cm|mm|km|m|kg|g|mg|lb|lbs|s|sec|seconds|second|min|minutes|minute|h|hr|hours|hour|days|day|years|year|"
    "meters|meter|inches|inch|feet|foot|ft|miles|mile|mph|dollars|dollar|cents|cent|units|unit|degrees|degree"
)
_UNIT = re.compile(rf"({_NUMBER}(?:/{_NUMBER})?)\s+(?:{_UNITS})(?:\^\{{?[23]\}}?)?\.?")
_TIMES_TEN = re.compile(r"(\d)\\times10\^\{?([+-]?\d+)\}?")
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_FRAC_DIGITS = re.compile(r"\\[dt]?frac\s*(\d)\s*(\d)")
_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}` (or `\\fbox{...}`), braces balanced, or the one token after a
    `\\boxed` without braces (`\\boxed 7`); None when there is none."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    after = start + (6 if text.startswith("\\boxed", start) else 5)
    rest = text[after:].lstrip()
    if not rest.startswith("{"):
        token = re.match(r"\\[A-Za-z]+|[^\s${}\\]+", rest)
        return token.group(0).rstrip(".,;") if token else None
    brace = len(text) - len(rest)
    depth = 0
    for index in range(brace, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[brace + 1 : index]
    return None


def _closing(line: str) -> str | None:
    """The answer a line closes with: after its last "answer is", the first `$...$` or up to a full stop."""
    matches = [match for match in _FINAL.finditer(line) if line[match.end() :].strip()]
    if not matches:
        return None
    rest = line[matches[-1].end() :].strip()
    if rest.startswith("$"):
        fence = "$$" if rest.startswith("$$") else "$"
        end = rest.find(fence, len(fence))
        if end > 0:
            return rest[len(fence) : end]
    return re.split(r"\.(?=\s|$)", rest, maxsplit=1)[0].strip()


def final_answer(text: str) -> str:
    """The answer a solution ends with: the last box, else the last "answer is ...", else its last line."""
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        closing = _closing(line)
        if closing:
            return closing
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
    unit = _UNIT.fullmatch(text.strip())
    text = unit.group(1) if unit else text  # 5 cm -> 5
    text = re.sub(r"\s+", "", text).rstrip(".").replace("{,}", ",")
    text = _unwrapped(text)  # {{1}} -> 1: braces that only group the whole answer
    text = re.sub(r"^[a-zA-Z]=(?=[^=])", "", text)  # x = 5 -> 5
    if _THOUSANDS.fullmatch(text):  # 1,000 -> 1000; a pair (1,234) stays a pair
        text = text.replace(",", "")
    text = _TIMES_TEN.sub(r"\1e\2", text)
    text = re.sub(r"\((-?\d+(?:\.\d+)?)\)", r"\1", text)  # (3)/(4) -> 3/4
    if re.fullmatch(r"-?\d+\.0+", text):
        text = text.split(".")[0]
    return text.lower()


def as_number(text: str) -> Fraction | None:
    """An exact number from normalised text: an integer, a decimal (`.5`, `+5`, `1e3`) or a/b; None for
    anything else (an exponent past 1000 too)."""
    part = rf"({_NUMBER}(?:e[+-]?\d{{1,4}})?)"
    match = re.fullmatch(rf"{part}(?:/{part})?", text)
    if not match:
        return None
    exponents = [int(side.split("e")[1]) for side in match.groups() if side and "e" in side]
    if any(abs(exponent) > 1000 for exponent in exponents):
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
