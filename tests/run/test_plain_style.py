"""The `plain` style normaliser: each rule, determinism, idempotence, and words kept."""

from __future__ import annotations

import json
import re

import pytest

from interp.run.plain_style import plain_style
from tests.helpers import REPO


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        (
            "# Boiling an egg\n\nPut it in water.",
            "Boiling an egg.\n\nPut it in water.",
        ),  # a heading: a sentence of its own
        (
            "It is **very** *hot* and __wet__ and ~~cold~~ `code`.",
            "It is very hot and wet and cold code.",
        ),  # emphasis, code
        (
            "See [the docs](http://x.org/a) and ![a cat](c.png).",
            "See the docs and a cat.",
        ),  # links and images keep their text
        ("> quoted line\n\n---\n\n<b>bold</b> tag", "Quoted line.\n\nBold tag."),  # quote, rule, HTML
        ("```python\nx = 1\n```", "X = 1."),  # the fence goes, the code stays as text
        (
            "Steps:\n\n- boil water\n- add the egg\n* wait",
            "Steps:\n\nBoil water. Add the egg. Wait.",
        ),  # bullets: sentences
        ("1. First\n2) Second\n(3) Third", "First. Second. Third."),  # numbered items
        ("Consider: * a venue * a menu", "Consider: a venue. A menu."),  # a list a word cap put on one line
        ("Steps 1. **Plan** it 2. Cook it", "Steps. Plan it. Cook it."),
        ("It boils at 100. Then it is hot.", "It boils at 100. Then it is hot."),  # a number alone is no list
        ("| a | b |\n|---|---|\n| 1 | 2 |", "A, b. 1, 2."),  # a table: its rows as sentences
        (
            "This is EXTREMELY IMPORTANT for NASA, VERY.",
            "This is extremely important for NASA, VERY.",
        ),  # shouting lower-cased, acronyms kept
        ("Wow!!! Really?! Hmm... ok\u2026", "Wow. Really? Hmm. Ok."),  # marks: one, ! a stop, ellipsis a stop
        (
            "\u201cQuoted\u201d \u2018single\u2019 \u2014 dash \u2013 en",
            "\"Quoted\" 'single' - dash - en.",
        ),  # quotes and dashes
        ("Great job \U0001f600 , thanks !", "Great job, thanks."),  # emoji, space before a mark
        ("one line\nwraps here\n\n\n\nnext paragraph", "One line wraps here.\n\nNext paragraph."),  # white space
        ("", ""),
    ],
)
def test_each_rule(text, plain):
    assert plain_style(text) == plain


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def test_real_answers_keep_their_words_and_a_plain_text_is_left_as_it_is():
    """On the 16 AlpacaEval-format answers (plain prose, written by no model here): the rewrite keeps every word
    in order, is idempotent, and is the same each time."""
    answers = [row["output"] for row in json.loads((REPO / "tests" / "fixtures" / "alpacaeval_16.json").read_text())]
    for answer in answers:
        plain = plain_style(answer)
        assert _words(plain) == _words(answer)
        assert plain_style(plain) == plain == plain_style(answer)


def test_markdown_answers_lose_their_markup_and_keep_their_words():
    answer = "## Tips\n\n1. **Soak** the stain in *cold* water!!\n2. Use SALT - it WORKS.\n\n> Never rub it."
    plain = plain_style(answer)
    assert not re.search(r"[#*>]|\n\d\.", plain) and "!!" not in plain
    assert _words(plain) == _words(re.sub(r"^\d\.", "", answer, flags=re.M))  # every word but the list numbers
    assert plain_style(plain) == plain


@pytest.mark.parametrize(
    "text",
    [
        "---",
        "***",
        "* * *",
        "___",
        "====",
        "#",
        "## ##",
        "- ",
        "> ",
        "|",
        "| |",
        "```",
        "```\n```",
        "``",
        "<br>",
        "<b></b>",
        "![](img.png)",
        "!!!",
        "...",
        "\U0001f600",
        "\u200d",
        "=",
    ],
)
def test_an_answer_the_rules_would_empty_is_kept(text):
    """Only markup, marks or emoji: the rules leave nothing, so the answer is kept as it is (stripped), and a second
    pass keeps it too. An empty rewrite of a non-empty answer made `interp restyle --style plain` refuse a run."""
    plain = plain_style(text)
    assert plain == text.strip() and plain_style(plain) == plain


def test_no_alpacaeval_answer_or_instruction_comes_out_empty():
    """Every answer and instruction of the shipped AlpacaEval sets (the 48 unseen ones and the 16 of the fixture),
    as they are and each with its letters and digits taken away (what is left: the markup and marks alone)."""
    rows = [
        row
        for path in (
            REPO / "interp" / "builtin" / "alpacaeval_unseen_48.json",
            REPO / "tests" / "fixtures" / "alpacaeval_16.json",
        )
        for row in json.loads(path.read_text())
    ]
    texts = [row[key] for row in rows for key in ("output", "instruction")]
    for text in texts + [re.sub(r"\w", "", t) for t in texts]:
        if text.strip():
            assert plain_style(text).strip(), repr(text)
