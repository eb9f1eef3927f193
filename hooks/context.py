"""`dampen` and `emphasise`: an attention intervention as a context manager, for notebooks (baukit's `Trace`
style), applied through handles: on a backend, a standing edit (`interp.core.backends.EditHooks`); on a plain HF
model, a pre-hook and a hook around each call (`biased_calls`). No `forward` is replaced.

    with dampen(backend, target=(s, e), alpha=0.0, layers=[3]):
        logits = backend.forward(batch)

The block's forward passes run with the spec compiled by `interp.hooks.compile` (the same `compile_bias` as every
run: no second code path); the backend or model is restored on exit, also on an exception.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Literal, Sequence

import torch
from torch import Tensor

from interp.core.backends import Batch, Edits, edit_hooks, is_backend
from interp.core.backends.span_rows import ALL_ROWS, span_rows_attention
from interp.core.models import LoadedModel, own_model
from interp.core.spans import TokenizedPrompt
from interp.errors import InterpError
from interp.hooks.compile import model_dtype, spec_bias_builder
from interp.hooks.spec import AttentionIntervention, Target


def _offsets(attention_mask: Tensor) -> list[int]:
    """Left padding of each row: the number of leading zeros of its attention mask."""
    return (attention_mask.cumsum(-1) == 0).sum(-1).tolist()


def _shape(obj) -> tuple[torch.nn.Module, int, int, str | None]:
    """(hf model, n_layers, n_heads, name) of a backend, a LoadedModel or a plain HF model."""
    loaded = obj.model if is_backend(obj) else obj
    if isinstance(loaded, LoadedModel):
        return loaded.hf_model, loaded.n_layers, loaded.n_heads, loaded.name
    if isinstance(obj, torch.nn.Module) and hasattr(obj, "config"):
        text = obj.config.get_text_config()
        return obj, text.num_hidden_layers, text.num_attention_heads, None
    raise TypeError(
        f"an attention intervention needs a backend, a LoadedModel or a Hugging Face model, not {type(obj).__name__}"
    )


def _own(judge: str | None) -> str | None:
    """The judge's own model (an organism's is its base); None when the model has no name (a plain HF model)."""
    return own_model(judge) if judge is not None else None


def _spec(target, alpha, layers, heads, queries, seed, emphasis: bool) -> AttentionIntervention:
    if isinstance(target, AttentionIntervention):
        return target
    return AttentionIntervention(
        target=target,
        alpha=alpha,
        layers=tuple(layers) if layers is not None else None,
        heads=heads if heads is None or isinstance(heads, dict) else tuple(heads),
        queries=queries,
        seed=seed,
        emphasis=emphasis,
    )


@contextlib.contextmanager
def dampen(
    backend_or_model,
    target: Target | AttentionIntervention,
    alpha: float = 0.0,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | dict[int, Sequence[int]] | None = None,
    queries: Literal["outside", "final"] = "outside",
    *,
    prompts: Sequence[TokenizedPrompt] | None = None,
    judge_model: str | None = None,
    authors: Sequence[tuple[str, str]] | None = None,
    seed: int = 0,
) -> Iterator[AttentionIntervention]:
    """Lower attention to `target` (post-softmax weights times `alpha` in [0, 1], 0 masks) for the duration of
    the block; always restores (also on an exception). Raising it is `emphasise`.

        with dampen(backend, target=(s, e), alpha=0.0, layers=[3]):
            logits = backend.forward(batch)

    `target` is (start, end) in unpadded token indices of every row, a target name ("a", "b", "self",
    "other", "random": pass `prompts=` for the batch, and `authors=` for self/other; "self" is the response
    of `own_model(judge_model)`, judge_model defaulting to the model's name, so an organism's is its base
    model's), or a ready `AttentionIntervention` (then alpha/layers/heads/queries/seed are taken from it).
    Works on a backend (its `forward` adds the compiled bias to any `score_bias` passed), a `LoadedModel` or a
    plain HF model (calling the model, e.g. `hf_model(input_ids=..., attention_mask=...)`, runs it through the
    biased attention function; a transformer_lens bridge runs on its own copy of the modules: pass its
    backend). Offsets are read from the batch's (left-padded) attention mask. The same `compile_bias` as
    `bias_builder`: no second code path. Yields the spec.
    """
    spec = _spec(target, alpha, layers, heads, queries, seed, emphasis=False)
    if spec.emphasis:
        raise InterpError(
            f"dampen lowers attention (alpha in [0, 1]); this spec raises it (emphasis, alpha = {spec.alpha:g}): "
            "use emphasise(...)"
        )
    with applied(backend_or_model, spec, prompts=prompts, judge_model=judge_model, authors=authors):
        yield spec


@contextlib.contextmanager
def emphasise(
    backend_or_model,
    target: Target | AttentionIntervention = "other",
    alpha: float = 4.0,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | dict[int, Sequence[int]] | None = None,
    queries: Literal["outside", "final"] = "outside",
    *,
    prompts: Sequence[TokenizedPrompt] | None = None,
    judge_model: str | None = None,
    authors: Sequence[tuple[str, str]] | None = None,
    seed: int = 0,
) -> Iterator[AttentionIntervention]:
    """Raise attention to `target` (post-softmax weights times `alpha` > 1, renormalised: PASTA-style
    emphasis, `interp.hooks.emphasis`) for the duration of the block; the arguments are `dampen`'s."""
    spec = _spec(target, alpha, layers, heads, queries, seed, emphasis=True)
    if not spec.emphasis or spec.alpha <= 1:
        raise InterpError(
            f"emphasise raises attention (alpha > 1); alpha = {spec.alpha:g} lowers or keeps it: use dampen(...)"
        )
    with applied(backend_or_model, spec, prompts=prompts, judge_model=judge_model, authors=authors):
        yield spec


@contextlib.contextmanager
def applied(
    backend_or_model,
    spec: AttentionIntervention,
    *,
    prompts: Sequence[TokenizedPrompt] | None = None,
    judge_model: str | None = None,
    authors: Sequence[tuple[str, str]] | None = None,
) -> Iterator[AttentionIntervention]:
    """Any attention spec, lowering or raising, applied for the block: what `dampen` and `emphasise` run, and
    what `Judge.applying` runs for the spec it is given."""
    hf_model, n_layers, n_heads, name = _shape(backend_or_model)
    build = spec_bias_builder(
        spec,
        n_layers,
        n_heads,
        model_dtype(hf_model),
        judge_model=_own(judge_model if judge_model is not None else name),
        authors=authors,
    )

    if is_backend(backend_or_model):
        handle = edit_hooks(backend_or_model).register(
            lambda batch: Edits(score_bias=build(batch, _offsets(batch.attention_mask), prompts))
        )
    else:
        handle = biased_calls(hf_model, lambda batch: build(batch, _offsets(batch.attention_mask), prompts))
    try:
        yield spec
    finally:
        handle.remove()


class _Handles:
    """Several hook handles removed as one."""

    def __init__(self, *handles) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def biased_calls(hf_model: torch.nn.Module, build) -> _Handles:
    """Hook handles on a plain HF model: each call `hf_model(input_ids=..., attention_mask=...)` runs with the score
    bias `build(Batch)` added before the softmax of every layer, until the handles are removed.

    Why an attention-implementation switch and not a plain forward hook: the bias is added to the scores *before*
    the softmax, inside the attention function, where no module boundary (and so no forward hook) is. The pre-hook
    enters `span_rows_attention` (the toolkit's registered attention function, the one every backend runs, given
    the layer's bias; a plain call keeps eager attention) for the call, and the forward hook (`always_call`: on an
    exception too) leaves it, restoring the model's own attention implementation.
    """
    entered: list[contextlib.ExitStack] = []

    def before(_module, args, kwargs):
        input_ids = kwargs.get("input_ids", args[0] if args else None)
        if input_ids is None:
            raise InterpError("dampen: call the model with input_ids (inputs_embeds has no token positions)")
        mask = kwargs.get("attention_mask")
        if mask is None:
            mask = torch.ones_like(input_ids)
        elif mask.ndim != 2:
            raise InterpError("dampen: pass a 2-D padding attention mask, not a prepared 4-D mask")
        stack = contextlib.ExitStack()
        stack.enter_context(span_rows_attention(hf_model, ALL_ROWS, build(Batch(input_ids, mask)), eager=True))
        entered.append(stack)

    def after(_module, _args, _kwargs, _output):
        if entered:
            entered.pop().close()

    return _Handles(
        hf_model.register_forward_pre_hook(before, with_kwargs=True),
        hf_model.register_forward_hook(after, with_kwargs=True, always_call=True),
    )
