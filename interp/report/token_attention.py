"""Prompt tokens as HTML, each shaded by one head's attention weight (the data: `interp.api.token_attention`)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from interp.templating import Markup, render

_OUTLINES = {"a": "box-shadow:inset 0 -2px 0 #1f77b4;", "b": "box-shadow:inset 0 -2px 0 #2ca02c;"}


def tokens_html(
    tokens: Sequence[str],
    weights,
    *,
    spans: dict[str, tuple[int, int]] | None = None,
    skip_first: bool = True,
    color: tuple[int, int, int] = (214, 39, 40),
) -> Markup:
    """Prompt tokens as HTML spans, background alpha proportional to the weight.

    The scale is the largest weight, ignoring the first token when `skip_first` (it usually soaks up most of
    the attention, an "attention sink"). Response spans get an outline; hover shows each token's weight.
    """
    w = torch.as_tensor(weights, dtype=torch.float64).numpy()
    body = w[1:] if skip_first and w.size > 1 else w
    finite = body[np.isfinite(body)]
    scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    in_span = {}
    for name, (start, end) in (spans or {}).items():
        if name in ("a", "b"):
            for position in range(start, end):
                in_span[position] = name
    cells = []
    for position, (token, weight) in enumerate(zip(tokens, w, strict=False)):
        alpha = min(max(weight / scale, 0.0), 1.0) if np.isfinite(weight) else 0.0
        style = (
            f"background:rgba({color[0]},{color[1]},{color[2]},{alpha:.3f});{_OUTLINES.get(in_span.get(position), '')}"
        )
        cells.append((f"{position}: {weight:.4g}", style, token.split("\n")))
    return render(_TOKENS, outlines=_OUTLINES, scale=f"{scale:.4g}", cells=cells)


# A newline inside a token shows as "\u21b5" and a line break; every token's text is escaped.
_TOKENS = (
    "<div style='font-size:90%;color:#555;margin-bottom:4px'>underline: "
    "<span style='{{ outlines.a }}'>response A</span>, <span style='{{ outlines.b }}'>response B</span>; "
    "colour scale max = {{ scale }}</div><div style='font-family:monospace;white-space:pre-wrap;line-height:1.6'>"
    "{% for title, style, lines in cells %}<span title='{{ title }}' style='{{ style }}'>"
    "{% for line in lines %}{% if not loop.first %}\u21b5<br>{% endif %}{{ line }}{% endfor %}</span>{% endfor %}</div>"
)
