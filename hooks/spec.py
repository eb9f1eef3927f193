"""Attention intervention specs: small frozen dataclasses, serialisable to TOML/JSON (docs/science.md, Interventions).

A spec says *where* to dampen attention, never how: `interp.hooks.compile` compiles it to the one mechanism every
backend understands, an additive pre-softmax score bias.

TOML keys (see `experiments/configs/ablation_example.toml`):

    target   = "self" | "other" | "a" | "b" | "both" | "random" | [start, end]   # required; token indices end-exclusive
    alpha    = 0.0          # required; post-softmax multiplier on the target keys, in [0, 1]; 0 = mask
    layers   = [3, 4]       # optional; omitted = every layer
    heads    = [0, 2]       # optional; omitted = every head; or a table of layer -> heads: { 3 = [0], 5 = [1, 2] }
    queries  = "outside"    # optional; "outside" (default: every position outside the target span) | "final"
    seed     = 0            # optional; seeds the "random" target
    name     = "self-mask"  # optional; a label for logs and tables
    emphasis = false        # optional; true allows alpha > 1 (PASTA-style emphasis, `interp.hooks.emphasis`)

With a heads table, exactly the listed (layer, head) pairs are intervened on; if `layers` is given too,
every listed layer must have an entry in the table. Every check raises `InterpError` with one line that
names the key, before any model work; `validate_against` adds the checks that need the model's shape.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Mapping, Optional, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from interp.config import read_toml_or_json, to_toml
from interp.core.backends import Edits
from interp.errors import InterpError
from interp.hooks.base import EditContext, Intervention, register_kind

TARGET_NAMES: tuple[str, ...] = ("self", "other", "a", "b", "both", "random")
QUERY_SETS: tuple[str, ...] = ("outside", "final")
KEYS: tuple[str, ...] = ("target", "alpha", "layers", "heads", "queries", "seed", "name", "emphasis")

Target = Union[str, tuple[int, int]]
HeadsTable = tuple[tuple[int, tuple[int, ...]], ...]

_HINTS = {
    "target": "use one of 'self', 'other', 'a', 'b', 'both', 'random' or [start, end] token indices",
    "alpha": "use a number in [0, 1] (0 masks the target)",
    "layers": "use a list of layer indices, or omit it for every layer",
    "heads": "use a list of head indices, a table of layer -> head list, or omit it for every head",
    "queries": "use 'outside' (every position outside the target span) or 'final'",
    "seed": "use an integer",
    "name": "use a string",
    "emphasis": "use true or false",
}


class _SpecModel(BaseModel):
    """Type-level validation (pydantic); the range checks follow in `_normalise`."""

    model_config = ConfigDict(extra="forbid")

    target: Union[Literal["self", "other", "a", "b", "both", "random"], tuple[StrictInt, StrictInt]]
    alpha: Union[StrictFloat, StrictInt]
    layers: Optional[list[StrictInt]] = None
    heads: Union[list[StrictInt], dict[int, list[StrictInt]], None] = None
    queries: Literal["outside", "final"] = "outside"
    seed: StrictInt = 0
    name: Optional[StrictStr] = None
    emphasis: StrictBool = False


def _one_line(exc: ValidationError, where: str) -> InterpError:
    errors = exc.errors()
    extra = [e for e in errors if e["type"] == "extra_forbidden"]
    if extra:
        keys = ", ".join(repr(str(e["loc"][0])) for e in extra)
        return InterpError(f"{where}unknown key {keys} in intervention spec; allowed keys: {', '.join(KEYS)}")
    missing = [e for e in errors if e["type"] == "missing"]
    if missing:
        key = str(missing[0]["loc"][0])
        return InterpError(f"{where}intervention spec needs key '{key}': {_HINTS[key]}")
    key = str(errors[0]["loc"][0]) if errors[0]["loc"] else "spec"
    return InterpError(f"{where}bad value for '{key}' in intervention spec: {_HINTS.get(key, errors[0]['msg'])}")


def _index_list(values, key: str, where: str) -> tuple[int, ...]:
    if not values:
        raise InterpError(f"{where}'{key}' is empty in intervention spec; {_HINTS[key]}")
    if any(v < 0 for v in values):
        raise InterpError(f"{where}'{key}' has a negative index {min(values)}; indices start at 0")
    return tuple(sorted(set(values)))


def _normalise(raw: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """Validate a spec's raw fields; return them in canonical (hashable, sorted) form."""
    if not isinstance(raw, Mapping):
        raise InterpError(f"{where}an intervention spec must be a table of keys, not {type(raw).__name__}")
    try:
        model = _SpecModel.model_validate(dict(raw))
    except ValidationError as exc:
        raise _one_line(exc, where) from None

    target: Target = model.target
    if isinstance(target, tuple):
        start, end = target
        if start < 0 or end <= start:
            raise InterpError(
                f"{where}bad value for 'target': [{start}, {end}] must satisfy 0 <= start < end (end exclusive)"
            )

    alpha = float(model.alpha)
    if not math.isfinite(alpha):
        raise InterpError(f"{where}'alpha' = {alpha} is not a finite number; use a number in [0, 1]")
    if model.emphasis:
        if alpha <= 0:
            raise InterpError(f"{where}'alpha' = {alpha} is out of range: with emphasis = true alpha must be > 0")
    elif not 0.0 <= alpha <= 1.0:
        raise InterpError(
            f"{where}'alpha' = {alpha} is out of range: for dampening alpha must be in [0, 1] (0 masks); "
            "alpha > 1 needs emphasis = true"
        )

    layers = _index_list(model.layers, "layers", where) if model.layers is not None else None
    heads: tuple[int, ...] | HeadsTable | None = None
    if isinstance(model.heads, dict):
        if not model.heads:
            raise InterpError(f"{where}'heads' is an empty table in intervention spec; {_HINTS['heads']}")
        if any(layer < 0 for layer in model.heads):
            raise InterpError(f"{where}'heads' names a negative layer {min(model.heads)}; indices start at 0")
        heads = tuple((layer, _index_list(model.heads[layer], "heads", where)) for layer in sorted(model.heads))
        if layers is not None:
            missing = [layer for layer in layers if layer not in model.heads]
            if missing:
                raise InterpError(
                    f"{where}'layers' lists layer {missing[0]} but the 'heads' table has no entry for it; "
                    "list its heads or drop 'layers' (the table's layers are used)"
                )
    elif model.heads is not None:
        heads = _index_list(model.heads, "heads", where)

    return {
        "target": target,
        "alpha": alpha,
        "layers": layers,
        "heads": heads,
        "queries": model.queries,
        "seed": model.seed,
        "name": model.name,
        "emphasis": model.emphasis,
    }


def _is_table(heads) -> bool:
    return bool(heads) and isinstance(heads[0], tuple)


class HeadSelection:
    """Reading a spec's `layers` and `heads` (a tuple for every chosen layer, or (layer, heads) pairs): the one
    definition for attention and node specs."""

    layers: tuple[int, ...] | None
    heads: tuple[int, ...] | HeadsTable | None

    @property
    def heads_table(self) -> dict[int, tuple[int, ...]] | None:
        """The layer -> heads table when `heads` was given as one, else None."""
        return dict(self.heads) if _is_table(self.heads) else None

    def selection(self, n_layers: int) -> dict[int, tuple[int, ...] | None]:
        """layer -> heads to intervene on (None = every head, or a site without heads), for `n_layers` layers."""
        table = self.heads_table
        if table is not None:
            layers = self.layers if self.layers is not None else tuple(sorted(table))
            return {layer: table[layer] for layer in layers}
        layers = self.layers if self.layers is not None else tuple(range(n_layers))
        return {layer: self.heads for layer in layers}


def pairs_table(pairs) -> dict[int, list[int]]:
    """[[layer, head], ...] (a manifest's `planted_heads`, a ranking's top rows) as a layer -> sorted heads table,
    the form a spec's `heads` takes."""
    table: dict[int, list[int]] = {}
    for layer, head in pairs:
        table.setdefault(int(layer), []).append(int(head))
    return {layer: sorted(heads) for layer, heads in sorted(table.items())}


@register_kind
@dataclass(frozen=True)
class AttentionIntervention(HeadSelection, Intervention):
    """Multiply the post-softmax attention on `target`'s keys by `alpha` and renormalise each query row.

    `target`: "self" | "other" (the judge's own / the other response: needs authors), "a" | "b" (a response
    slot), "both" (from the start of response A to the end of response B: both responses and the prompt
    text between them; the positive control, after which no author can be told apart), "random" (a span as long as the
    self span, elsewhere in the prompt), or (start, end) token indices in the unpadded prompt, end exclusive. `layers`
    None = all; `heads` None = all, a tuple = those
    heads in every chosen layer, or a mapping layer -> heads (stored as sorted (layer, heads) pairs so the
    spec stays hashable; read it back with `heads_table`). `queries`: "outside" = every position outside
    the target span, "final" = only the last position. Constructing one validates it (InterpError).

    The kind "attention" of the intervention family (`interp.hooks.base`): masks (alpha 0), dampening (alpha in
    (0, 1]) and emphasis (alpha > 1, `emphasis = True`) are this one class; its edit is an additive pre-softmax
    score bias (`interp.hooks.compile.compile_bias`) at `blocks.{l}.attn.hook_attn_scores`.
    """

    kind: ClassVar[str] = "attention"
    slot: ClassVar[str] = "attention"
    sites: ClassVar[tuple[str, ...]] = ("attention",)  # a registered site like the node sites

    target: Target
    alpha: float
    layers: tuple[int, ...] | None = None
    heads: tuple[int, ...] | HeadsTable | None = None
    queries: Literal["outside", "final"] = "outside"
    seed: int = 0
    name: str | None = None
    emphasis: bool = False

    def __post_init__(self) -> None:
        raw = {
            "target": self.target,
            "alpha": self.alpha,
            "layers": list(self.layers) if self.layers is not None else None,
            "heads": self._raw_heads(self.heads),
            "queries": self.queries,
            "seed": self.seed,
            "name": self.name,
            "emphasis": self.emphasis,
        }
        for key, value in _normalise(raw).items():
            object.__setattr__(self, key, value)

    @staticmethod
    def _raw_heads(heads):
        if heads is None:
            return None
        if isinstance(heads, Mapping):
            return {layer: list(hs) for layer, hs in heads.items()}
        heads = tuple(heads)
        if _is_table(heads):
            return {layer: list(hs) for layer, hs in heads}
        return list(heads)

    @property
    def label(self) -> str:
        """A short human-readable name (the `name` key if given)."""
        if self.name:
            return self.name
        target = f"[{self.target[0]},{self.target[1]})" if isinstance(self.target, tuple) else self.target
        return f"{target}@alpha={self.alpha:g}"

    # ---- the family's interface (`interp.hooks.base.Intervention`) --------------------------------------

    def identity(self) -> dict[str, Any]:
        """What the spec does (a variant's key): every key but the label `name`."""
        return {key: value for key, value in self.to_dict().items() if key != "name"}

    def hook_sites(self, n_layers: int) -> list[str]:
        """The attention scores of every chosen layer (where the bias is added, before the softmax)."""
        return [f"blocks.{layer}.attn.hook_attn_scores" for layer in self.selection(n_layers)]

    def check_fits(self, n_layers: int, n_heads: int) -> None:
        validate_against(self, n_layers, n_heads)

    def edits(self, context: EditContext) -> Edits:
        """The compiled pre-softmax score bias for the batch (`interp.hooks.compile.spec_bias_builder`)."""
        from interp.core.models import own_model

        # the compiler reads this module's specs, so it is imported by name when a bias is first built
        build = importlib.import_module("interp.hooks.compile").spec_bias_builder(
            self,
            context.n_layers,
            context.n_heads,
            context.dtype,
            judge_model=own_model(context.own) if context.own is not None else None,
            authors=context.authors,
        )
        return Edits(score_bias=build(context.batch, list(context.offsets), context.prompts))

    # ---- serialisation -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: lists for tuples, a {"layer": [heads]} object for a heads table, None for omitted."""
        table = self.heads_table
        if table is not None:
            heads: Any = {str(layer): list(hs) for layer, hs in table.items()}
        else:
            heads = list(self.heads) if self.heads is not None else None
        return {
            "target": list(self.target) if isinstance(self.target, tuple) else self.target,
            "alpha": self.alpha,
            "layers": list(self.layers) if self.layers is not None else None,
            "heads": heads,
            "queries": self.queries,
            "seed": self.seed,
            "name": self.name,
            "emphasis": self.emphasis,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "") -> "AttentionIntervention":
        """Inverse of `to_dict` (None values mean "omitted"); also reads parsed TOML. Raises InterpError."""
        if not isinstance(data, Mapping):
            raise InterpError(f"{where}an intervention spec must be a table of keys, not {type(data).__name__}")
        raw = {key: value for key, value in data.items() if value is not None}
        heads = raw.get("heads")
        if isinstance(heads, Mapping):
            raw["heads"] = {_layer_key(key, where): value for key, value in heads.items()}
        fields = _normalise(raw, where)
        return cls(**fields)

    def to_toml(self) -> str:
        """The spec as TOML that `load_spec` reads back to an equal spec (omitted keys are left out)."""
        data = {key: value for key, value in self.to_dict().items() if value is not None}
        if not data["emphasis"]:
            del data["emphasis"]
        return to_toml(data)


def _layer_key(key, where: str) -> int:
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, str) and key.strip().isdigit():
        return int(key)
    raise InterpError(f"{where}bad value for 'heads': table key {key!r} is not a layer index; {_HINTS['heads']}")


def spec_file_keys(path: str | Path) -> dict[str, Any]:
    """The keys of an intervention spec file, TOML or JSON (`read_toml_or_json`), with a relative `direction`
    file resolved from the spec file's folder (where it sits beside the spec), not the working directory."""
    path = Path(path)
    data = read_toml_or_json(path, "intervention spec")
    direction = data.get("direction")
    if isinstance(direction, str) and direction:
        located = Path(direction).expanduser()
        data["direction"] = str(located if located.is_absolute() else path.parent / located)
    return data


def load_spec(path: str | Path) -> AttentionIntervention:
    """Read one intervention spec from a TOML or JSON file (top-level keys, see the module docstring)."""
    path = Path(path)
    return AttentionIntervention.from_dict(spec_file_keys(path), where=f"{path}: ")


def validate_against(spec: AttentionIntervention, n_layers: int, n_heads: int) -> None:
    """Check the spec's layers and heads exist in a model with this shape (call before any model work)."""
    table = spec.heads_table
    layers = set(spec.layers or ()) | set(table or ())
    for layer in sorted(layers):
        if layer >= n_layers:
            raise InterpError(
                f"'layers': layer {layer} is out of range; this model has {n_layers} layers (0-{n_layers - 1})"
            )
    heads = {h for hs in table.values() for h in hs} if table is not None else set(spec.heads or ())
    for head in sorted(heads):
        if head >= n_heads:
            raise InterpError(
                f"'heads': head {head} is out of range; this model has {n_heads} heads per layer (0-{n_heads - 1})"
            )


def as_spec(
    spec: "AttentionIntervention | Mapping[str, Any] | str | Path | None" = None, **keys: Any
) -> AttentionIntervention:
    """One intervention spec from whatever a caller holds: a spec, a table of keys, a TOML file, or keys.

    `as_spec(target="self", alpha=0.0, layers=[3])` builds one from keys; `as_spec(spec, alpha=0.5)` is
    `spec` with those keys replaced; a mapping is read as `AttentionIntervention.from_dict`, a path as
    `load_spec`. Raises InterpError naming the key, as a TOML spec does.
    """
    if spec is None:
        return AttentionIntervention.from_dict(keys)
    if isinstance(spec, (str, Path)):
        spec = load_spec(spec)
    elif isinstance(spec, Mapping):
        spec = AttentionIntervention.from_dict({**spec, **keys})
        keys = {}
    elif not isinstance(spec, AttentionIntervention):
        raise InterpError(f"an intervention is a spec, a table of keys or a TOML path, not {type(spec).__name__}")
    if not keys:
        return spec
    unknown = sorted(set(keys) - set(KEYS))
    if unknown:
        raise InterpError(f"unknown key {unknown[0]!r} in intervention spec; allowed keys: {', '.join(KEYS)}")
    return AttentionIntervention.from_dict({**spec.to_dict(), **keys})
