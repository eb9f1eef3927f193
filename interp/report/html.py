"""The self-contained HTML report: tables and sections assembled into one file, readable offline.

All HTML goes through autoescaping templates (`interp.templating`): names from a config are escaped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from interp.storage import atomic_write_text
from interp.templating import Markup, render

_TABLE = (
    "<table><thead><tr>{% for h in header %}<th>{{ h }}</th>{% endfor %}</tr></thead><tbody>"
    "{% for row in rows %}<tr>{% for v in row %}<td>{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody></table>"
)


def table_html(header: Sequence[str], rows: Sequence[Sequence]) -> Markup:
    """An HTML table (autoescaped) with `header` and `rows`, a float cell written to three decimals."""
    cells = [[f"{v:.3f}" if isinstance(v, float) else v for v in row] for row in rows]
    return render(_TABLE, header=header, rows=cells)


_REPORT = """<!doctype html><html><head><meta charset='utf-8'><title>{{ title }}</title><style>\
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1,h2,h3,nav,p,li,summary{overflow-wrap:anywhere}
table{border-collapse:collapse;margin:1em 0;display:block;max-width:100%;overflow-x:auto}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}img{max-width:100%}code{background:#f5f5f5;padding:1px 3px}.note{color:#555}
details{margin:.5em 0}summary{cursor:pointer;color:#1f4e8c}\
</style></head><body><h1>{{ title }}</h1>
<nav><b>Contents</b><ol>\
{% for heading, content in sections %}<li><a href='#section-{{ loop.index }}'>{{ heading }}</a></li>\
{% endfor %}</ol></nav>
{% for heading, content in sections %}<h2 id='section-{{ loop.index }}'>{{ heading }}</h2>
{{ content }}
{% endfor %}</body></html>"""


def write_report(path: Path, title: str, sections: Sequence[tuple[str, Markup]]) -> None:
    """One HTML file, images inlined, readable offline (no scripts fetched from anywhere); a table of contents
    links each section (`id='section-N'`, in the order given).

    Each section's content must be `Markup` the toolkit rendered (a plain string would be escaped).
    """
    atomic_write_text(path, render(_REPORT, title=title, sections=sections))
