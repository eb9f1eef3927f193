"""What a `Judge` returns: one `Verdict` per pair (probabilities, spans, span attention, P(own)) and `Verdicts`
for a batch, with tensors and a pandas frame over the pairs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch
from jaxtyping import Float
from torch import Tensor

from interp.api.arguments import Authors
from interp.core.attention import per_token_mean
from interp.core.judge import Judgment, judgment_record
from interp.core.models import own_slot
from interp.core.spans import TokenizedPrompt
from interp.errors import InterpError
from interp.hooks.nodes import NodeIntervention
from interp.hooks.spec import AttentionIntervention


@dataclass(frozen=True, eq=False)  # tensors have no single truth value: verdicts compare by identity
class Verdict:
    """One judged pair: the verdict's label probabilities and the judge's attention to each response.

    Attributes:
        p_a: P(response A is better), renormalised over the labels A and B (`p_a + p_b == 1`).
        p_b: P(response B is better).
        label_mass: probability on the label tokens before renormalising: how much the judge answered
            with a label at all.
        top_is_label: whether the single most likely next token is a label.
        spans: token spans of the prompt, `"query"`, `"a"`, `"b"` -> `(start, end)`, end exclusive.
        mass: attention mass from the query set (the final position by default) onto each response span,
            dims `[layer, head, span]`, span 0 = response A, 1 = response B: the summed weights on the
            span's tokens, averaged over the query positions.
        mean: per-token mean, `mass / span_tokens` (NaN for an empty span), dims `[layer, head, span]`.
        span_tokens: the number of tokens of each response span, dims `[span]`.
        prompt: the tokenized prompt (input ids, text and spans).
        task: the judging task ("helpfulness", "truthfulness" or "translation").
        authors: (author of A, author of B), when given.
        own: the model whose answers are the judge's own (what target "self" means).
        interventions: the intervention specs active while the pair was judged.
    """

    p_a: float
    p_b: float
    label_mass: float
    top_is_label: bool
    spans: dict[str, tuple[int, int]]
    mass: Float[Tensor, "layer head span"]
    mean: Float[Tensor, "layer head span"]
    span_tokens: Float[Tensor, " span"]
    prompt: TokenizedPrompt = field(repr=False)
    task: str = "helpfulness"
    authors: Authors | None = None
    own: str | None = None
    interventions: tuple[AttentionIntervention | NodeIntervention, ...] = ()
    judgment: Judgment = field(default=None, repr=False)  # type: ignore[assignment]

    @property
    def own_slot(self) -> str | None:
        """ "a" or "b": the slot holding the judge's own response (None when authors do not say)."""
        return None if self.authors is None else own_slot(*self.authors, self.own)

    @property
    def p_own(self) -> float | None:
        """P(the judge's own response is better), when one slot is its own."""
        slot = self.own_slot
        return None if slot is None else (self.p_a if slot == "a" else self.p_b)

    def own_minus_other(self, stat: str = "mean") -> Float[Tensor, "layer head"]:
        """Attention to the judge's own response minus attention to the other, per (layer, head).

        Args:
            stat: "mean" (per token) or "mass".

        Raises:
            InterpError: when no slot is the judge's own (pass `authors=` naming its own model once).
        """
        slot = self.own_slot
        if slot is None:
            raise InterpError(f"no response is the judge's own ({self.own!r}); pass authors= naming it in one slot")
        values = {"mean": self.mean, "mass": self.mass}[stat]
        own, other = (0, 1) if slot == "a" else (1, 0)
        return values[..., own] - values[..., other]

    def to_dict(self) -> dict:
        """The JSON record `interp inspect` prints (probabilities, spans, per-layer attention), plus task and
        authors."""
        return judgment_record(self.judgment) | {
            "task": self.task,
            "authors": list(self.authors) if self.authors else None,
        }


@dataclass(frozen=True, eq=False)
class Verdicts(Sequence[Verdict]):
    """Verdicts of a batch of pairs, in input order; index it for one `Verdict`.

    The stacked views put the pair first: `p_a` is `[pair]`, `mass` and `mean` are `[pair, layer, head, span]`.
    """

    verdicts: tuple[Verdict, ...]

    def __len__(self) -> int:
        return len(self.verdicts)

    def __getitem__(self, index):
        return self.verdicts[index]

    @property
    def p_a(self) -> Float[Tensor, " pair"]:
        """P(A is better) per pair."""
        return torch.tensor([v.p_a for v in self.verdicts], dtype=torch.float64)

    @property
    def p_b(self) -> Float[Tensor, " pair"]:
        """P(B is better) per pair."""
        return torch.tensor([v.p_b for v in self.verdicts], dtype=torch.float64)

    @property
    def label_mass(self) -> Float[Tensor, " pair"]:
        """Probability on the label tokens before renormalising, per pair."""
        return torch.tensor([v.label_mass for v in self.verdicts], dtype=torch.float64)

    @property
    def mass(self) -> Float[Tensor, "pair layer head span"]:
        """Attention mass onto each response span, per pair."""
        return torch.stack([v.mass for v in self.verdicts])

    @property
    def mean(self) -> Float[Tensor, "pair layer head span"]:
        """Per-token mean attention onto each response span, per pair."""
        return torch.stack([v.mean for v in self.verdicts])

    def frame(self):
        """A pandas DataFrame, one row per pair: probabilities, label mass, span lengths, authors, P(own)."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "task": v.task,
                    "author_a": v.authors[0] if v.authors else None,
                    "author_b": v.authors[1] if v.authors else None,
                    "p_a": v.p_a,
                    "p_b": v.p_b,
                    "p_own": v.p_own,
                    "label_mass": v.label_mass,
                    "top_is_label": v.top_is_label,
                    "tokens_a": int(v.span_tokens[0]),
                    "tokens_b": int(v.span_tokens[1]),
                }
                for v in self.verdicts
            ]
        )


def verdict_of(
    judgment: Judgment, prompt: TokenizedPrompt, task: str, authors: Authors | None, own: str, interventions: tuple
) -> Verdict:
    """The `Verdict` of one judgment: P(A), P(B), the span attention (summed and per token), the prompt, and the
    authors, own model and interventions it was judged under."""
    mean = per_token_mean(judgment.mass[None], judgment.counts[None])[0]
    return Verdict(
        p_a=judgment.probs["A"],
        p_b=judgment.probs["B"],
        label_mass=judgment.label_mass,
        top_is_label=judgment.top_is_label,
        spans=dict(judgment.spans),
        mass=judgment.mass,
        mean=mean,
        span_tokens=judgment.counts,
        prompt=prompt,
        task=task,
        authors=tuple(authors) if authors is not None else None,
        own=own,
        interventions=interventions,
        judgment=judgment,
    )
