"""Rewriting answers into one style (`interp restyle`): the `plain` normaliser offline, or an LLM rewriter (a
local model or an OpenAI-compatible server) prompted with `REWRITE_PROMPT`.

An LLM rewrite is an answer like any other: the rewrite instruction (`REWRITE_PROMPT`, holding the style,
the instruction and the original answer) is the query of the project's generation prompt (the paper's Table 4,
"helpfulness"), so a local rewriter goes through `generate_responses` and a served one through
`server_responses`: greedy, capped at the run's word limit, each rewrite cached under a key of the rewriter's
weights (or served model), the prompt and the decoding. A killed restyle asks again only for what it lacks.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Sequence

from interp.config import HTTPJudgeConfig
from interp.data import Item
from interp.errors import InterpError
from interp.run.plain_style import plain_style
from interp.run.responses import Decoding, Response

PLAIN = "plain"

# style -> what the rewriter is asked for (the paper's two styles, Section 4.2, and a neutral one)
STYLES: dict[str, str] = {
    "humorous": "a humorous style: light, witty and playful",
    "attractive": "an attractive style: engaging, vivid and pleasant to read",
    "formal": "a formal style: neutral, precise and impersonal",
}

REWRITE_PROMPT = (
    "Rewrite the response below in {style}. Keep its meaning and every fact it states; do not add or remove "
    "information, and do not answer the instruction yourself. Reply with the rewritten response only."
    "\n\nInstruction: {instruction}\n\nResponse: {response}"
)
"""The LLM rewriter's instruction (the DBG paper does not print the one it gave DeepSeek-V3)."""

PROMPT_VERSION = 1  # part of every rewrite's key: a changed prompt never reuses another's rewrites


def check_style(style: str, rewriter: str | None) -> None:
    """`plain` is the offline normaliser and takes no rewriter; every other style is prompted and needs one."""
    if style == PLAIN:
        if rewriter is not None:
            raise InterpError(
                "--style plain is the deterministic normaliser and takes no --rewriter; give a prompted style ("
                + ", ".join(STYLES)
                + ") for an LLM rewriter"
            )
        return
    if style not in STYLES:
        raise InterpError(f"unknown style {style!r}; use {PLAIN} (offline) or a prompted style: {', '.join(STYLES)}")
    if rewriter is None:
        raise InterpError(
            f"--style {style} is prompted: give --rewriter MODEL (a local model, or with --rewriter-url an "
            "OpenAI-compatible server)"
        )


def rewrite_prompt(style: str, instruction: str, response: str) -> str:
    """The rewrite instruction for one answer in `style`."""
    return REWRITE_PROMPT.format(style=STYLES[style], instruction=instruction, response=response)


@dataclass(frozen=True)
class Rewriter:
    """Who rewrites: `model` None for `plain`; a local model spec; or, with `url`, the served model's name."""

    style: str
    model: str | None = None
    url: str | None = None
    timeout: float = 300.0

    @property
    def name(self) -> str:
        """The rewriter's name: its model, or the plain normaliser."""
        return "plain-normaliser" if self.model is None else self.model

    def endpoint(self) -> HTTPJudgeConfig:
        """The HTTP endpoint of a served rewriter model."""
        return HTTPJudgeConfig(
            name=f"rewriter-{self.model}",
            base_url=self.url,
            model=self.model,
            timeout=self.timeout,
            retries=2,
            logprobs=False,
        )

    def record(self, fingerprint: str | None = None) -> dict:
        """What determines the rewrites (restyle.json, the derived run's key): style, prompt, rewriter."""
        kind = "normaliser" if self.model is None else "server" if self.url else "local"
        out = {"style": self.style, "kind": kind, "rewriter": self.name, "prompt_version": PROMPT_VERSION}
        if self.model is not None:
            out["prompt"] = REWRITE_PROMPT.replace("{style}", STYLES[self.style])
        return out | ({"fingerprint": fingerprint} if fingerprint else {})


@dataclass(frozen=True)
class Original:
    """One answer to rewrite: whose, to which item, and its text."""

    author: str
    item: Item
    text: str

    @property
    def key(self) -> str:
        """The original answer's key: its author and item."""
        return f"{self.author}\t{self.item.id}"


def rewrite_items(originals: Sequence[Original], style: str) -> list[Item]:
    """The rewrite instructions as items (their query the full `REWRITE_PROMPT`), one per original answer."""
    return [
        Item(
            hashlib.sha256(o.key.encode()).hexdigest()[:16], "helpfulness", rewrite_prompt(style, o.item.query, o.text)
        )
        for o in originals
    ]


def rewrite(
    originals: Sequence[Original], rewriter: Rewriter, decoding: Decoding, *, model=None, progress: bool = True
) -> list[str]:
    """The rewrites of `originals`, in order: `plain_style` for the normaliser, else the LLM's answers to the
    rewrite instructions (`model`: the loaded local rewriter; a server is asked when `rewriter.url` is set)."""
    if rewriter.model is None:
        return [plain_style(o.text) for o in originals]
    items = rewrite_items(originals, rewriter.style)
    if rewriter.url:
        from interp.run.server_responses import server_responses

        answers = server_responses(rewriter.endpoint(), items, decoding, progress=progress)
    else:
        from interp.run.responses import generate_responses

        answers = generate_responses(model, items, decoding, name=rewriter.name, progress=progress)
    return [a.text for a in answers]


def as_responses(originals: Sequence[Original], texts: Sequence[str], rewriter: Rewriter) -> dict[str, list[Response]]:
    """The rewrites as the derived run's response records, per author."""
    out: dict[str, list[Response]] = {}
    for original, text in zip(originals, texts, strict=False):
        key = hashlib.sha256(json.dumps([rewriter.record(), original.key, original.text, text]).encode()).hexdigest()[
            :24
        ]
        out.setdefault(original.author, []).append(Response(original.item.id, original.author, text, -1, key))
    return out
