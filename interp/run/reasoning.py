"""Reasoning blocks in answers: the one rule that finds them, removes them before judging and measures them.

The DBG paper judges reasoning models (R1-distill, QwQ; Table 2) with their reasoning content removed: a judge
reads only the answer. Reasoning models mark their reasoning with tags: `<think>...</think>` (DeepSeek-R1,
QwQ, Qwen3), `<|begin_of_thought|>...<|end_of_thought|>` (Sky-T1, OpenThinker, Bespoke-Stratos, whose answer
sits between `<|begin_of_solution|>` and `<|end_of_solution|>`: those two tags are dropped, the answer kept),
`<|START_THINKING|>...<|END_THINKING|>` (Command A reasoning), `[THINK]...[/THINK]` (Magistral),
`<seed:think>...</seed:think>` (Seed-OSS), `◁think▷...◁/think▷` (Kimi).

Which markers apply:
- a local model: `<think>` always, plus every known pair its chat template names, plus any `<...think...>` /
  `</...think...>` or `<...reason...>` pair the template holds (`markers_for_template`);
- an imported or served model (no template to read): every known pair (`KNOWN_MARKERS`).

A block is removed with its tags. An answer that opens inside its reasoning (R1-distill's template ends the
prompt with `<think>`, so its output starts in the block and holds only the closing tag) loses everything
before the first closing tag; a block opened and never closed (the answer was cut off while reasoning) runs to
the end. The rule is idempotent: an answer with no markers is returned as it is.

What was removed is kept: `ReasoningSplit.removed` (blocks joined by a blank line), written by the run to
`reasoning/<author>.jsonl` (`interp.run.store.RunDir.reasoning`) with its length in characters and words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

THINK = ("<think>", "</think>")
KNOWN_MARKERS: tuple[tuple[str, str], ...] = (
    THINK,
    ("<|begin_of_thought|>", "<|end_of_thought|>"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    ("[THINK]", "[/THINK]"),
    ("<seed:think>", "</seed:think>"),
    ("◁think▷", "◁/think▷"),
    ("<thinking>", "</thinking>"),
    ("<reasoning>", "</reasoning>"),
)
"""Known (open, close) reasoning tags, `<think>` first."""

ANSWER_WRAPPERS: tuple[str, ...] = ("<|begin_of_solution|>", "<|end_of_solution|>")
"""Tags around the answer itself (after `<|end_of_thought|>`): dropped, the answer between them kept."""

_TAG = re.compile(r"<([A-Za-z_:|-]*(?:think|reason)[A-Za-z_:|-]*)>", re.IGNORECASE)


@dataclass(frozen=True)
class ReasoningSplit:
    """An answer split into what is judged (`answer`) and the reasoning removed from it (`removed`)."""

    answer: str
    removed: str


def markers_for_template(template: str | None) -> tuple[tuple[str, str], ...]:
    """The reasoning tags of a model family, read from its chat template: `<think>`, every known pair the
    template names, and any other `<x>`/`</x>` pair whose name holds "think" or "reason"."""
    found = [THINK]
    if template:
        found += [pair for pair in KNOWN_MARKERS if pair[0] in template or pair[1] in template]
        for name in _TAG.findall(template):
            if not name.startswith("/") and f"</{name}>" in template:
                found.append((f"<{name}>", f"</{name}>"))
    return tuple(dict.fromkeys(found))


def model_markers(tokenizer) -> tuple[tuple[str, str], ...]:
    """The tags of a local model: those its tokenizer's chat template names (`markers_for_template`)."""
    template = getattr(tokenizer, "chat_template", None)
    return markers_for_template(template if isinstance(template, str) else None)


def _split_one(text: str, opening: str, closing: str, removed: list[str]) -> str:
    kept = []
    rest = text
    first_close, first_open = rest.find(closing), rest.find(opening)
    if first_close != -1 and (first_open == -1 or first_close < first_open):  # the answer opened inside the block
        removed.append(rest[:first_close])
        rest = rest[first_close + len(closing) :]
    while (start := rest.find(opening)) != -1:
        kept.append(rest[:start])
        end = rest.find(closing, start + len(opening))
        if end == -1:  # opened and never closed: cut off while reasoning
            removed.append(rest[start + len(opening) :])
            rest = ""
            break
        removed.append(rest[start + len(opening) : end])
        rest = rest[end + len(closing) :]
    kept.append(rest)
    return "".join(kept)


def split_reasoning(text: str, markers: Sequence[tuple[str, str]] = KNOWN_MARKERS) -> ReasoningSplit:
    """`text` without its reasoning blocks (and their tags), and what was removed (blocks joined by a blank
    line, each stripped). An answer wrapped in `<|begin_of_solution|>` tags keeps the answer, not the tags."""
    removed: list[str] = []
    answer = text
    for opening, closing in markers:
        if opening in answer or closing in answer:
            answer = _split_one(answer, opening, closing, removed)
    if any(tag in answer for tag in ANSWER_WRAPPERS) and removed:
        for tag in ANSWER_WRAPPERS:
            answer = answer.replace(tag, "")
    blocks = [block.strip() for block in removed if block.strip()]
    return ReasoningSplit(answer.strip() if removed else answer, "\n\n".join(blocks))


def reasoning_row(item_id: str, removed: str) -> dict:
    """One line of `reasoning/<author>.jsonl`: the item, the removed text and its length."""
    return {"item_id": item_id, "text": removed, "chars": len(removed), "words": len(removed.split())}


def reasoning_summary(removed: dict[str, dict[str, dict]], n_items: int) -> dict[str, dict]:
    """Per author with any reasoning removed (`RunDir.read_reasoning`): on how many of the run's `n_items`
    answers, and the mean length removed per answer (characters, words; answers without any count 0)."""
    return {
        model: {
            "n_answers": len(rows),
            "n_items": n_items,
            "mean_chars": sum(r["chars"] for r in rows.values()) / n_items,
            "mean_words": sum(r["words"] for r in rows.values()) / n_items,
        }
        for model, rows in removed.items()
        if rows
    }
