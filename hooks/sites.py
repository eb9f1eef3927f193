"""Named hook points on a plain Hugging Face decoder: one documented scheme, PyTorch forward-hook handles.

The names follow TransformerLens, so a reader of either toolkit reads both:

    blocks.{l}.hook_resid_pre    the residual stream entering layer l           [batch, pos, d_model]
    blocks.{l}.attn.hook_pattern each head's attention pattern (post-softmax)    [batch, head, query, key]
    blocks.{l}.attn.hook_v       the values each head reads (a key/value head's  [batch, pos, head, d_head]
                                 values repeated for every query head that shares it, so a per-head edit stays per head)
    blocks.{l}.attn.hook_z       each head's output before the output projection [batch, pos, head, d_head]
    blocks.{l}.hook_attn_out     the attention block's output (after o_proj)     [batch, pos, d_model]
    blocks.{l}.hook_mlp_out      the MLP block's output                          [batch, pos, d_model]
    blocks.{l}.hook_resid_post   the residual stream leaving layer l            [batch, pos, d_model]

`site_hooks(hf_model, {name: fn})` calls `fn(tensor)` at each named point during every forward pass in the block;
`fn` returns a tensor of the same shape to replace the activation, or None to leave it as it is (a reader). The
hooks are `register_forward_hook` / `register_forward_pre_hook` handles (baukit's `Trace`, not a replaced
`forward`): the model object is the caller's, untouched, and is restored on exit, on errors too.

Where the modules are: the decoder layers are the `ModuleList` as long as the config's layer count; in each, the
attention module (`self_attn`, `attn`, `attention`, `self_attention`), its output projection (`o_proj`, `c_proj`,
`dense`, `out_proj`: its input is the heads' outputs side by side, so `hook_z` reads and edits that input) and
the MLP (`mlp`, `feed_forward`). An architecture without one of them does not offer the names that need it:
`hook_names` lists what the loaded model has, and an unknown name is one line, never a silent no-op.

The pattern and the values exist only inside the attention function, so their functions are handed to it
(`InnerSites`, one per attention module, as an attribute the toolkit's attention function reads:
`interp.core.backends.span_rows`), which then computes the layer's output as pattern x values from the edited
tensors: hook_z at those heads is exactly the edited pattern times the edited values. A pass whose attention
does not run that function (another attention implementation) stops with one line, never a silent no-op.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable, Iterator, Literal, Mapping, Sequence

import torch
from torch import Tensor

from interp.errors import InterpError

SiteFn = Callable[[Tensor], Tensor | None]
SiteEdit = dict[str, SiteFn]  # hook name -> function of the activation (None: read only)

_ATTENTION = ("self_attn", "attn", "attention", "self_attention")
_OUT_PROJ = ("o_proj", "c_proj", "dense", "out_proj")
_MLP = ("mlp", "feed_forward")
POINTS = (
    "hook_resid_pre",
    "attn.hook_pattern",
    "attn.hook_v",
    "attn.hook_z",
    "hook_attn_out",
    "hook_mlp_out",
    "hook_resid_post",
)
INNER = {"attn.hook_pattern": "pattern", "attn.hook_v": "v"}  # points computed inside the attention function
INNER_ATTR = "_interp_inner_sites"


def hook_name(point: str, layer: int) -> str:
    """The name of `point` (one of `POINTS`) at decoder layer `layer`."""
    return f"blocks.{layer}.{point}"


@dataclass(frozen=True)
class HookPoint:
    """Where a named point lies in the loaded model: the module, and which of its tensors the point is."""

    module: torch.nn.Module
    when: Literal[
        "input", "output", "inner"
    ]  # which tensor of the module the point is ("inner": in its attention function)
    n_heads: int | None = None  # hook_z: the input is split into heads


class InnerSites:
    """The functions at one attention module's inner points ("pattern", "v"), and how often its attention
    function ran them (the check that they ran)."""

    def __init__(self) -> None:
        self.fns: dict[str, SiteFn] = {}
        self.calls = 0

    def run(self, point: str, tensor: Tensor) -> Tensor:
        """`tensor` after the function at `point` (itself when there is none, or it only reads)."""
        fn = self.fns.get(point)
        if fn is None:
            return tensor
        edited = fn(tensor)
        return tensor if edited is None else edited.to(tensor.dtype)


def site_layer(name: str) -> int | None:
    """The decoder layer a hook name points into: `blocks.{l}.…` -> l; None for a name not of that form (which
    `site_hooks` then refuses in one line)."""
    parts = name.split(".", 2)
    return int(parts[1]) if len(parts) == 3 and parts[0] == "blocks" and parts[1].isdigit() else None


def decoder_layers(hf_model: torch.nn.Module) -> list[torch.nn.Module]:
    """The decoder layers, in order: the model's ModuleList as long as its configured layer count."""
    config = hf_model.config.get_text_config()
    n_layers = config.num_hidden_layers
    for _, module in hf_model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n_layers and n_layers > 0:
            return list(module)
    raise InterpError(f"{type(hf_model).__name__}: found no list of {n_layers} decoder layers to hook")


def _child(module: torch.nn.Module, names: tuple[str, ...]) -> torch.nn.Module | None:
    return next(
        (getattr(module, name) for name in names if isinstance(getattr(module, name, None), torch.nn.Module)), None
    )


def _in_features(projection: torch.nn.Module) -> int | None:
    if isinstance(projection, torch.nn.Linear):
        return projection.in_features
    weight = getattr(projection, "weight", None)  # GPT-2's Conv1D holds [in, out]
    if type(projection).__name__ == "Conv1D" and weight is not None:
        return int(weight.shape[0])
    return None


def hook_points(hf_model: torch.nn.Module) -> dict[str, HookPoint]:
    """Every named point the loaded model offers (see the module docstring)."""
    config = hf_model.config.get_text_config()
    n_heads = config.num_attention_heads
    points: dict[str, HookPoint] = {}
    for layer, block in enumerate(decoder_layers(hf_model)):
        points[hook_name("hook_resid_pre", layer)] = HookPoint(block, "input")
        attention = _child(block, _ATTENTION)
        if attention is not None:
            points[hook_name("hook_attn_out", layer)] = HookPoint(attention, "output")
            for point in INNER:
                points[hook_name(point, layer)] = HookPoint(attention, "inner")
            projection = _child(attention, _OUT_PROJ)
            width = _in_features(projection) if projection is not None else None
            if width is not None and width % n_heads == 0:
                points[hook_name("attn.hook_z", layer)] = HookPoint(projection, "input", n_heads)
        mlp = _child(block, _MLP)
        if mlp is not None:
            points[hook_name("hook_mlp_out", layer)] = HookPoint(mlp, "output")
        points[hook_name("hook_resid_post", layer)] = HookPoint(block, "output")
    return points


def hook_names(hf_model: torch.nn.Module) -> list[str]:
    """The names `site_hooks` accepts on this model, layer by layer."""
    return list(hook_points(hf_model))


def check_hook_names(hf_model: torch.nn.Module, names, points: Mapping[str, HookPoint] | None = None) -> None:
    """Every name is a point of this model (`points`: its `hook_points`, when already read): else one line
    naming it and what the model offers."""
    points = hook_points(hf_model) if points is None else points
    for name in names:
        if name not in points:
            layer_zero = [n.split(".", 2)[2] for n in points if n.startswith("blocks.0.")]
            raise InterpError(
                f"hook point {name!r} does not exist on {type(hf_model).__name__}"
                f"{' (its attention exposes no per-head output to hook)' if name.endswith('attn.hook_z') else ''}; "
                f"it offers blocks.<layer>.{{{', '.join(layer_zero)}}} for layers "
                f"0-{hf_model.config.get_text_config().num_hidden_layers - 1}"
            )


def _apply(fn: SiteFn, tensor: Tensor, n_heads: int | None) -> Tensor | None:
    if n_heads is None:
        edited = fn(tensor)
        return None if edited is None else edited.to(tensor.dtype)
    split = tensor.reshape(*tensor.shape[:-1], n_heads, tensor.shape[-1] // n_heads)
    edited = fn(split)
    return None if edited is None else edited.reshape(tensor.shape).to(tensor.dtype)


def _input_hook(fn: SiteFn, n_heads: int | None):
    def hook(_module, args, kwargs):
        if args:
            edited = _apply(fn, args[0], n_heads)
            return None if edited is None else ((edited, *args[1:]), kwargs)
        key = "hidden_states" if "hidden_states" in kwargs else next(iter(kwargs))
        edited = _apply(fn, kwargs[key], n_heads)
        return None if edited is None else (args, {**kwargs, key: edited})

    return hook


def _output_hook(fn: SiteFn):
    def hook(_module, _args, output):
        first = output[0] if isinstance(output, tuple) else output
        edited = _apply(fn, first, None)
        if edited is None:
            return None
        return (edited, *output[1:]) if isinstance(output, tuple) else edited

    return hook


def shape_checked(name: str, fn: SiteFn) -> SiteFn:
    """A user's function at hook point `name`, held to its contract: it returns None or a tensor of the shape and
    dtype it was given. Anything else is one line naming the point and both shapes, never broadcast into the pass (a
    [d_model] return would otherwise replace every position's activation with it)."""

    def checked(activation: Tensor) -> Tensor | None:
        edited = fn(activation)
        if edited is None:
            return None
        if not isinstance(edited, Tensor):
            raise InterpError(
                f"the hook at {name!r} returned {type(edited).__name__}; return a tensor of the shape it was given "
                f"{tuple(activation.shape)}, or None to leave it"
            )
        if edited.shape != activation.shape:
            raise InterpError(
                f"the hook at {name!r} returned a tensor of shape {tuple(edited.shape)} for an activation of shape "
                f"{tuple(activation.shape)}; return the same shape, or None to leave it"
            )
        if edited.dtype != activation.dtype:  # an int64 return truncates, a float64 one runs the rest in another
            raise InterpError(  # precision than the run records: neither is cast silently
                f"the hook at {name!r} returned a {str(edited.dtype)[6:]} tensor for a {str(activation.dtype)[6:]} "
                "activation; return its dtype (e.g. `.to(x.dtype)`), or None to leave it"
            )
        return edited

    return checked


def chain(functions: Sequence[SiteFn]) -> SiteFn:
    """Several functions at one point, in order, as one: each gets the activation the one before it left (None
    from any of them keeps the activation it was given)."""
    if len(functions) == 1:
        return functions[0]

    def chained(activation: Tensor) -> Tensor:
        for fn in functions:
            edited = fn(activation)
            activation = activation if edited is None else edited
        return activation

    return chained


@contextlib.contextmanager
def site_hooks(hf_model: torch.nn.Module, edits: Mapping[str, SiteFn]) -> Iterator[None]:
    """Run `edits` (hook name -> function) at their points during the block; every handle is removed on exit."""
    points = hook_points(hf_model)
    check_hook_names(hf_model, edits, points)
    handles = []
    inner: dict[int, tuple[torch.nn.Module, InnerSites]] = {}
    try:
        for name, fn in edits.items():
            point = points[name]
            if point.when == "inner":
                module = point.module
                if id(module) not in inner:
                    inner[id(module)] = (module, InnerSites())
                    setattr(module, INNER_ATTR, inner[id(module)][1])
                    handles += _inner_check(module, inner[id(module)][1], name.rsplit(".", 2)[0])
                inner[id(module)][1].fns[INNER[name.split(".", 2)[2]]] = fn
            elif point.when == "input":
                handles.append(point.module.register_forward_pre_hook(_input_hook(fn, point.n_heads), with_kwargs=True))
            else:
                handles.append(point.module.register_forward_hook(_output_hook(fn)))
        yield
    finally:
        for handle in handles:
            handle.remove()
        for module, _ in inner.values():
            if hasattr(module, INNER_ATTR):
                delattr(module, INNER_ATTR)


def _inner_check(module: torch.nn.Module, sites: InnerSites, where: str) -> list:
    """Hooks that stop the pass when the module's attention ran without running its inner points."""
    seen = {}

    def before(_module, _args):
        seen["calls"] = sites.calls

    def after(_module, _args, _output):
        if sites.calls == seen.get("calls"):
            raise InterpError(
                f"{where}: the attention pattern and values are hooked inside the toolkit's attention "
                "function, which this pass did not run; "
                "use the hf or nnsight backend (a plain model: run it through Judge or interp.core.backends)"
            )

    return [module.register_forward_pre_hook(before), module.register_forward_hook(after)]


def output_hook(module: torch.nn.Module, fn: Callable[[object], object | None]):
    """A forward-hook handle on `module` calling `fn(output)`: its result replaces the output, None leaves it. The
    one place, with `site_hooks`, where the toolkit's backends register hooks on a model's modules (the patterns
    they read, the residual edits of steering); remove the handle to restore the model."""
    return module.register_forward_hook(lambda _module, _args, output: fn(output))
