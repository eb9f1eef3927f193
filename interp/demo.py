"""`interp demo`: the main job on the packaged defaults, end to end, into one report."""

from __future__ import annotations

from pathlib import Path

from interp.data import builtin_items
from interp.report import build_report
from interp.runs import RunConfig, run_dbg


def demo_config(n: int | None, backend: str = "hf") -> RunConfig:
    return RunConfig(name="demo", data="builtin", n=n or len(builtin_items()), backend=backend)


def run_demo(out: Path, *, n: int | None = None, backend: str = "hf", progress: bool = True) -> Path:
    out = Path(out)
    loaded: dict = {}
    config = demo_config(n, backend)
    run_dbg(config, out, progress=progress, loaded=loaded)
    return build_report(out)
