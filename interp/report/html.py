"""The self-contained HTML report: tables and sections assembled into one file, readable offline."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Sequence

from interp.storage import atomic_write_text


def table_html(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    def cell(value) -> str:
        if isinstance(value, float):
            return f"{value:.3f}"
        return html.escape(str(value))

    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}img{max-width:100%}code{background:#f5f5f5;padding:1px 3px}.note{color:#555}"""


def write_report(path: Path, title: str, sections: Sequence[tuple[str, str]]) -> None:
    """One HTML file, images inlined, readable offline (no scripts fetched from anywhere)."""
    body = "".join(f"<h2>{html.escape(h)}</h2>\n{content}\n" for h, content in sections)
    document = f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>"
    atomic_write_text(path, document)
