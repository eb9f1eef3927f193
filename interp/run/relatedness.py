"""How a judge is related to an answer's author (Preference Leakage, seed 004 section 3): the same model, an
inheritance relation (one trained on the other's synthetic data), the same family, or unrelated.

A run config declares pairs in `relatedness`; an undeclared pair is "same" when the judge's own model
(`own_model`: an organism's is its base model) is the author, else "unrelated". The PLS lens groups by it
(`interp.analysis.lenses`); the recognition probe takes it as the truth (`interp.run.recognition`).
"""

from __future__ import annotations

from collections.abc import Mapping

from interp.config import RunConfig
from interp.core.models import own_model


def declared(config: RunConfig | None) -> dict[tuple[str, str], str]:
    """`{(judge, author): type}` of a run config's `relatedness` (empty without a config)."""
    return {} if config is None else {(pair.judge, pair.author): pair.type for pair in config.relatedness}


def relation(judge: str, author: str, pairs: Mapping[tuple[str, str], str] | None = None) -> str:
    """The relatedness of `judge` to `author`: as declared in `pairs`, else "same" or "unrelated"."""
    if pairs and (judge, author) in pairs:
        return pairs[(judge, author)]
    return "same" if own_model(judge) == author else "unrelated"
