"""The `plain` style: a deterministic normaliser of an answer's surface form, the offline rewriter of
`interp restyle`.

It changes how an answer looks, never what it says, with fixed rules (no model, so the same text always gives
the same rewrite):

- markup: Markdown headings, emphasis (`**bold**`, `*italic*`, `__x__`, `_x_`, `~~x~~`), inline code and code
  fences, links and images (their text kept), block quotes, rules, tables' pipes and HTML tags are removed;
- lists: bulleted and numbered items become sentences of one paragraph, also where a word cap has put the
  list on one line (" * item", and " 1. item" where items 1 and 2 are there);
- emphasis by case: a word in capitals of five letters or more is lower-cased (shorter ones are kept as
  acronyms); each sentence starts with a capital;
- punctuation: curly quotes become straight, dashes a spaced hyphen, runs of `!` or `?` one mark, `!` a
  full stop, an ellipsis a full stop, emoji are removed, no space before a mark, every paragraph ends with one;
- white space: single line breaks join lines, paragraphs are separated by one blank line.

`plain_style(plain_style(t)) == plain_style(t)`: a rewrite is already plain. A non-empty answer never comes out
empty: one the rules would empty (only markup, marks or emoji) is kept as it is.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~).*$", re.MULTILINE)
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]*(.*?)[ \t]*#*[ \t]*$", re.MULTILINE)
_SETEXT = re.compile(r"^\s*(=+|-+)\s*$", re.MULTILINE)
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$", re.MULTILINE)
_QUOTE = re.compile(r"^\s*>+\s?", re.MULTILINE)
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_HTML = re.compile(r"</?[A-Za-z][^>]*>")
_EMPHASIS = [
    re.compile(p)
    for p in (
        r"\*\*(.+?)\*\*",
        r"__(.+?)__",
        r"~~(.+?)~~",
        r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])",
        r"(?<!\w)_(?!\s)(.+?)(?<!\s)_(?!\w)",
    )
]
_CODE = re.compile(r"`+([^`]*)`+")
_ITEM = re.compile(r"^\s*(?:[-*+\u2022\u25aa\u25cf]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)](?=\s))\s+(.*)$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_INLINE_BULLET = re.compile(r"(\S?)\s+[*\u2022]\s+(?=\S)")
_INLINE_NUMBER = re.compile(r"(\S?)(?:^|\s+)\(?\d{1,2}[.)]\s+(?=[A-Za-z\"'(])")
_EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\ufe0f\u200d]")
_CAPS = re.compile(r"\b[A-Z]{5,}\b")
_MARKS = re.compile(r"\s+([,.;:!?])")
_TRANSLATE = str.maketrans(
    {"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2018": "'", "\u2019": "'", "\u00a0": " ", "\u2026": "."}
)
_ENDS = ".!?\"')"


def _strip_markup(text: str) -> str:
    text = _FENCE.sub("", text)
    text = _HEADING.sub(lambda m: m.group(1) + ("" if m.group(1)[-1:] in _ENDS else "."), text)
    text = _RULE.sub("", text)
    text = _SETEXT.sub("", text)
    text = _QUOTE.sub("", text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _HTML.sub("", text)
    for pattern in _EMPHASIS:
        text = pattern.sub(r"\1", text)
    return _CODE.sub(r"\1", text)


def _sentence(line: str) -> str:
    line = line.strip()
    if line and line[-1] not in _ENDS and line[-1] not in ",;:":
        line += "."
    return line


def _paragraphs(text: str) -> list[str]:
    """Lines into paragraphs: list items and table rows become sentences of the paragraph they are in."""
    paragraphs: list[list[str]] = [[]]
    for raw in text.split("\n"):
        if not raw.strip() or _TABLE_RULE.match(raw):
            if raw.strip() == "" and paragraphs[-1]:
                paragraphs.append([])
            continue
        item = _ITEM.match(raw)
        if item:
            paragraphs[-1].append(_sentence(item.group(1)))
        elif "|" in raw.strip()[1:-1] or raw.strip().startswith("|"):
            cells = [cell.strip() for cell in raw.strip().strip("|").split("|") if cell.strip()]
            paragraphs[-1].append(_sentence(", ".join(cells)))
        else:
            paragraphs[-1].append(raw.strip())
    return [" ".join(lines) for lines in paragraphs if lines]


def _inline_lists(paragraph: str) -> str:
    """A list flattened into one line (answers capped at a word limit lose their line breaks): " * item" and,
    where the paragraph holds items 1 and 2, " 1. item" become sentence breaks (after a colon, a space)."""

    def brk(match: re.Match) -> str:
        before = match.group(1)
        return before + (" " if not before or before in ".?!:;" else ". ")

    paragraph = _INLINE_BULLET.sub(brk, paragraph)
    if re.search(r"(^|\s)\(?1[.)]\s", paragraph) and re.search(r"\s\(?2[.)]\s", paragraph):
        paragraph = _INLINE_NUMBER.sub(brk, paragraph)
    return paragraph.strip()


def _punctuation(text: str) -> str:
    text = text.translate(_TRANSLATE)
    text = re.sub(r"\s*[\u2013\u2014]\s*|\s+--\s+", " - ", text)
    text = _EMOJI.sub("", text)
    text = re.sub(r"[!?]*\?[!?]*", "?", text)
    text = re.sub(r"!+", ".", text)
    text = re.sub(r"\.{2,}", ".", text)
    text = re.sub(r"[ \t]+", " ", text)
    text = _MARKS.sub(r"\1", text)
    return re.sub(r"([,;:])(?=[.?])|\.(?=[,;:])", "", text).strip()


def _casing(text: str) -> str:
    text = _CAPS.sub(lambda m: m.group(0).lower(), text)
    return re.sub(r"(^|[.?]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)


def plain_style(text: str) -> str:
    """`text` in the plain style (rules in the module docstring): deterministic and idempotent. An answer the
    rules would empty (all markup, marks or emoji: "---", "**", "![](x.png)", "!!!") is kept as it is, stripped:
    the normaliser changes how an answer looks, never deletes what it says."""
    stripped = _strip_markup(text.replace("\r\n", "\n"))
    paragraphs = [_casing(_punctuation(_sentence(_inline_lists(p)))) for p in _paragraphs(stripped)]
    plain = "\n\n".join(p for p in paragraphs if p.strip(" .")).strip()
    return plain or text.strip()
