"""Where a mask of the judge's own answer moved its attention, read from the run's span attention: the share the
other answer received at the masked heads and the final position (`mass_moved`, written as
`interp.results.causal.MaskedMass`), and whether the run recorded the attention to read (`has_attention`)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from interp.analysis.attention_store import attention_judges, load_attention
from interp.hooks.spec import AttentionIntervention
from interp.results.causal import MaskedMass
from interp.run.store import Run


def has_attention(run: Run, judge: str) -> bool:
    """Whether the run recorded span attention for this judge."""
    return run.config.attention != "none" and judge in attention_judges(run.dir.root)


def mass_moved(run: Run, judge: str, spec: AttentionIntervention, item_ids: Sequence[str]) -> MaskedMass | None:
    """Where the masked attention went, at the masked heads and the final position, on the test items.

    Masking renormalises each attention row, so the own answer's mass m_own is shared out in proportion to
    what every other key already held: the other answer receives m_other / (1 - m_own) of it. That is exact
    where the mask acts first; later layers see changed inputs, which this does not follow. None when the
    run holds no span attention for the judge, or the spec is not a mask of the own answer.
    """
    if not isinstance(spec, AttentionIntervention) or spec.target != "self" or not has_attention(run, judge):
        return None
    attention = load_attention(run.dir.root, judge)
    rows = [attention.item_ids.index(i) for i in item_ids if i in attention.item_ids]
    own, other = attention.own("mass")[rows].numpy(), attention.other("mass")[rows].numpy()  # item order layer head
    keep = np.zeros(own.shape[2:], dtype=bool)
    for layer, heads in spec.selection(keep.shape[0]).items():
        keep[layer, list(heads) if heads is not None else slice(None)] = True
    own, other = own[..., keep], other[..., keep]
    finite = np.isfinite(own) & np.isfinite(other) & (own < 1)
    removed = own[finite]
    to_other = removed * other[finite] / (1 - removed)
    total = float(removed.sum())
    return MaskedMass(
        share_to_other_answer=float(to_other.sum() / total) if total > 0 else None,
        mean_own_mass_removed=float(removed.mean()) if removed.size else None,
        where="masked heads, final position, where the mask acts first (later layers not followed)",
    )
