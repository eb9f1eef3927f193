"""Figures on disk: matplotlib (PNG and PDF need no browser), written atomically, inlined into HTML as data URIs."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from interp.storage import atomic_write_bytes  # noqa: E402

__all__ = ["plt", "png_data_uri", "save_figure"]


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
