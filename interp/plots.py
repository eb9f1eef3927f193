"""Paper figures with matplotlib (PNG and PDF need no browser) and a self-contained HTML report."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from interp.storage import atomic_write_bytes, atomic_write_text  # noqa: E402


def figure2_grid(summary: dict):
    """DBG paper Figure 2: rows judge A, gold, judge B; columns A wins, B wins (hard win rates)."""
    first, second = summary["models"]
    judges = summary["judges"]
    rows, labels = [], []
    for name, is_gold in ((first, False), ("gold", True), (second, False)):
        if is_gold:
            rate = summary["gold"]["win_rate"][first]
            labels.append("Gold (" + ", ".join(summary["gold"]["judges"]) + ")")
        elif name in judges:
            rate = judges[name]["win_rate_first_hard"]
            labels.append(f"Judge: {name}")
        else:
            continue
        rows.append([rate, 1 - rate])
    values = np.array(rows)
    fig, ax = plt.subplots(figsize=(6.2, 0.9 + 0.7 * len(rows)))
    ax.imshow(values, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    for (r, c), v in np.ndenumerate(values):
        ax.text(c, r, f"{100 * v:.1f}%", ha="center", va="center", color="white" if v > 0.6 else "black", fontsize=11)
    ax.set_xticks([0, 1], [f"A wins\n({first})", f"B wins\n({second})"], fontsize=9)
    ax.set_yticks(range(len(labels)), labels, fontsize=9)
    ax.set_title(f"Pairwise judgments, {summary['n_items']} instructions", fontsize=10)
    fig.tight_layout()
    return fig


def save_figure(fig, stem: Path) -> dict[str, Path]:
    """Write PNG and PDF next to each other; returns their paths."""
    out = {}
    for ext in ("png", "pdf"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=ext, dpi=150, bbox_inches="tight")
        path = Path(f"{stem}.{ext}")
        atomic_write_bytes(path, buffer.getvalue())
        out[ext] = path
    plt.close(fig)
    return out


def png_data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode()


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
