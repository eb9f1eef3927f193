"""The matched-procedure null: a control judge goes through the selection the tested judge went through.

A head set chosen by a method on judge J's selection items holds the heads that matter most to J's verdict,
whatever J prefers. Controls measured at J's set never went through that selection, so J moves more than they do
by construction (experiments/records/plan.md, plan 3, amendment 7, null seed 3). Under the matched null each
control judge C is localised by the same method on the same selection items, reading J's own model's answer as
"own" (as it does in the test), and is measured at its own chosen set (same size, site and op): the test asks
whether J's change at J's set stands out from the controls' changes at their sets. What it controls for: the
selection itself (a chosen set moves its own judge more than a random one). What it does not: a method that
finds sharper sets in J than in its controls for reasons other than self-preference (a judge whose verdict is
carried by fewer heads), which the test then reads as J's.

Each control's localisation on the selection split is done once per (run, control, own, items, methods) and kept
in RUN/localize/matched/<control>-<key>/ (localisation.csv, directions.npz), read back on a re-run.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from interp.engine.judges import Judges
from interp.engine.variants import digest, run_identity
from interp.locate.directions import layer_directions
from interp.locate.heads import LocalizeItems, localize_run
from interp.run.judging import judge_tasks
from interp.run.store import Run
from interp.splits import split_ids
from interp.storage import atomic_write_bytes, atomic_write_text, path_label

NULL = "matched"  # every chosen set's controls are measured at their own set, chosen by the same method
NULL_RULE = (
    "matched: each control judge localised by the same method on the same selection items (the tested judge's "
    "answer read as its own) and measured at its own chosen set of the same size, site and op; random sets: each "
    "judge at its own draw"
)


def localise(
    run: Run,
    judge: str,
    methods: Sequence[str],
    selection: list[str],
    pool: Judges,
    folder: Path,
    progress: bool,
    own: str | None = None,
) -> dict[str, pd.DataFrame]:
    """Each method's ranking of `judge` on the selection split, best first, kept in `folder` as CSV (and the
    directions as .npz) and read back on a re-run. `own`: the answer read as the judge's own (a control judge's
    is the tested judge's; `localize_run`)."""
    located: dict[str, pd.DataFrame] = {}
    cached = folder / "localisation.csv"
    if cached.is_file():
        table = pd.read_csv(cached)
    else:
        wanted = [m for m in methods if m != "direction"]
        table = (
            localize_run(run, judge, wanted, on=LocalizeItems(selection, own=own), judges=pool, progress=progress)
            if wanted
            else pd.DataFrame()
        )
    for method in methods:
        if method != "direction" and len(table):
            located[method] = table[table["method"] == method].sort_values("rank").reset_index(drop=True)
    if "direction" in methods:
        located["direction"] = directions(run, judge, selection, pool, folder, own)
    if not cached.is_file() and len(table):
        with run.dir.writer():
            atomic_write_text(cached, table.to_csv(index=False))
    return located


def directions(
    run: Run, judge: str, selection: list[str], pool: Judges, folder: Path, own: str | None = None
) -> pd.DataFrame:
    """Per layer, the direction fitted on half the selection items and scored on the other half, best first."""
    cached = folder / "directions.npz"
    half_fit, half_score = split_ids(selection, 0.5, 0, purpose="direction", what="selection half")
    if cached.is_file():
        data = np.load(cached)
        frame = pd.DataFrame({"layer": data["layer"], "score": data["score"], "vector": list(data["vector"])})
    else:
        runner = pool.runner(judge, run)
        tasks = judge_tasks([item for item in run.items if item.id in set(selection)], run.responses, run.config.models)
        found = layer_directions(
            runner,
            judge,
            tasks,
            list(range(runner.model.n_layers)),
            half_fit,
            half_score,
            batch_size=run.config.batch_size,
            own=own,
        )
        frame = pd.DataFrame(
            {
                "layer": [d.layer for d in found],
                "score": [d.paired_accuracy for d in found],
                "vector": [d.vector.numpy() for d in found],
            }
        )
        buffer = io.BytesIO()
        np.savez(
            buffer,
            layer=frame["layer"].to_numpy(),
            score=frame["score"].to_numpy(),
            vector=np.stack(frame["vector"].to_list()),
        )
        with run.dir.writer():
            atomic_write_bytes(cached, buffer.getvalue())
    frame["method"] = "direction"
    return frame.sort_values(["score", "layer"], ascending=[False, True], kind="stable").reset_index(drop=True)


def localisation_folder(run: Run, control: str, own: str, selection: Sequence[str], methods: Sequence[str]) -> Path:
    """Where a judge's localisation on these selection items is kept, whether it is tested or a control (keyed by
    the run, the judge, the answer it reads as own, the items and the methods): the same judge localised on the
    same items is read back by every explain that needs it, whatever its other settings (gap gate, routes, sizes),
    and a judge tested in one explain is not localised again as another's control."""
    key = digest(
        {
            "run": run_identity(run),
            "control": control,
            "own": own,
            "items": sorted(selection),
            "methods": sorted(m for m in methods if m != "direction"),
        }
    )
    return run.dir.root / "localize" / "matched" / f"{path_label(control)}-{key}"


def localise_controls(
    run: Run,
    controls: Sequence[str],
    own: str,
    methods: Sequence[str],
    selection: list[str],
    pool: Judges,
    progress: bool,
) -> dict[str, dict[str, pd.DataFrame]]:
    """Each control judge localised by `methods` on the selection items, `own` read as its own answer (cached,
    `localisation_folder`); each control is let go once localised."""
    out = {}
    for control in controls:
        folder = localisation_folder(run, control, own, selection, methods)
        out[control] = localise(run, control, methods, selection, pool, folder, progress, own=own)
        pool.release(control)
    return out


def top_heads_of(frame: pd.DataFrame, k: int) -> list[list[int]]:
    """A head method's top-k heads, as [[layer, head], ...] in rank order."""
    return [[int(r.layer), int(r.head)] for r in frame.head(k).itertuples()]


def top_layers_of(frame: pd.DataFrame, k: int) -> list[int]:
    """A layer method's top-k layers, sorted."""
    return sorted(int(r.layer) for r in frame.head(k).itertuples())


def attention_top_heads(frame: pd.DataFrame, k: int) -> dict[int, list[int]]:
    """`interp intervene --top-heads K`'s choice from an "attention" ranking: the k heads with the largest signed
    own-minus-other attention (as `interp.analysis.attention_stats.top_heads`: ties in (layer, head) order), as a
    layer -> heads table."""
    rows = frame[np.isfinite(frame["effect"].to_numpy(dtype=float))]
    rows = rows.sort_values(["layer", "head"], kind="stable")
    rows = rows.sort_values("effect", ascending=False, kind="stable").head(k)
    table: dict[int, list[int]] = {}
    for r in rows.itertuples():
        table.setdefault(int(r.layer), []).append(int(r.head))
    return {layer: sorted(hs) for layer, hs in sorted(table.items())}
