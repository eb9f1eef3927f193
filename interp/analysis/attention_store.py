"""A run's stored span attention read back (docs/science.md, Span attention; DBG paper seed 000, Figure 7).

A DBG run stores, per judge, `attention/<judge>.safetensors` with `mass [item, order, layer, head, span]`
(span order a, b, then `rationale` when the judge wrote one: `cot`) and `span_tokens [item, order, span]`, plus
`attention/<judge>.json`, an index with the items, the author of each slot per order, token spans and the tokenizer
fingerprint (`interp.run.attention`
writes them). `load_attention(run_dir, judge)` -> `RunAttention`, with author-aligned views (`by_author`,
`own`, `other`); the arrays are checked against the run's judgments (same prompts, same tokenizer).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from interp.config import RunConfig
from interp.core.attention import per_token_mean
from interp.core.fingerprint import tokenizer_fingerprint
from interp.core.models import own_model, own_slot
from interp.errors import InterpError
from interp.results import codec
from interp.results.run_files import AttentionIndex
from interp.run.records import ORDERS
from interp.run.store import RunDir

Stat = Literal["mean", "mass"]
STATS: tuple[str, ...] = ("mean", "mass")


@dataclass
class RunAttention:
    """One judge's span attention over a run.

    `mass[i, o, l, h, s]`: attention mass from the query set onto span s (0 = slot A, 1 = slot B) for item
    i in order o (`ORDERS`: "ab" = models[0]'s response in slot A, "ba" = swapped); `mean` is `mass / |S|`
    (NaN for an empty span); `span_tokens[i, o, s]` = |S|. `models` are the run's two response authors.
    """

    judge: str
    models: tuple[str, str]
    mass: Float[Tensor, "item order layer head span"]
    span_tokens: Float[Tensor, "item order span"]
    index: dict
    mean: Float[Tensor, "item order layer head span"] = field(default=None)  # type: ignore[assignment]
    run_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.mean is None:
            self.mean = per_token_mean_items(self.mass, self.span_tokens)

    # -- shape ---------------------------------------------------------------------------------------

    @property
    def n_items(self) -> int:
        """Items judged."""
        return self.mass.shape[0]

    @property
    def n_layers(self) -> int:
        """The judge's layers."""
        return self.mass.shape[2]

    @property
    def n_heads(self) -> int:
        """Attention heads per layer."""
        return self.mass.shape[3]

    @property
    def item_ids(self) -> list[str]:
        """The items' ids, in the arrays' order."""
        return [entry["item_id"] for entry in self.index["items"]]

    @property
    def tasks(self) -> list[str]:
        """Each item's task, in the arrays' order."""
        return [entry["task"] for entry in self.index["items"]]

    @property
    def readout(self) -> str:
        """The positions the attention was read from ("final" or "after")."""
        return self.index["readout"]

    @property
    def fingerprint(self) -> str | None:
        """The judge tokenizer's fingerprint the spans were computed with (None in older runs)."""
        return self.index.get("tokenizer")

    def depth(self, relative: bool = False) -> np.ndarray:
        """The layer axis: 0..L-1, or relative depth layer / (L - 1) in [0, 1]."""
        return layer_axis(self.n_layers, relative)

    def values(self, stat: Stat = "mean") -> Float[Tensor, "item order layer head span"]:
        """The attention per span: per-token mean ("mean") or summed ("mass")."""
        if stat == "mean":
            return self.mean
        if stat == "mass":
            return self.mass
        raise InterpError(f"unknown attention statistic {stat!r}; use 'mean' (per token) or 'mass'")

    # -- author alignment ----------------------------------------------------------------------------

    @property
    def author_slots(self) -> torch.Tensor:
        """`[item, order, author]`: which span (0 = a, 1 = b) holds models[k]'s response."""
        return author_slots(self.index, self.models)

    def by_author(self, stat: Stat = "mean") -> Float[Tensor, "item order layer head author"]:
        """Attention to each author's response, author axis in `models` order."""
        values = self.values(stat)
        slots = self.author_slots[:, :, None, None, :].expand(*values.shape[:4], 2)
        return torch.gather(values, -1, slots)

    def author_tokens(self) -> Float[Tensor, "item order author"]:
        """Tokens of each author's response, author axis in `models` order."""
        return torch.gather(self.span_tokens, -1, self.author_slots)

    @property
    def has_own(self) -> bool:
        """Whether one of the run's response authors is the judge's own model (`own_model`: an organism's is
        its base); own/other views need it."""
        return own_model(self.judge) in self.models

    @property
    def own_author(self) -> int:
        """Index in `models` of the judge's own responses."""
        slot = own_slot(*self.models, own_model(self.judge))  # models[0] is slot A in order "ab"
        if slot is None:
            raise InterpError(
                f"judge {self.judge!r} is not one of the run's response authors ({', '.join(self.models)}); "
                "own/other attention is only defined for a judge that also answered"
            )
        return "ab".index(slot)

    def own(self, stat: Stat = "mean") -> Float[Tensor, "item order layer head"]:
        """Attention to the judge's own response."""
        return self.by_author(stat)[..., self.own_author]

    def other(self, stat: Stat = "mean") -> Float[Tensor, "item order layer head"]:
        """Attention to the other author's response."""
        return self.by_author(stat)[..., 1 - self.own_author]

    def own_minus_other(self, stat: Stat = "mean") -> Float[Tensor, "item order layer head"]:
        """Attention to the own response minus to the other's."""
        return self.own(stat) - self.other(stat)

    def own_tokens(self) -> Float[Tensor, "item order"]:
        """Tokens of the judge's own response."""
        return self.author_tokens()[..., self.own_author]

    def other_tokens(self) -> Float[Tensor, "item order"]:
        """Tokens of the other author's response."""
        return self.author_tokens()[..., 1 - self.own_author]


def per_token_mean_items(mass: Tensor, span_tokens: Tensor) -> Tensor:
    """`per_token_mean` over `[item, order, ...]` arrays (NaN for an empty span)."""
    items, orders = mass.shape[:2]
    flat = per_token_mean(mass.reshape(items * orders, *mass.shape[2:]), span_tokens.reshape(items * orders, -1))
    return flat.reshape(mass.shape)


def layer_axis(n_layers: int, relative: bool = False) -> np.ndarray:
    """The layer axis: 0..L-1, or relative depth layer / (L - 1) in [0, 1]."""
    layers = np.arange(n_layers, dtype=float)
    if not relative:
        return layers
    return layers / (n_layers - 1) if n_layers > 1 else np.zeros(1)


def author_slots(index: dict, models: Sequence[str]) -> torch.Tensor:
    """`[item, order, author]` span index of each author's response, read from the index's slot authors."""
    models = tuple(models)
    out = torch.zeros(len(index["items"]), len(ORDERS), len(models), dtype=torch.long)
    for i, entry in enumerate(index["items"]):
        for o, order in enumerate(ORDERS):
            slots = entry["orders"][order]
            authors = (slots["model_a"], slots["model_b"])
            if authors[0] == authors[1] or set(authors) != set(models):
                raise InterpError(
                    f"attention index, item {entry['item_id']!r} order {order}: slot authors {authors} do not match "
                    f"the run's models {models}"
                )
            for k, model in enumerate(models):
                out[i, o, k] = authors.index(model)
    return out


def _check_run_dir(run_dir: Path) -> RunDir:
    paths = RunDir(Path(run_dir))
    if not paths.root.is_dir():
        raise InterpError(f"run directory {paths.root} not found")
    if not paths.judgments.is_file() or not paths.judgments.stat().st_size:
        raise InterpError(f"run directory {paths.root} has no judgments; run `interp dbg` first")
    return paths


def run_config(paths: RunDir) -> RunConfig | None:
    """The run's config, or None when the directory has none (attention arrays copied elsewhere)."""
    return paths.read_config() if paths.config.is_file() else None


def run_models(run_dir: Path) -> tuple[str, str] | None:
    """The run's two response authors (config order), or None when the config does not say."""
    config = run_config(RunDir(Path(run_dir)))
    return tuple(config.models) if config is not None else None


def attention_judges(run_dir: Path) -> list[str]:
    """Judges of the run that have consolidated attention, in config order."""
    paths = _check_run_dir(run_dir)
    config = run_config(paths)
    specs = config.judge_specs if config is not None else []
    found = [
        spec
        for spec in specs
        if paths.attention_index(spec).is_file()
        and paths.attention(spec).is_file()
        and _index_judge(paths.attention_index(spec)) in (spec, None)
    ]
    known = {paths.attention_index(spec).stem for spec in found}
    for index_path in sorted(paths.attention_dir.glob("*.json")):
        pointwise = index_path.stem.endswith(".pointwise")  # a pointwise run's (`interp.run.pointwise`): not pairs
        if index_path.stem in known or pointwise or not index_path.with_suffix(".safetensors").is_file():
            continue
        try:
            judge = codec.read_file(index_path, AttentionIndex).judge
        except InterpError:
            continue
        if judge is not None:
            found.append(judge)
    if not found:
        raise InterpError(
            f'run directory {paths.root} has judgments but no attention; run `interp dbg` with attention = "final" '
            '(or "after") to record it'
        )
    return found


def _index_judge(index_path: Path) -> str | None:
    """The judge an attention index names (None when it cannot be read: the loader reports that)."""
    try:
        return codec.read_file(index_path, AttentionIndex).judge
    except InterpError:
        return None


def load_attention(run_dir: Path, judge: str, *, tokenizer=None) -> RunAttention:
    """Read one judge's consolidated attention; with `tokenizer`, also check it is the judge's tokenizer."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    paths = _check_run_dir(run_dir)
    array_path, index_path = paths.attention(judge), paths.attention_index(judge)
    if not array_path.is_file() or not index_path.is_file():
        try:
            available = ", ".join(attention_judges(paths.root))
        except InterpError:
            available = "none"
        raise InterpError(
            f"run directory {paths.root} has no attention for judge {judge!r} (judges with attention: {available}); "
            "run `interp dbg` with attention enabled"
        )
    if _index_judge(index_path) not in (judge, None):  # an older run's file of a judge with the same label
        raise InterpError(
            f"run directory {paths.root} has no attention for judge {judge!r}: {index_path.name} holds judge "
            f"{_index_judge(index_path)!r}'s (a run written before judges' files were keyed by name); "
            "re-run the judging step"
        )
    try:
        index = codec.read_file(index_path, AttentionIndex).to_json()
        arrays = load_file(str(array_path))
        mass, counts = arrays["mass"].float(), arrays["span_tokens"].float()
    except (ValueError, KeyError, OSError, SafetensorError) as exc:
        raise InterpError(
            f"{array_path}: cannot read the attention arrays ({type(exc).__name__}); re-run the judging step"
        ) from None
    n_spans = len(index["spans"])  # a, b, and the judge's rationale with `cot`
    expected = (len(index["items"]), len(ORDERS), index["n_layers"], index["n_heads"], n_spans)
    if tuple(mass.shape) != expected or tuple(counts.shape) != expected[:2] + (n_spans,):
        raise InterpError(
            f"{array_path}: arrays of shape {tuple(mass.shape)} do not match the index {index_path.name} {expected}; "
            "re-run the judging step"
        )
    _check_against_judgments(paths, judge, index)
    models = run_models(paths.root) or _models_from_index(index)
    run = RunAttention(judge=judge, models=models, mass=mass, span_tokens=counts, index=index, run_dir=paths.root)
    if tokenizer is not None:
        check_tokenizer(run, tokenizer)
    return run


def _models_from_index(index: dict) -> tuple[str, str]:
    first = index["items"][0]["orders"][ORDERS[0]]
    return first["model_a"], first["model_b"]


def _check_against_judgments(paths: RunDir, judge: str, index: dict) -> None:
    """The index's spans and token counts must be those of judgments.jsonl: same prompts, same tokenizer."""
    records = {(r.item_id, r.order): r for r in paths.read_judgments(judge)}
    if not records:
        raise InterpError(f"run directory {paths.root} has no judgments by {judge!r}; run `interp dbg` first")
    for entry in index["items"]:
        for order in ORDERS:
            record = records.get((entry["item_id"], order))
            slots = entry["orders"][order]
            if record is None:
                raise InterpError(
                    f"judgments.jsonl has no judgment by {judge!r} of {entry['item_id']} {order}; resume the run"
                )
            if (
                record.n_tokens != slots["n_tokens"]
                or {k: list(v) for k, v in (record.spans or {}).items()} != slots["spans"]
            ):
                raise InterpError(
                    f"attention of {judge!r} for {entry['item_id']} {order} was computed on another prompt than "
                    f"judgments.jsonl ({slots['n_tokens']} vs {record.n_tokens} tokens, spans {slots['spans']} vs "
                    f"{record.spans}): judgments from another tokenizer or run; delete {paths.root / 'attention'} and "
                    "re-run `interp dbg`"
                )


def check_tokenizer(run: RunAttention, tokenizer) -> None:
    """Refuse attention recorded with another tokenizer: its token spans would index the wrong tokens."""
    stored = run.fingerprint
    actual = tokenizer_fingerprint(getattr(tokenizer, "tokenizer", tokenizer))
    if stored != actual:
        where = run.run_dir or "this run"
        raise InterpError(
            f"attention of judge {run.judge!r} in {where} was recorded with another tokenizer (fingerprint {stored}) "
            f"than this model's ({actual}); use the run's judge model or re-run the judging step with this one"
        )


def resolve_attention(run_dir, judge: str | None) -> RunAttention:
    """A judge's attention: the given `RunAttention` (checked to be `judge`'s), or read from the run."""
    if isinstance(run_dir, RunAttention):
        if judge is not None and judge != run_dir.judge:
            raise InterpError(f"got attention of judge {run_dir.judge!r}, asked for {judge!r}")
        return run_dir
    if judge is None:
        raise InterpError("name the judge")
    return load_attention(run_dir, judge)


def nanmean(values: Tensor, dims) -> Tensor:
    """The mean over `dims` ignoring NaN, without the warning for an all-NaN slice."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.nanmean(values, dim=dims)
