"""A small run for the tests: items with references, one judge's own answers against imported ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

ITEMS = [  # id, query, reference, the other writer's answer
    ("capital", "What is the capital of France?", "The capital of France is Paris.", "I think it is Lyon."),
    ("boil", "At what temperature does water boil?", "Water boils at 100 degrees Celsius.", "About 90 degrees."),
    ("legs", "How many legs does a spider have?", "A spider has eight legs.", "A spider has six legs."),
    ("sky", "Why is the sky blue?", "Air scatters blue light more than red.", "Because the sea is blue."),
]


def small_run_config(folder: Path, judge: Any, items: Sequence[tuple] = ITEMS, **keys: Any) -> dict:
    """The keys of a run TOML in which `judge` (a name, folder or `Judge`) judges its own answers against the
    imported "writer-y" on `items` (written to `folder`); `keys` replace the defaults."""
    (folder / "items.jsonl").write_text(
        "".join(json.dumps({"id": i, "task": "helpfulness", "query": q, "reference": r}) + "\n" for i, q, r, _ in items)
    )
    (folder / "other.jsonl").write_text("".join(json.dumps({"item_id": i, "text": b}) + "\n" for i, _, _, b in items))
    return (
        dict(
            n=len(items),
            data=str(folder / "items.jsonl"),
            models=(judge, "writer-y"),
            judges=[judge],
            n_boot=50,
            device="cpu",
            max_new_tokens=8,
            imports={"writer-y": str(folder / "other.jsonl")},
        )
        | keys
    )
