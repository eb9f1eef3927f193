"""The writer side of a run's span attention: per-batch shards while judging, one array per judge after.

Shard: `attention/<judge>/<hash of its keys>.safetensors` with `mass [row, layer, head, span]` and
`span_tokens [row, span]`, metadata "keys" = the rows' "item_id|order". Consolidated:
`attention/<judge>.safetensors` with `mass [item, order, layer, head, span]` (span order a, b) and
`span_tokens [item, order, span]`, plus `attention/<judge>.json`, an index with the items, the author of each
slot per order, token spans and the tokenizer fingerprint. `interp.analysis.attention_store` reads them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

import torch
from safetensors import safe_open
from safetensors.torch import save

from interp.core.fingerprint import tokenizer_fingerprint
from interp.core.judge import Judgment
from interp.core.models import LoadedModel
from interp.data import Item
from interp.errors import InterpError
from interp.results import codec
from interp.results.run_files import AttentionIndex
from interp.run.records import ORDERS
from interp.run.store import RunDir
from interp.storage import atomic_write_bytes


def write_shard(shard_dir: Path, keys: Sequence[str], judgments: Sequence[Judgment]) -> None:
    """One judged batch's span attention (mass and span tokens) as a shard named by its tasks' keys."""
    name = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]
    tensors = {
        "mass": torch.stack([j.mass for j in judgments]).contiguous(),
        "span_tokens": torch.stack([j.counts for j in judgments]).contiguous(),
    }
    atomic_write_bytes(Path(shard_dir) / f"{name}.safetensors", save(tensors, metadata={"keys": json.dumps(keys)}))


def read_shards(shard_dir: Path) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """`{key: (mass [layer, head, span], span_tokens [span])}` of every shard in a folder."""
    by_key: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    for shard in sorted(Path(shard_dir).glob("*.safetensors")):
        with safe_open(str(shard), "pt") as handle:
            keys = json.loads(handle.metadata()["keys"])
            mass, counts = handle.get_tensor("mass"), handle.get_tensor("span_tokens")
        for row, key in enumerate(keys):
            by_key[key] = (mass[row], counts[row])
    return by_key


def stack_shards(
    by_key: dict[str, tuple[torch.Tensor, torch.Tensor]],
    keys: Sequence[Sequence[str]],
    shape: tuple[int, int, int, int],
    missing: str,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The shards' rows as `mass [i, j, layer, head, span]` and `span_tokens [i, j, span]`, row `keys[i][j]`
    (`shape`: j's count, layers, heads, spans); a key absent from `by_key` stops with `missing` (formatted with
    the key)."""
    mass = torch.full((len(keys), *shape), float("nan"))
    counts = torch.zeros(len(keys), shape[0], shape[-1])
    for i, row in enumerate(keys):
        for j, key in enumerate(row):
            if key not in by_key:
                raise InterpError(missing.format(key=key))
            mass[i, j], counts[i, j] = by_key[key]
    return mass, counts


def index_header(judge: str, model: LoadedModel, readout: str) -> dict:
    """The fields every consolidated attention index starts with: whose, read where, with which tokenizer and shape."""
    return {
        "judge": judge,
        "readout": readout,
        "tokenizer": tokenizer_fingerprint(model.tokenizer),
        "n_layers": model.n_layers,
        "n_heads": model.n_heads,
    }


def consolidate_attention(paths: RunDir, judge: str, model: LoadedModel, items: Sequence[Item], readout: str) -> None:
    """Shards -> one `[item, order, layer, head, span]` array per judge, with a JSON index (spans a, b, and the
    judge's rationale when it wrote one: `cot`)."""
    by_key = read_shards(paths.attention_shards(judge))
    records = {record.key: record for record in paths.read_judgments(judge)}
    spans = ["a", "b", "rationale"][: next(iter(by_key.values()))[0].shape[-1]] if by_key else ["a", "b"]
    judged = {key: rows for key, rows in by_key.items() if key in records}
    keys = [[f"{item.id}|{order}" for order in ORDERS] for item in items]
    shape = (len(ORDERS), model.n_layers, model.n_heads, len(spans))
    mass, counts = stack_shards(
        judged, keys, shape, f"attention for {judge} {{key}} is missing; re-run the judging step"
    )
    index = index_header(judge, model, readout) | {
        "dims": ["item", "order", "layer", "head", "span"],
        "orders": list(ORDERS),
        "spans": spans,
        "items": [
            {
                "item_id": item.id,
                "task": item.task,
                "orders": {
                    order: {
                        "model_a": records[f"{item.id}|{order}"].model_a,
                        "model_b": records[f"{item.id}|{order}"].model_b,
                        "spans": records[f"{item.id}|{order}"].spans,
                        "n_tokens": records[f"{item.id}|{order}"].n_tokens,
                    }
                    for order in ORDERS
                },
            }
            for item in items
        ],
    }
    atomic_write_bytes(paths.attention(judge, write=True), save({"mass": mass, "span_tokens": counts}))
    codec.write_file(paths.attention_index(judge, write=True), AttentionIndex, index)
