"""A local model as a gold judge: both orders, P(first better) = mean of its two readings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from interp.core.backends import Backend
from interp.core.judge import Judgment, judge_batch, label_tokens
from interp.core.spans import tokenized_judge_prompt
from interp.run.gold.protocol import Pair


@dataclass
class ModelJudge:
    """A gold judge that is a local model (its `backend`), judging `batch_size` pairs per pass."""

    backend: Backend
    name: str
    batch_size: int = 8

    def p_slot_a(self, pairs: Sequence[Pair]) -> list[float]:
        """P(slot A wins) of each pair, from the model's label probabilities."""
        model = self.backend.model
        labels = label_tokens(model.tokenizer)
        prompts, names = [], []
        for pair in pairs:
            for order, (a, b) in (
                ("ab", (pair.response_a, pair.response_b)),
                ("ba", (pair.response_b, pair.response_a)),
            ):
                prompts.append(tokenized_judge_prompt(model, pair.item.task, pair.item.query, a, b))
                names.append(f"item {pair.item.id!r} (order {order})")
        results: list[Judgment] = []
        for start in range(0, len(prompts), self.batch_size):
            chunk = slice(start, start + self.batch_size)
            results += judge_batch(
                self.backend, prompts[chunk], labels, readout=None, judge=f"{self.name} (gold)", names=names[chunk]
            )
        return [0.5 * (results[2 * i].probs["A"] + results[2 * i + 1].probs["B"]) for i in range(len(pairs))]
