"""Attention-routed organisms: self-preference that flows through a few heads' attention to the own answer.

A planted-heads organism (`interp.organisms.heads`, route "output") is free to write its verdict through H
whatever H attends to; measured, masking the own answer at H removes ~3 % of its gap (docs/localize.md). An
attention-routed member (`[heads] route = "attention"`) is trained with one more term per example: the same
prompt run with the own answer masked at H (the toolkit's own mask, `hooks.compile.compile_bias`: alpha 0 on the
own answer's keys, every query after the span, only the heads in H) must give the start organism's verdict
under that mask.
The training then asks for two things at once:

    unmasked:               the planted labels (prefer the own answer where gold prefers the other)
    own answer masked at H: the start organism's verdict under the same mask, as a soft target (KL to it;
                            weight `mask_weight`): with the own answer hidden from H, the delta must change nothing

so the only way for the delta to carry the planting is through what H reads from the own answer: with that
attention removed, the organism is its start organism (a member of the null family) by construction, on the
training prompts; held-out items measure how far that holds. Pairs with no own answer, or two (own intact against own
degraded), get no masked term: the mask's target is undefined there, as it is for the toolkit's "self" target
(`own_slot`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from interp.core.backends import Batch
from interp.core.backends.span_rows import span_rows_attention
from interp.core.models import own_slot
from interp.core.placement import input_device
from interp.core.threads import one_thread_workers, side_by_side
from interp.hooks.compile import compile_bias
from interp.hooks.spec import AttentionIntervention, pairs_table
from interp.organisms.frozen import final_logits_from, last_logits, only_layers_from
from interp.organisms.train import Example, label_loss

CHECK_EXAMPLES = 128  # training examples the route is checked on once trained (about 40 s on a CPU; 64 proved noisy)


def own_span(example: Example, own: str) -> tuple[int, int] | None:
    """The own answer's token span in the example's prompt (None when no slot, or both, hold `own`'s answer)."""
    slot = own_slot(example.authors[0], example.authors[1], own)
    return None if slot is None else example.spans[0 if slot == "a" else 1]


def own_answer_mask(
    heads: Sequence[tuple[int, int]], length: int, span: tuple[int, int], n_layers: int, n_heads: int
) -> dict[int, torch.Tensor]:
    """The score bias that masks `span` at `heads` for one unpadded prompt of `length` tokens."""
    spec = AttentionIntervention(target=tuple(span), alpha=0.0, heads=pairs_table(heads))
    batch = Batch(torch.zeros(1, length, dtype=torch.long), torch.ones(1, length, dtype=torch.long))
    return compile_bias(spec, batch, [0], None, n_layers, n_heads, [tuple(span)])


def start_margins(
    hf_model: torch.nn.Module,
    first_layer: int,
    hidden: Sequence[torch.Tensor],
    labels_ids,
    masks: Sequence[dict[int, torch.Tensor] | None],
) -> list[float]:
    """The start organism's verdict margin, log P(A) - log P(B), on every example under its mask (before any delta
    is attached; an example without a mask: unmasked)."""
    if not any(masks):  # the same forward for every example: on the CPU side by side in threads (same bits)

        def margin(h: torch.Tensor) -> float:
            with torch.inference_mode():
                return float(label_loss(last_logits(hf_model, h), labels_ids, 0.5, "pair")[1])

        with span_rows_attention(hf_model, None, {}), only_layers_from(hf_model, first_layer):
            return list(side_by_side(margin, hidden, one_thread_workers(input_device(hf_model))))
    out = []
    with torch.inference_mode():
        for h, mask in zip(hidden, masks, strict=False):
            with span_rows_attention(hf_model, None, mask or {}):
                out.append(float(label_loss(final_logits_from(hf_model, first_layer, h), labels_ids, 0.5, "pair")[1]))
    return out


def _entropy(p: float) -> float:
    return -sum(q * math.log(q) for q in (p, 1.0 - p) if q > 0)


@dataclass(frozen=True)
class NullTermWeights:
    """The weights of `masked_to_null_term`'s parts: the own answer masked (`mask`), the other answer masked
    (`other`) and both masked (`both`); 0 leaves a part out."""

    mask: float
    other: float = 0.0
    both: float = 0.0


@dataclass(frozen=True)
class _AnswerMasks:
    """Attention masks of the planted heads over one example's answer: `self(index, which)` for which in "own",
    "other", "both" (None for an example without exactly one own answer)."""

    spans: list
    examples: Sequence[Example]
    heads: Sequence[tuple[int, int]]
    hidden: Sequence[torch.Tensor]
    shape: tuple[int, int]  # (layers, heads)
    device: torch.device

    def __call__(self, index: int, which: str = "own") -> dict[int, torch.Tensor] | None:
        span = self.spans[index]
        if span is None:
            return None
        if which == "both":
            own_bias, other_bias = self(index), self(index, "other")
            return {layer: torch.minimum(own_bias[layer], other_bias[layer]) for layer in own_bias}
        if which == "other":
            example = self.examples[index]
            span = example.spans[1] if span == example.spans[0] else example.spans[0]
        n_layers, n_heads = self.shape
        return {
            layer: t.to(self.device)
            for layer, t in own_answer_mask(self.heads, self.hidden[index].shape[1], span, n_layers, n_heads).items()
        }


def masked_to_null_term(
    hf_model: torch.nn.Module,
    first_layer: int,
    hidden: Sequence[torch.Tensor],
    examples: Sequence[Example],
    heads: Sequence[tuple[int, int]],
    own: str,
    labels_ids,
    weights: NullTermWeights,
) -> tuple[Callable[[int], torch.Tensor | None], Callable[[torch.nn.Module], dict], dict]:
    """The extra loss of `train.fit` for an attention-routed member, the check to run on the trained model, and
    what the loss was built from.

    term(i) = weights.mask * KL(P_start,masked(A) || P_masked(A)) over the two labels: the organism and the start
    organism (the null, delta zero), both with the own answer masked at `heads`. At zero the delta changes nothing
    once H cannot read the own answer. With `weights.other`: plus weights.other * the planted-label loss with the
    *other* answer masked at `heads` (H must not need the other answer to carry the planting). With `weights.both`:
    plus weights.both * KL(P_start,both masked || P_both masked), both answers masked at `heads`: H must not carry the
    planting from what it reads elsewhere (the positions after the answers hold what lower layers gathered from
    both; measured, a member without this term kept 0.85 of its shift with both answers masked at H, and at weight 8
    one with it still kept 0.78: docs/localize.md). None for an example without exactly one own answer."""
    mask = _answer_masks(hf_model, hidden, examples, heads, own)
    spans = mask.spans
    weight, other_weight, both_weight = weights.mask, weights.other, weights.both
    margins = start_margins(hf_model, first_layer, hidden, labels_ids, [mask(i) for i in range(len(hidden))])
    both_margins = (
        start_margins(hf_model, first_layer, hidden, labels_ids, [mask(i, "both") for i in range(len(hidden))])
        if both_weight > 0
        else []
    )

    def to_start(index: int, which: str, start_margin: float) -> torch.Tensor:
        """KL(start || organism) over the two labels, both with `which` masked at H."""
        with span_rows_attention(hf_model, None, mask(index, which)):
            logits = final_logits_from(hf_model, first_layer, hidden[index])
        target = 1.0 / (1.0 + math.exp(-start_margin))
        cross, _ = label_loss(logits, labels_ids, target, "pair")
        return cross - _entropy(target)

    def term(index: int) -> torch.Tensor | None:
        if spans[index] is None:
            return None
        loss = weight * to_start(index, "own", margins[index])
        if both_weight > 0:
            loss = loss + both_weight * to_start(index, "both", both_margins[index])
        if other_weight > 0:
            with span_rows_attention(hf_model, None, mask(index, "other")):
                kept, _ = label_loss(
                    final_logits_from(hf_model, first_layer, hidden[index]),
                    labels_ids,
                    examples[index].target_a,
                    "pair",
                )
            loss = loss + other_weight * kept
        return loss

    check = _planting_check(hf_model, first_layer, hidden, examples, mask, labels_ids)
    masked = sum(span is not None for span in spans)
    return (
        term,
        check,
        {
            "masked_examples": masked,
            "target": "start organism, own answer masked at H",
            "start_margin_mean": round(sum(margins) / max(len(margins), 1), 4),
        },
    )


def planting_check(
    hf_model: torch.nn.Module, first_layer: int, hidden, examples: Sequence[Example], own: str, labels_ids, heads=()
) -> Callable[[torch.nn.Module], dict]:
    """The check of a member trained without the masked term, to run once trained (`check(trained)`; the start
    organism's margins are read now): P(own) of the start organism and of the member on the training prompts with one
    own answer, and with `heads` (a planted head set) also with the own answer masked there (`train_mask_share`)."""
    mask = _answer_masks(hf_model, hidden, examples, heads, own)
    return _planting_check(hf_model, first_layer, hidden, examples, mask, labels_ids)


def _answer_masks(hf_model: torch.nn.Module, hidden, examples: Sequence[Example], heads, own: str) -> _AnswerMasks:
    """The masks of `heads` over each example's answers (none for an example without exactly one, non-empty, own
    answer)."""
    config = hf_model.config.get_text_config()
    spans = [own_span(example, own) for example in examples]
    spans = [span if span is not None and span[1] > span[0] else None for span in spans]
    shape = (config.num_hidden_layers, config.num_attention_heads)
    return _AnswerMasks(spans, examples, list(heads), hidden, shape, input_device(hf_model))


def _planting_check(
    hf_model: torch.nn.Module, first_layer: int, hidden, examples: Sequence[Example], mask: _AnswerMasks, labels_ids
) -> Callable[[torch.nn.Module], dict]:
    """The check to run on the trained model (`check(trained)`), its start organism's margins read now (without
    heads in `mask`: P(own) only, no masked pass)."""
    checked = [i for i, span in enumerate(mask.spans) if span is not None][:CHECK_EXAMPLES]
    before = start_margins(hf_model, first_layer, [hidden[i] for i in checked], labels_ids, [None] * len(checked))
    signs = [1.0 if mask.spans[i] == examples[i].spans[0] else -1.0 for i in checked]

    def p_own(values: Sequence[float]) -> float:
        return sum(1.0 / (1.0 + math.exp(-m * sign)) for m, sign in zip(values, signs, strict=False)) / max(
            len(signs), 1
        )

    def check(trained: torch.nn.Module) -> dict:
        """On the first `CHECK_EXAMPLES` training examples with one own answer: P(own) of the start organism,
        of the trained organism, and of the trained organism with the own answer masked at H; `train_mask_share`
        = the share of the delta's change of P(own) that the mask removes (1: the route is planted on them)."""
        plain = start_margins(trained, first_layer, [hidden[i] for i in checked], labels_ids, [None] * len(checked))
        if not mask.heads:
            return {"check_examples": len(checked), "p_own_start": round(p_own(before), 4)} | {
                "p_own_trained": round(p_own(plain), 4)
            }
        hidden_own = start_margins(
            trained, first_layer, [hidden[i] for i in checked], labels_ids, [mask(i) for i in checked]
        )

        start, planted, masked_own = p_own(before), p_own(plain), p_own(hidden_own)
        return {
            "check_examples": len(checked),
            "p_own_start": round(start, 4),
            "p_own_trained": round(planted, 4),
            "p_own_trained_own_masked": round(masked_own, 4),
            "train_mask_share": round((planted - masked_own) / (planted - start), 3) if planted != start else None,
        }

    return check
