"""Figures on disk: matplotlib (PNG and PDF need no browser), written atomically, inlined into HTML as data URIs.

Figures are `matplotlib.figure.Figure` objects made without pyplot (`subplots` below), so drawing needs no
display and switches no global backend: a script saves them headless, and a notebook shows a returned
figure as a PNG (`_repr_png_`) with no `%matplotlib` line and no `show()` helper.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

from matplotlib.figure import Figure

from interp.storage import atomic_write_bytes

__all__ = ["Figure", "ReportFigure", "png_data_uri", "save_figure", "subplots"]


class ReportFigure(Figure):
    """A matplotlib `Figure` that notebooks display as a PNG (IPython calls `_repr_png_`)."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        return buffer.getvalue()


def subplots(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float] | None = None, **kwargs):
    """`pyplot.subplots` without pyplot: a new figure (no global state, no backend) and its axes."""
    fig = ReportFigure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kwargs)


def save_figure(fig: Figure, stem: Path) -> dict[str, Path]:
    """Write PNG and PDF next to each other; returns their paths."""
    out = {}
    for ext in ("png", "pdf"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=ext, dpi=150, bbox_inches="tight")
        path = Path(f"{stem}.{ext}")
        atomic_write_bytes(path, buffer.getvalue())
        out[ext] = path
    return out


def png_data_uri(path: Path) -> str:
    """The PNG at `path` as a `data:` URI, so a report embeds it and stays one self-contained file."""
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode()
