"""Interventions on nodes: a head's output, an MLP's output, the residual stream, as frozen data (pyvene's idea).

A spec names a site, an operation, where (layers, heads, positions) and the operation's own keys:

    site      = "head_output" | "mlp_output" | "residual"       # attention sites: `interp.hooks.spec`
                | "head_pattern" | "head_values"                 # a head's two routes (patch, zero): where it
                                                                 # looks, what it reads
    op        = "zero" | "mean" | "resample" | "patch" | "project_out" | "add" | a registered kind
    layers    = [23, 27]                                         # omitted: every layer (or the heads table's)
    heads     = { 23 = [3, 8], 27 = [1] }                        # head_output only: a list, or layer -> heads
    positions = "all" | "final" | "self" | "other" | "a" | "b" | "random"
    seed      = 0                                                # the "random" span, resample's donors
    name      = "label"                                          # a label, never part of the key

Operations (each replaces the site's activation at the selected heads and positions, nowhere else):
- `zero`: 0.
- `mean`: the activation's mean over a reference set of prompts (the run's selection split, else its items),
  at positions of the same kind (`final`: the final position's; a span or `all`: every such token's), one
  vector per head (head_output) or per layer; stored and keyed by hash (`interp.engine.variants`).
- `resample`: the same site at the final position of another prompt of the reference set, drawn by a hash of
  (`seed`, the prompt's tokens); positions must be `final` (prompts differ in length elsewhere).
- `patch`: the same site from a counterfactual prompt of the same token length, position by position:
  `counterfactual = "swap"` (the pair in the other order; positions `all` or `final`), `"reference"` (the judge's
  own answer replaced, in its slot, by the item's reference answer cut or cycled to the own answer's token
  length), `"other"` (the same, with the other author's answer of the pair: then both slots hold that answer), or
  `"same"` (the prompt itself: the identity, the oracle's check).
- `project_out` (`direction`, `coefficient` = 1): h - c (h.u) u; `add` (`direction`, `coefficient`): h + c u; u the
  unit direction, for the d_model sites (mlp_output, residual).

A user kind: subclass `NodeIntervention`, set `op` (and `sites` if it is not for every site), implement
`replacement(activation, context)`, decorate with `@register`. It then loads from TOML and runs wherever a
built-in kind does (`judge.applying`, `interp.intervene`, sweeps, the causal test).

`node_edits` compiles specs to hook-point functions (`interp.hooks.sites`): the one mechanism on every backend.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Sequence

import torch
from torch import Tensor

from interp.config import to_toml
from interp.core.backends import Batch, Edits
from interp.core.spans import TokenizedPrompt
from interp.errors import InterpError
from interp.hooks.base import EditContext, Intervention, SiteData, from_mapping, register_kind, registered_classes
from interp.hooks.sites import POINTS, SiteEdit, chain, hook_name
from interp.hooks.spec import AttentionIntervention, HeadSelection, HeadsTable, spec_file_keys
from interp.hooks.steering import add_direction, direction_values, remove_direction

SITES: dict[str, str] = {
    "head_output": "attn.hook_z",
    "mlp_output": "hook_mlp_out",
    "residual": "hook_resid_post",
    "head_pattern": "attn.hook_pattern",  # a head's route: where it looks (patch only)
    "head_values": "attn.hook_v",  # a head's route: what it reads (patch only)
}
HEAD_SITES = ("head_output", "head_pattern", "head_values")
ROUTE_SITES = ("head_pattern", "head_values")
POSITIONS = ("all", "final", "self", "other", "a", "b", "random")
COUNTERFACTUALS = ("swap", "reference", "other", "same")
_BASE_KEYS = ("site", "op", "layers", "heads", "positions", "seed", "name")
assert all(point in POINTS for point in SITES.values())


def register(cls: type["NodeIntervention"]) -> type["NodeIntervention"]:
    """Class decorator: make `cls.op` a kind that specs (TOML, `judge.applying`, sweeps) can name; it is also
    registered in the intervention family (`interp.hooks.base.register_kind`) under its `op`."""
    if not (isinstance(cls, type) and issubclass(cls, NodeIntervention)) or not cls.op:
        raise InterpError("register a NodeIntervention subclass with a non-empty `op`")
    known = registered_classes(NodeIntervention).get(cls.op)
    if known is not None and known is not cls and known.__module__ == __name__:
        raise InterpError(f"op {cls.op!r} is a built-in kind; give yours another name")
    if cls.op in ("attention", "steering"):
        raise InterpError(f"op {cls.op!r} is a built-in kind; give yours another name")
    cls.kind = cls.op
    register_kind(cls)
    return cls


def registered_ops() -> list[str]:
    """The ops of every registered node kind, sorted (the family's one registry, `registered_classes`)."""
    return sorted(registered_classes(NodeIntervention))


def node_keys(op: str | None = None) -> list[str]:
    """The keys a node spec may hold: the common ones and every built-in's own, plus `op`'s if it is registered."""
    keys = ["op", *_BASE_KEYS[:1], *_BASE_KEYS[2:], "counterfactual", "direction", "coefficient"]
    if op in registered_ops():
        keys += [f.name for f in dataclasses.fields(registered_classes(NodeIntervention)[op]) if f.name not in keys]
    return keys


@dataclass(frozen=True)
class SiteContext:
    """What an operation may read besides the activation: the hook point, the layer, and data made before the
    pass (`mean`: the reference mean; `donor`: the aligned activation of the donor or counterfactual pass)."""

    name: str
    layer: int
    mean: Tensor | None = None
    donor: Tensor | None = None


@dataclass(frozen=True)
class NodeIntervention(HeadSelection, Intervention):
    """Base class of node interventions (see the module docstring), a branch of the intervention family
    (`interp.hooks.base.Intervention`: its `kind` is its `op`). Subclasses add their own keys as fields."""

    op: ClassVar[str] = ""
    sites: ClassVar[tuple[str, ...]] = tuple(site for site in SITES if site not in ROUTE_SITES)
    needs: ClassVar[str | None] = None  # "mean" | "donor" | "counterfactual": data made before the pass

    site: str = "head_output"
    layers: tuple[int, ...] | None = None
    heads: tuple[int, ...] | HeadsTable | None = None
    positions: str = "all"
    seed: int = 0
    name: str | None = None

    def __post_init__(self) -> None:
        _check_common(self)

    def replacement(self, activation: Tensor, context: SiteContext) -> Tensor:
        """The values the selected heads and positions take (broadcastable to `activation`)."""
        raise NotImplementedError(f"{type(self).__name__} must implement replacement(activation, context)")

    # ---- selection (`heads_table`, `selection`: HeadSelection's) ---------------------------------------

    def hook_names(self, n_layers: int) -> list[str]:
        """The hook names of the selected layers at the spec's site."""
        return [hook_name(SITES[self.site], layer) for layer in self.selection(n_layers)]

    def hook_sites(self, n_layers: int) -> list[str]:
        """The hook names of the selected layers at the spec's site (`hook_names`)."""
        return self.hook_names(n_layers)

    def check_fits(self, n_layers: int, n_heads: int) -> None:
        """InterpError when a selected layer or head is not in a model of this shape (`validate_node`)."""
        validate_node(self, n_layers, n_heads)

    def edits(self, context: EditContext) -> Edits:
        """The site edits of the selection for the batch (`node_edits`), with the data made before the pass."""
        sites = node_edits(
            [self],
            context.n_layers,
            context.batch,
            context.offsets,
            context.prompts,
            own=context.own,
            authors=context.authors,
            data={0: context.data},
        )
        return Edits(sites=sites)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "") -> "NodeIntervention":
        """A spec of this kind from its keys (`op` may be left out: it is the class's)."""
        return node_from_dict({"op": cls.op, **data} if cls.op else data, where=where)

    @property
    def label(self) -> str:
        """`name` when given, else `<site>-<op>-<layers or heads>-<positions>`."""
        if self.name:
            return self.name
        table = self.heads_table
        where = (
            ",".join(f"L{layer}H{'.'.join(map(str, heads))}" for layer, heads in table.items())
            if table
            else ("L" + ".".join(map(str, self.layers)) if self.layers else "all-layers")
        )
        return f"{self.site}-{self.op}-{where}-{self.positions}"

    # ---- serialisation ------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Its keys, JSON-ready (tuples as lists, a heads table as layer -> heads); `node_from_dict` reads them back."""
        data: dict[str, Any] = {"site": self.site, "op": self.op}
        for f in dataclasses.fields(self):
            if f.name == "site":
                continue
            value = getattr(self, f.name)
            if f.name == "heads" and value is not None:
                value = {str(layer): list(hs) for layer, hs in value} if _is_table(value) else list(value)
            elif isinstance(value, tuple):
                value = list(value)
            data[f.name] = value
        return data

    def identity(self) -> dict[str, Any]:
        """What the intervention does (its key): every field but the label; a long direction by its hash."""
        data = {k: v for k, v in self.to_dict().items() if k != "name"}
        if isinstance(data.get("direction"), list):
            data["direction"] = hashlib.sha256(json.dumps(data["direction"]).encode()).hexdigest()[:16]
        return data

    def to_toml(self) -> str:
        """Its keys as a TOML spec, the unset ones left out."""
        return to_toml({k: v for k, v in self.to_dict().items() if v is not None})


def _is_table(heads) -> bool:
    return bool(heads) and isinstance(heads[0], tuple)


def _check_common(spec: NodeIntervention) -> None:
    where = f"{spec.op} intervention: "
    if spec.site not in SITES:
        raise InterpError(
            f"{where}unknown site {spec.site!r}; use one of {', '.join(SITES)} (or 'attention' for a mask spec)"
        )
    if spec.site not in type(spec).sites:
        raise InterpError(f"{where}op {spec.op!r} acts on {', '.join(type(spec).sites)}, not on site {spec.site!r}")
    if spec.positions not in POSITIONS:
        raise InterpError(f"{where}bad value for 'positions': {spec.positions!r}; use one of {', '.join(POSITIONS)}")
    if not isinstance(spec.seed, int) or isinstance(spec.seed, bool):
        raise InterpError(f"{where}bad value for 'seed': use an integer")
    if spec.name is not None and not isinstance(spec.name, str):
        raise InterpError(f"{where}bad value for 'name': use a string")
    layers = _indices(spec.layers, "layers", where) if spec.layers is not None else None
    object.__setattr__(spec, "layers", layers)
    heads = spec.heads
    if heads is not None:
        if spec.site not in HEAD_SITES:
            raise InterpError(
                f"{where}'heads' applies to the head sites ({', '.join(HEAD_SITES)}) only, not {spec.site!r}"
            )
        if isinstance(heads, Mapping):
            heads = tuple(
                (_layer(k, where), _indices(v, "heads", where))
                for k, v in sorted(heads.items(), key=lambda kv: _layer(kv[0], where))
            )
        elif _is_table(tuple(heads)):
            heads = tuple((_layer(k, where), _indices(v, "heads", where)) for k, v in sorted(heads))
        else:
            heads = _indices(heads, "heads", where)
        if not heads:
            raise InterpError(f"{where}'heads' is empty; list head indices or omit it for every head")
        if _is_table(heads) and layers is not None:
            missing = [layer for layer in layers if layer not in dict(heads)]
            if missing:
                raise InterpError(f"{where}'layers' lists layer {missing[0]} but the 'heads' table has no entry for it")
        object.__setattr__(spec, "heads", heads)


def _layer(key, where: str) -> int:
    if isinstance(key, int) and not isinstance(key, bool) and key >= 0:
        return key
    if isinstance(key, str) and key.strip().isdigit():
        return int(key)
    raise InterpError(f"{where}bad value for 'heads': table key {key!r} is not a layer index")


def _indices(values, key: str, where: str) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise InterpError(f"{where}bad value for {key!r}: use a list of non-negative integers")
    if not values:
        raise InterpError(f"{where}{key!r} is empty; list indices or omit it")
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in values):
        raise InterpError(f"{where}bad value for {key!r}: use a list of non-negative integers, got {list(values)!r}")
    return tuple(sorted(set(values)))


# ---- the built-in kinds ---------------------------------------------------------------------------


@register
@dataclass(frozen=True)
class Zero(NodeIntervention):
    """The op "zero": the selection becomes 0 (at every site, a head's pattern and values too)."""

    op: ClassVar[str] = "zero"
    sites: ClassVar[tuple[str, ...]] = tuple(SITES)  # a zero pattern or zero values: the head reads nothing

    def replacement(self, activation: Tensor, context: SiteContext) -> Tensor:
        return torch.zeros((), dtype=activation.dtype, device=activation.device)


@register
@dataclass(frozen=True)
class Mean(NodeIntervention):
    """The op "mean": the selection becomes its mean over a reference set of prompts."""

    op: ClassVar[str] = "mean"
    needs: ClassVar[str | None] = "mean"

    def replacement(self, activation: Tensor, context: SiteContext) -> Tensor:
        if context.mean is None:
            raise InterpError(
                f"{context.name}: a mean ablation needs the reference mean; pass a reference set of prompts"
            )
        return context.mean.to(activation.device, activation.dtype)


@dataclass(frozen=True)
class _FromDonor(NodeIntervention):
    """The activation of another pass (a donor prompt, a counterfactual), aligned with the batch."""

    def replacement(self, activation: Tensor, context: SiteContext) -> Tensor:
        return context.donor.to(activation.device, activation.dtype)


@register
@dataclass(frozen=True)
class Resample(_FromDonor):
    """The op "resample": the selection becomes the same site's final position in another prompt."""

    op: ClassVar[str] = "resample"
    needs: ClassVar[str | None] = "donor"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.positions != "final":
            raise InterpError(
                "resample intervention: positions must be 'final' (other prompts differ in length elsewhere)"
            )


@register
@dataclass(frozen=True)
class Patch(_FromDonor):
    """The op "patch": the selection becomes the same site in a `counterfactual` prompt, position by position."""

    op: ClassVar[str] = "patch"
    needs: ClassVar[str | None] = "counterfactual"
    sites: ClassVar[tuple[str, ...]] = tuple(SITES)
    counterfactual: str = "swap"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.counterfactual not in COUNTERFACTUALS:
            raise InterpError(
                f"patch intervention: bad value for 'counterfactual': {self.counterfactual!r}; use one of "
                f"{', '.join(COUNTERFACTUALS)}"
            )
        if self.counterfactual == "swap" and self.positions not in ("all", "final"):
            raise InterpError(
                "patch intervention: counterfactual 'swap' moves the spans; positions must be 'all' or 'final'"
            )


@dataclass(frozen=True)
class _Directional(NodeIntervention):
    sites: ClassVar[tuple[str, ...]] = ("mlp_output", "residual")
    direction: tuple[float, ...] = ()
    coefficient: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "direction", direction_values(self.direction, f"{self.op} intervention: "))
        if (
            isinstance(self.coefficient, bool)
            or not isinstance(self.coefficient, (int, float))
            or not math.isfinite(self.coefficient)
        ):
            raise InterpError(f"{self.op} intervention: bad value for 'coefficient': use a finite number")
        object.__setattr__(self, "coefficient", float(self.coefficient))

    def unit(self, like: Tensor) -> Tensor:
        u = torch.tensor(self.direction, dtype=torch.float64, device=like.device)
        if u.shape[0] != like.shape[-1]:
            raise InterpError(
                f"{self.op} intervention: the direction has {u.shape[0]} dimensions but the site has {like.shape[-1]}"
            )
        return u / u.norm()


@register
@dataclass(frozen=True)
class ProjectOut(_Directional):
    """The op "project_out": h - coefficient (h.u) u at the selection, u the unit `direction`."""

    op: ClassVar[str] = "project_out"

    def replacement(self, activation: Tensor, context: SiteContext) -> Tensor:
        return remove_direction(activation, self.unit(activation), self.coefficient)


@register
@dataclass(frozen=True)
class Add(_Directional):
    """The op "add": h + coefficient u at the selection, u the unit `direction` (at head_output, of the head's
    width: each chosen head's output moved along it)."""

    op: ClassVar[str] = "add"
    sites: ClassVar[tuple[str, ...]] = ("mlp_output", "residual", "head_output")

    def replacement(self, activation: Tensor, context: SiteContext) -> Tensor:
        return add_direction(activation, self.unit(activation), self.coefficient)


# ---- reading specs --------------------------------------------------------------------------------


def node_from_dict(data: Mapping[str, Any], *, where: str = "") -> NodeIntervention:
    """A node spec from a table of keys (parsed TOML or JSON, `to_dict`'s output). Raises InterpError."""
    if not isinstance(data, Mapping):
        raise InterpError(f"{where}an intervention spec must be a table of keys, not {type(data).__name__}")
    op = data.get("op")
    if op not in registered_ops():
        raise InterpError(
            f"{where}unknown op {op!r} for site {data.get('site')!r}; use one of {', '.join(registered_ops())}"
        )
    cls = registered_classes(NodeIntervention)[op]
    allowed = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(allowed) - {"op"})
    if unknown:
        raise InterpError(f"{where}unknown key {unknown[0]!r} in a {op} spec; allowed keys: op, {', '.join(allowed)}")
    values = {k: v for k, v in data.items() if k != "op" and v is not None}
    for key in ("layers",):
        if key in values and isinstance(values[key], list):
            values[key] = tuple(values[key])
    if isinstance(values.get("heads"), list):
        values["heads"] = tuple(values["heads"])
    try:
        return cls(**values)
    except InterpError as exc:
        raise InterpError(f"{where}{exc}") from None
    except TypeError as exc:
        raise InterpError(f"{where}bad {op} spec: {exc}") from None


def is_node_spec(data: Mapping[str, Any]) -> bool:
    """A table of keys names a node intervention when its site is not "attention"."""
    return isinstance(data, Mapping) and data.get("site", "attention") != "attention"


ATTENTION_OPS = ("mask", "dampen", "emphasis")


def _attention_keys(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An attention spec's keys with `site = "attention"` and its `op` read: "mask" (alpha 0, the default),
    "dampen" (alpha in [0, 1]) or "emphasis" (alpha > 1); the rest is `AttentionIntervention`'s."""
    keys = {k: v for k, v in data.items() if k not in ("site", "op")}
    op = data.get("op")
    if op is None:
        return keys
    if op not in ATTENTION_OPS:
        raise InterpError(f"{where}unknown op {op!r} for site 'attention'; use one of {', '.join(ATTENTION_OPS)}")
    if op == "mask":
        if keys.get("alpha", 0.0) != 0:
            raise InterpError(f"{where}op 'mask' sets alpha to 0; drop 'alpha' or use op 'dampen'")
        keys["alpha"] = 0.0
    elif op == "emphasis":
        keys["emphasis"] = True
    elif keys.get("emphasis") or (isinstance(keys.get("alpha"), (int, float)) and keys["alpha"] > 1):
        raise InterpError(f"{where}op 'dampen' takes alpha in [0, 1]; alpha > 1 raises attention: use op 'emphasis'")
    return keys


def as_intervention(spec=None, **keys) -> "AttentionIntervention | NodeIntervention":
    """One intervention from whatever a caller holds (a spec, a table of keys, a TOML path, or keys): the kind
    its `kind` key names (any registered kind); without one (the older files), a node spec when its `site` is
    head_output, mlp_output or residual, an attention spec otherwise (`as_spec`)."""
    from interp.hooks.spec import as_spec

    if isinstance(spec, NodeIntervention):
        return node_from_dict({**spec.to_dict(), **keys}) if keys else spec
    if isinstance(spec, AttentionIntervention):
        if keys.get("site", "attention") != "attention":
            raise InterpError(
                f"an attention spec cannot take site {keys['site']!r}; build a node spec from keys instead"
            )
        return as_spec(spec, **_attention_keys(keys, "")) if keys else spec
    where = ""
    if isinstance(spec, (str, Path)):
        where = f"{spec}: "
        data = {**spec_file_keys(spec), **keys}
    elif isinstance(spec, Mapping):
        data = {**spec, **keys}
    elif spec is None:
        data = dict(keys)
    else:
        raise InterpError(f"an intervention is a spec, a table of keys or a TOML path, not {type(spec).__name__}")
    if "kind" in data:  # a spec written with its kind (`spec_keys`): the registry's class reads it
        return from_mapping(data, where=where)
    if is_node_spec(data):  # older files name no kind: a node spec by its site, an attention spec otherwise
        return node_from_dict(data, where=where)
    return AttentionIntervention.from_dict(_attention_keys(data, where), where=where)


def spec_keys(intervention: Intervention) -> dict[str, Any]:
    """An intervention's keys with its `kind` first, for a spec file that any kind's reader (`as_intervention`)
    reads back; older files, without `kind`, still read as before."""
    data = intervention.to_dict()
    if isinstance(intervention, NodeIntervention):
        data = {k: v for k, v in data.items() if k != "op"}
    return {"kind": intervention.kind, **data}


def load_node_spec(path: str | Path) -> NodeIntervention:
    """The node spec in a TOML or JSON file (a relative `direction` file read from beside it)."""
    path = Path(path)
    return node_from_dict(spec_file_keys(path), where=f"{path}: ")


def validate_node(spec: NodeIntervention, n_layers: int, n_heads: int) -> None:
    """The spec's layers and heads exist in a model of this shape (before any model work)."""
    table = spec.heads_table
    for layer in sorted(set(spec.layers or ()) | set(table or ())):
        if layer >= n_layers:
            raise InterpError(
                f"'layers': layer {layer} is out of range; this model has {n_layers} layers (0-{n_layers - 1})"
            )
    heads = {h for hs in table.values() for h in hs} if table else set(spec.heads or ())
    for head in sorted(heads):
        if head >= n_heads:
            raise InterpError(
                f"'heads': head {head} is out of range; this model has {n_heads} heads per layer (0-{n_heads - 1})"
            )


# ---- compiling ------------------------------------------------------------------------------------


def position_rows(
    spec: NodeIntervention,
    batch: Batch,
    offsets: Sequence[int],
    prompts: Sequence[TokenizedPrompt] | None,
    *,
    own: str | None,
    authors: Sequence[tuple[str, str]] | None,
) -> Tensor:
    """[batch, pos] bool: the positions the spec edits (left-padded batch; padding never)."""
    from interp.hooks.compile import resolve_target

    rows, width = batch.input_ids.shape
    if spec.positions == "all":
        return batch.attention_mask.bool()
    mask = torch.zeros(rows, width, dtype=torch.bool)
    if spec.positions == "final":
        mask[:, -1] = True
        return mask
    if prompts is None:
        raise InterpError(f"positions {spec.positions!r} need the tokenized prompts (their response spans)")
    target = AttentionIntervention(target=spec.positions, alpha=0.0, seed=spec.seed)
    for row, (prompt, offset) in enumerate(zip(prompts, offsets, strict=False)):
        author_a, author_b = authors[row] if authors is not None else (None, None)
        start, end = resolve_target(target, prompt, judge_model=own, author_a=author_a, author_b=author_b)
        mask[row, offset + start : offset + end] = True
    return mask


NodeData = SiteData  # the data made before the pass (`interp.hooks.base.SiteData`)


def node_edits(
    specs: Sequence[NodeIntervention],
    n_layers: int,
    batch: Batch,
    offsets: Sequence[int],
    prompts: Sequence[TokenizedPrompt] | None,
    *,
    own: str | None = None,
    authors: Sequence[tuple[str, str]] | None = None,
    data: Mapping[int, NodeData] | None = None,
) -> SiteEdit:
    """The hook functions of `specs` for one batch: hook name -> edit. Specs at one point run in the order given
    (disjoint selections commute); `data[i]` holds what spec i needs (`needs`)."""
    chained: dict[str, list[Callable[[Tensor], Tensor]]] = {}
    for index, spec in enumerate(specs):
        rows = position_rows(spec, batch, offsets, prompts, own=own, authors=authors)
        made = (data or {}).get(index, NodeData())
        for layer, heads in spec.selection(n_layers).items():
            name = hook_name(SITES[spec.site], layer)
            chained.setdefault(name, []).append(_edit(spec, name, layer, heads, rows, made))
    return {name: chain(fns) for name, fns in chained.items()}


def _edit(spec: NodeIntervention, name: str, layer: int, heads: tuple[int, ...] | None, rows: Tensor, data: NodeData):
    def edit(activation: Tensor) -> Tensor:
        context = SiteContext(name, layer, mean=data.means.get(name), donor=data.donors.get(name))
        if spec.needs in ("donor", "counterfactual") and context.donor is None:
            raise InterpError(
                f"{name}: a {spec.op} intervention needs its {spec.needs} pass; run it through the judge or the engine"
            )
        new = spec.replacement(activation, context)
        where = rows.to(activation.device)[:, :, None]
        if activation.ndim == 4:  # [batch, pos, head, d_head]; the pattern: [batch, head, query, key], rows = queries
            pattern = spec.site == "head_pattern"
            chosen = torch.zeros(activation.shape[1 if pattern else 2], dtype=torch.bool, device=activation.device)
            chosen[list(heads) if heads is not None else slice(None)] = True
            where = (
                rows.to(activation.device)[:, None, :, None] & chosen[None, :, None, None]
                if pattern
                else where[..., None] & chosen[None, None, :, None]
            )
        return torch.where(where, new.to(activation.dtype), activation)

    return edit
