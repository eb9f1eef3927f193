"""The arguments a `Judge` takes, checked before any work: options it does not know (with the hint for the renamed
`queries`), one value or one per pair, the (author of A, author of B) pairs, and the name of a wrapped model."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import torch

from interp.errors import InterpError

Authors = tuple[str, str]


def is_nnsight(obj) -> bool:
    """Whether `obj` is one of nnsight's objects (a `LanguageModel`), by its module."""
    return type(obj).__module__.startswith("nnsight")


def refuse_unknown(options: Mapping[str, Any]) -> None:
    """One error for an option a Judge does not take, with the hint for the renamed `queries` and `attention`."""
    if "queries" in options:
        raise InterpError(
            "Judge(queries=) is now readout= ('final' or 'after': where the span attention is read from); "
            "`queries` is a spec's key, the positions a mask acts on ('outside' or 'final')"
        )
    if "attention" in options:
        raise InterpError(
            "Judge(attention=) is now attn_implementation= ('sdpa' or 'eager': how the backend computes attention); "
            "`attention` is a run config's key, where span attention is read ('final', 'after' or 'none')"
        )
    if options:
        raise InterpError(f"unknown Judge option {sorted(options)[0]!r}; options are own, readout, batch_size")


def per_row(value, n: int, what: str) -> list:
    """`value` for each of n rows: a list of n values, or one value repeated (strings and pairs are one value)."""
    if isinstance(value, (str, tuple)) or value is None:
        return [value] * n
    values = list(value)
    if len(values) != n:
        raise InterpError(f"got {len(values)} {what} for {n} pairs; pass one per pair or a single one for all")
    return values


def author_pair(value, what: str) -> Authors:
    """(author of A, author of B): exactly two non-empty names."""
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or len(value) != 2
        or not all(isinstance(name, str) and name for name in value)
    ):
        raise InterpError(f"authors{what} must be exactly two names, (author of A, author of B), not {value!r}")
    return (value[0], value[1])


def author_rows(authors, n: int) -> list[Authors | None]:
    """One (author A, author B) per pair: None, one pair for all, or a list of n pairs; anything else is one line."""
    if authors is None:
        return [None] * n
    if isinstance(authors, str) or not isinstance(authors, Sequence) or not authors or isinstance(authors[0], str):
        return [author_pair(authors, "")] * n
    return [
        author_pair(pair, f" of pair {index}") for index, pair in enumerate(per_row(list(authors), n, "author pairs"))
    ]


def model_name(hf_model: torch.nn.Module) -> str:
    """A Hugging Face model's name: its folder or hub id's last part, else its class name."""
    source = str(getattr(getattr(hf_model, "config", None), "_name_or_path", "") or "")
    return Path(source).name or source or type(hf_model).__name__
