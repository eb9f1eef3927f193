"""The verdict-temperature intervention: the verdict logits (the final position's next-token logits) times lambda.

A spec file holds exactly

    kind   = "temperature"
    lambda = 0.6          # in (0, 1]: 1 is the plain verdict, smaller pulls every verdict toward indifference
    name   = "label"      # optional; a label, never part of the key

Every label's logit is multiplied by lambda before P(A) and P(B) are read (`interp.core.judge.judge_batch` applies
`Edits.logit_scale` after the backend's pass, so it is the same on every backend: hf, the shared trunk, nnsight,
TransformerLens). With one token per label the log-odds of A against B are exactly lambda times the plain
ones; with two spellings per label (" A" and "A") the label's probability is their sum and its log-odds scale
by lambda up to the spellings' mix. The model's computation is not touched, so it has no hook sites.

It is the specificity check's negative control (docs/causal-test.md, "Specific to the own answer"): it flattens
every verdict and removes no preference for the own answer, so a judge with a self-preference gap loses more
P(own) than its controls under it, and only the specificity check keeps that from reading as a cause.

    >>> VerdictTemperature(scale=0.6).identity()
    {'kind': 'temperature', 'lambda': 0.6}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from interp.config import to_toml
from interp.core.backends import Edits
from interp.errors import InterpError
from interp.hooks.base import EditContext, Intervention, register_kind

TEMPERATURE_KEYS = ("kind", "lambda", "name")


@register_kind
@dataclass(frozen=True)
class VerdictTemperature(Intervention):
    """The verdict logits times `scale` (the spec's `lambda`, in (0, 1]) before the labels are read."""

    kind: ClassVar[str] = "temperature"
    slot: ClassVar[str] = "verdict"
    sites: ClassVar[tuple[str, ...]] = ()  # no site of the model: it acts on the verdict logits after the pass

    scale: float
    name: str | None = None

    def __post_init__(self) -> None:
        check_lambda(self.scale)
        object.__setattr__(self, "scale", float(self.scale))

    @property
    def label(self) -> str:
        """The `name` if given, else "temperature-<lambda>"."""
        return self.name or f"temperature-{self.scale:g}"

    def identity(self) -> dict[str, Any]:
        """What it does (a variant's key): its kind and lambda, never its label."""
        return {"kind": self.kind, "lambda": self.scale}

    def to_dict(self) -> dict[str, Any]:
        """Its keys, JSON-ready (`lambda`, as the spec file spells it)."""
        return {"kind": self.kind, "lambda": self.scale, "name": self.name}

    def hook_sites(self, n_layers: int) -> list[str]:
        """None: the model's pass is not edited, only its verdict logits after it."""
        return []

    def edits(self, context: EditContext) -> Edits:
        """The logit scale for the batch (`Edits.logit_scale`)."""
        return Edits(logit_scale=self.scale)

    def to_toml(self) -> str:
        """The spec as TOML that `as_intervention` reads back to an equal spec."""
        return to_toml({key: value for key, value in self.to_dict().items() if value is not None})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "") -> "VerdictTemperature":
        """From a spec's keys (`lambda`, optional `name`; `kind` may be given). One line names what is wrong."""
        if not isinstance(data, Mapping):
            raise InterpError(f"{where}an intervention spec must be a table of keys, not {type(data).__name__}")
        unknown = sorted(set(data) - set(TEMPERATURE_KEYS))
        if unknown:
            raise InterpError(
                f"{where}unknown key {unknown[0]!r} in a temperature spec; allowed keys: {', '.join(TEMPERATURE_KEYS)}"
            )
        if "lambda" not in data:
            raise InterpError(f"{where}a temperature spec needs key 'lambda': a number in (0, 1]")
        name = data.get("name")
        if name is not None and not isinstance(name, str):
            raise InterpError(f"{where}bad value for 'name' in a temperature spec: use a string")
        return cls(scale=check_lambda(data["lambda"], where), name=name)


def check_lambda(value: Any, where: str = "") -> float:
    """`value` as lambda: a finite number in (0, 1], else one line (InterpError)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InterpError(f"{where}'lambda' = {value!r} is not a number; use a number in (0, 1]")
    if not math.isfinite(value) or not 0 < value <= 1:
        raise InterpError(
            f"{where}'lambda' = {value:g} is out of range: use a number in (0, 1] (1 is the plain verdict; the "
            "verdict logits are multiplied by lambda)"
        )
    return float(value)
