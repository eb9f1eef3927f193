"""The one intervention family: every kind of edit is a subclass of `Intervention`, registered by name.

pyvene's shape: an intervention is frozen data with a `kind` name; the registry maps the name to its class, so a
user subclasses `Intervention` (or one of the built-in kinds), decorates it with `@register_kind`, and it loads
from a spec file and runs wherever a built-in kind does. Each intervention knows its named sites (`hook_sites`:
`interp.hooks.sites` names, `blocks.{l}.…`) and how to build its edit for one batch (`edits`, an
`interp.core.backends.Edits`); `compile_edits` folds a list of them into the one edit set a backend's `forward`
takes, applied through hook handles that are removed when the pass ends.

The built-in kinds: "attention" (`interp.hooks.spec.AttentionIntervention`: masks, dampening and emphasis, a
pre-softmax score bias), "steering" (`interp.hooks.steering.ResidualSteering`: a direction added to, or projected
out of, the residual stream after one block), the node kinds of `interp.hooks.nodes` (one per `op`: "zero",
"mean", "resample", "patch", "project_out", "add", and any a user registers) and "temperature"
(`interp.hooks.verdict.VerdictTemperature`: the verdict logits scaled by lambda).

    >>> from interp.hooks import AttentionIntervention, registered_kinds
    >>> "attention" in registered_kinds() and AttentionIntervention(target="a", alpha=0.0).kind
    'attention'
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import torch
from torch import Tensor

from interp.core.backends import Batch, Edits
from interp.core.spans import TokenizedPrompt
from interp.errors import InterpError

_KINDS: dict[str, type["Intervention"]] = {}


@dataclass
class SiteData:
    """Data made before the pass, by hook name: reference means, and donor activations aligned to the batch."""

    means: dict[str, Tensor] = field(default_factory=dict)
    donors: dict[str, Tensor] = field(default_factory=dict)


@dataclass(frozen=True)
class EditContext:
    """What an intervention reads to build its edit for one left-padded batch: the batch and each row's padding
    (`offsets`), the tokenized prompts, the model's shape and dtype, the judge's own model and each row's
    (author A, author B), and the data made before the pass (`data`: a node kind's means or donors)."""

    batch: Batch
    offsets: Sequence[int]
    prompts: Sequence[TokenizedPrompt] | None
    n_layers: int
    n_heads: int
    dtype: torch.dtype = torch.float32
    own: str | None = None
    authors: Sequence[tuple[str, str]] | None = None
    data: SiteData = field(default_factory=SiteData)


class Intervention:
    """Base class of every intervention kind (see the module docstring).

    `kind`: the name the registry knows it by. `slot`: where a variant's identity files it ("attention" and
    "steering" hold one intervention, "nodes" a list), which keeps the stored keys of every kind what they were.
    `needs`: data made before the pass ("mean", "donor", "counterfactual"), or None.
    """

    kind: ClassVar[str] = ""
    slot: ClassVar[str] = "nodes"
    needs: ClassVar[str | None] = None
    sites: ClassVar[tuple[str, ...]] = ()  # the site names a spec of this kind may give as its `site`

    def identity(self) -> dict[str, Any]:
        """What the intervention does (its part of a variant's key): never its label."""
        raise NotImplementedError(f"{type(self).__name__} must implement identity()")

    def to_dict(self) -> dict[str, Any]:
        """Its keys, JSON-ready; `intervention_from_dict` reads them back."""
        raise NotImplementedError(f"{type(self).__name__} must implement to_dict()")

    def hook_sites(self, n_layers: int) -> list[str]:
        """The named sites (`interp.hooks.sites` hook names) it edits, in a model of `n_layers` layers."""
        raise NotImplementedError(f"{type(self).__name__} must implement hook_sites(n_layers)")

    def edits(self, context: EditContext) -> Edits:
        """Its edit for one batch."""
        raise NotImplementedError(f"{type(self).__name__} must implement edits(context)")

    def check_fits(self, n_layers: int, n_heads: int) -> None:
        """Raise InterpError (one line) when it names a layer or head a model of this shape lacks."""

    @property
    def label(self) -> str:
        """A short human-readable name."""
        return self.kind


def register_kind(cls: type[Intervention]) -> type[Intervention]:
    """Class decorator: make `cls.kind` a name spec files, variants and sweeps can use. A built-in kind keeps its
    name (a user's class under a built-in name is refused)."""
    if not (isinstance(cls, type) and issubclass(cls, Intervention)) or not cls.kind:
        raise InterpError("register an Intervention subclass with a non-empty `kind`")
    known = _KINDS.get(cls.kind)
    if known is not None and known is not cls and known.__module__.startswith("interp.hooks"):
        if not cls.__module__.startswith("interp.hooks"):
            raise InterpError(f"kind {cls.kind!r} is a built-in kind; give yours another name")
    _KINDS[cls.kind] = cls
    return cls


def _built_ins() -> None:
    """Import the module that registers the built-in kinds (attention, steering and the node kinds): they build on
    this one, so it is imported by name when the registry is first read, never at this module's top."""
    importlib.import_module("interp.hooks.nodes")
    importlib.import_module("interp.hooks.verdict")


def registered_kinds() -> list[str]:
    """The names of every registered kind, sorted."""
    _built_ins()
    return sorted(_KINDS)


def registered_classes(of: type = Intervention) -> dict[str, type[Intervention]]:
    """The one registry of the family: kind name -> its class, those that subclass `of` (the node kinds: their
    ops are kind names)."""
    _built_ins()
    return {kind: cls for kind, cls in _KINDS.items() if issubclass(cls, of)}


def kind_class(kind: str) -> type[Intervention]:
    """The class registered as `kind` (InterpError naming the known kinds otherwise)."""
    _built_ins()
    if kind not in _KINDS:
        raise InterpError(f"unknown intervention kind {kind!r}; use one of {', '.join(registered_kinds())}")
    return _KINDS[kind]


def site_names() -> list[str]:
    """Every site a spec may name, in registration order: "attention" (the attention scores, kind "attention")
    and the node sites ("head_output", "mlp_output", "residual", ...), one registry for all."""
    _built_ins()
    return list(dict.fromkeys(site for cls in _KINDS.values() for site in cls.sites))


def kinds_at(site: str) -> list[str]:
    """The registered kinds that act at `site`, sorted."""
    _built_ins()
    return sorted(kind for kind, cls in _KINDS.items() if site in cls.sites)


def compile_edits(interventions: Sequence[Intervention], context: EditContext) -> Edits:
    """The edit set of `interventions` for one batch, in the order given (functions at one site run in order)."""
    edits = Edits()
    for intervention in interventions:
        edits = edits.merged(intervention.edits(context))
    return edits


def check_all_fit(interventions: Sequence[Intervention], n_layers: int, n_heads: int) -> None:
    """Every intervention's layers and heads exist in a model of this shape."""
    for intervention in interventions:
        intervention.check_fits(n_layers, n_heads)


def kinds_of(interventions: Sequence[Intervention], cls: type) -> list:
    """The interventions that are instances of `cls`, in order."""
    return [intervention for intervention in interventions if isinstance(intervention, cls)]


def from_mapping(data: Mapping[str, Any], *, where: str = "") -> Intervention:
    """An intervention from a table of keys with a `kind` key (the registry's class's `from_dict`)."""
    cls = kind_class(str(data.get("kind")))
    keys = {key: value for key, value in data.items() if key != "kind"}
    reader = getattr(cls, "from_dict", None)
    if reader is None:
        return cls(**keys)
    return reader(keys, where=where)


def qualified_name(fn: Any) -> str:
    """A function's module and qualified name (`pkg.mod.f`, `notebook.<lambda>`): what a hook's key names."""
    inner = getattr(fn, "__wrapped__", fn)
    module = getattr(inner, "__module__", None) or type(inner).__module__
    return f"{module}.{getattr(inner, '__qualname__', type(inner).__qualname__)}"


@dataclass(frozen=True, eq=False)
class HookFunctions(Intervention):
    """A `Judge.hooks` block as an intervention of the family: named hook points -> the user's functions, run at
    those points in every pass (after the interventions listed before it), so a study that re-judges a run with
    the judge runs them too.

    A function cannot be keyed by its content (its closure, the globals it reads and the state it keeps can all
    change while its code stays), so its part of a variant's key is each point's function by qualified name plus
    `key`: the user's promise that the same key means the same functions (`Judge.hooks(..., key="add-0.5")`).
    Without a `key` the block is given a fresh random one: what is judged under it is stored under a key no other
    block has, so it is never reused for another hook (nor resumed after a kill).

    >>> block = HookFunctions((("blocks.0.hook_resid_pre", lambda x: x),), key="identity")
    >>> block.identity()["key"], block.hook_sites(2)
    ('identity', ['blocks.0.hook_resid_pre'])
    """

    kind: ClassVar[str] = "hooks"
    slot: ClassVar[str] = "hooks"
    functions: tuple[tuple[str, Any], ...] = ()  # (hook point, function), in the order given
    key: str = ""
    names: tuple[str, ...] = ()  # each function's qualified name (default: read from the function)

    def __post_init__(self) -> None:
        if not self.names:
            object.__setattr__(self, "names", tuple(qualified_name(fn) for _, fn in self.functions))

    def identity(self) -> dict[str, Any]:
        """Each point's function by qualified name, and the block's key."""
        return {
            "points": [[point, name] for (point, _), name in zip(self.functions, self.names, strict=True)],
            "key": self.key,
        }

    def to_dict(self) -> dict[str, Any]:
        """Refused: a block of functions has no spec-file form."""
        raise InterpError("a hooks block holds Python functions: it cannot be written as a spec; give a spec instead")

    def hook_sites(self, n_layers: int) -> list[str]:
        """The hook points the functions run at."""
        return [point for point, _ in self.functions]

    def edits(self, context: EditContext) -> Edits:
        """The functions at their points (a point named twice runs both, in order)."""
        edits = Edits()
        for point, fn in self.functions:
            edits = edits.merged(Edits(sites={point: fn}))
        return edits

    @property
    def label(self) -> str:
        """The block's points and key."""
        return f"hooks({', '.join(self.hook_sites(0))}; key={self.key})"
