"""One judgment's full attention pattern: chosen layers and heads, every query and key token, with token
labels and the prompt's spans, from one forward pass (its figure is `interp.report.attention_pattern`).

    p = judge.attention_pattern(query, answer_1, answer_2, layers=[20, 21], heads=[0, 3])
    p.pattern            # Float[Tensor, "layer head query key"], rows sum to 1
    p.tokens, p.spans    # token labels; "query", "a", "b" -> (start, end), end exclusive
    p.figure()           # plotly (a Judge's pattern, `interp.api.patterns`): a heatmap per (layer, head)

The pattern comes from the backend's own forward pass (`Backend.forward`'s `on_pattern` hook, every query
row), so it is the pattern a run's span attention reduces, under whatever intervention is open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from jaxtyping import Float
from torch import Tensor

from interp.core.backends.protocol import Backend, Edits, left_pad
from interp.core.spans import TokenizedPrompt, token_labels
from interp.errors import InterpError

EditsBuilder = Callable[..., Edits | None]


@dataclass(frozen=True, eq=False)
class AttentionPattern:
    """Post-softmax attention of one prompt: `pattern[i, j, q, k]` is layer `layers[i]`, head `heads[j]`,
    from query token q to key token k (`tokens[q]`, `tokens[k]`)."""

    pattern: Float[Tensor, "layer head query key"]
    layers: tuple[int, ...]
    heads: tuple[int, ...]
    tokens: list[str]
    spans: dict[str, tuple[int, int]]
    prompt: TokenizedPrompt

    def of(self, layer: int, head: int) -> Float[Tensor, "query key"]:
        """The [query, key] pattern of one (layer, head) by its model numbers."""
        if layer not in self.layers or head not in self.heads:
            raise InterpError(
                f"layer {layer}, head {head} is not in this pattern (layers {list(self.layers)}, heads "
                f"{list(self.heads)})"
            )
        return self.pattern[self.layers.index(layer), self.heads.index(head)]


def _is_int(value) -> bool:
    """A layer or head number: an int (numpy's too), never a bool."""
    import numbers

    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def chosen(values: Sequence[int] | int | None, count: int, what: str) -> tuple[int, ...]:
    """The layer (or head) numbers asked for: all of them for None, one int, or a list (tuple, range) of ints;
    each in 0..count-1. Any other type (a float, a string, a bool) is one `InterpError` naming the argument."""
    expected = f"{what}s= takes a {what} number (int), a list of them, or None for all {count}"
    if values is None:
        picked: tuple = tuple(range(count))
    elif _is_int(values):
        picked = (values,)
    elif isinstance(values, (list, tuple, range)) or (
        hasattr(values, "__iter__")
        and hasattr(values, "__len__")
        and not isinstance(values, (str, bytes, dict, set, frozenset))
    ):
        picked = tuple(values)
    else:
        raise InterpError(f"{expected}, not {type(values).__name__} {values!r}")
    if not picked:
        raise InterpError(f"no {what} asked for; pass at least one, or leave {what}s out for all {count}")
    wrong = [v for v in picked if not _is_int(v)]
    if wrong:
        raise InterpError(f"{expected}, not a list holding {type(wrong[0]).__name__} {wrong[0]!r}")
    bad = [v for v in picked if not 0 <= v < count]
    if bad:
        raise InterpError(f"{what} {bad[0]!r} is out of range: this model has {count} {what}s (0..{count - 1})")
    return tuple(dict.fromkeys(int(v) for v in picked))


def attention_pattern(
    backend: Backend,
    prompt: TokenizedPrompt,
    *,
    layers: Sequence[int] | int | None = None,
    heads: Sequence[int] | int | None = None,
    edits: Edits | EditsBuilder | None = None,
) -> AttentionPattern:
    """The full attention pattern of `prompt` at the chosen layers and heads (default: all), from one forward
    pass of `backend` under `edits` (an `Edits`, or a builder `edits(batch, offsets, prompts)` of one)."""
    model = backend.model
    layers = chosen(layers, model.n_layers, "layer")
    heads = chosen(heads, model.n_heads, "head")
    batch, offsets = left_pad([list(prompt.input_ids)], model.tokenizer.pad_token_id)
    if callable(edits):
        edits = edits(batch, offsets, [prompt])
    kept: dict[int, Tensor] = {}

    def keep(layer: int, pattern: Tensor) -> None:  # every query row (a plain hook asks the backend for all)
        if layer in layers:
            kept[layer] = pattern[0, list(heads)].detach().float().cpu().clone()

    backend.forward(batch, edits=edits, on_pattern=keep)
    missing = [layer for layer in layers if layer not in kept]
    if missing:
        raise InterpError(f"the {backend.name} backend gave no attention pattern for layer {missing[0]}")
    tokens = token_labels(model.tokenizer, prompt.input_ids)
    return AttentionPattern(
        torch.stack([kept[layer] for layer in layers]), layers, heads, tokens, dict(prompt.spans), prompt
    )
