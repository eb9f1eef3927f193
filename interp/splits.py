"""Seeded splits of item ids: a stable hash of the ids, no `random` state, the same on every machine."""

from __future__ import annotations

import hashlib
import math
from typing import Sequence

from interp.errors import InterpError


def unit_hash(*parts: object) -> float:
    """A number in [0, 1) from the SHA-256 of the parts joined by '|' (stable across machines and versions)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_ids(
    ids: Sequence[str],
    share: float,
    seed: int,
    *,
    purpose: str,
    what: str = "share",
    parts: tuple[str, str] = ("selection", "test"),
) -> tuple[list[str], list[str]]:
    """The one seeded two-way split of item ids (selection / test, train / held-out), exact in count.

    The first part holds round(share x n) ids (half up): those with the smallest `unit_hash(seed, purpose, id)`
    (ties by id). Each part keeps the input order. Which part an id lands in depends on the seed, the purpose
    and the set of ids, never on their order. (The organisms' data pool is split per item instead,
    `interp.organisms.data.split_of`: there an item's split must not move when items are added.)

    Raises:
        InterpError: `share` not in (0, 1), or a part would be empty (`what` names the option, `parts` the two
            parts, in the message).
    """
    ids = list(ids)
    if not 0 < share < 1:
        raise InterpError(f"{what} {share} must be between 0 and 1 (exclusive)")
    count = math.floor(share * len(ids) + 0.5)
    first = set(sorted(ids, key=lambda i: (unit_hash(seed, purpose, i), i))[:count])
    chosen, rest = [i for i in ids if i in first], [i for i in ids if i not in first]
    if not chosen or not rest:
        raise InterpError(
            f"{what} {share} leaves {len(chosen)} {parts[0]} and {len(rest)} {parts[1]} items of "
            f"{len(ids)}; use a share that leaves both"
        )
    return chosen, rest
