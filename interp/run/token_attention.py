"""One judgment of a run judged again with one head's full pattern kept: the run's code path (`judge_batch`
with the run's readout), its span masses and that head's attention over every prompt token."""

from __future__ import annotations

from torch import Tensor

from interp.core.attention import Readout
from interp.core.backends import Backend
from interp.core.judge import Judgment, judge_batch
from interp.core.spans import TokenizedPrompt


class _CaptureHead:
    """Wraps a backend so one head's full pattern is kept while `judge_batch` runs its own reducer."""

    def __init__(self, backend: Backend, layer: int, head: int):
        self.backend, self.layer, self.head = backend, layer, head
        self.model, self.name = backend.model, backend.name
        self.shares_prefix = False  # one prompt: there is no prefix to share
        self.pattern: Tensor | None = None

    def forward(self, batch, *, on_pattern=None, **kwargs):
        def hook(layer: int, pattern: Tensor) -> None:
            if layer == self.layer:
                self.pattern = pattern[0, self.head].detach().float().cpu().clone()
            if on_pattern is not None:
                on_pattern(layer, pattern)

        return self.backend.forward(batch, on_pattern=hook, **kwargs)


def head_pass(
    backend: Backend, prompt: TokenizedPrompt, labels, layer: int, head: int, *, readout: Readout
) -> tuple[Judgment, Tensor]:
    """Judge `prompt` as a run does and keep one head's weights per prompt token: its row at the final position
    ("final" readout) or its mean over every position after both responses ("after")."""
    capture = _CaptureHead(backend, layer, head)
    (judgment,) = judge_batch(capture, [prompt], labels, readout=readout)
    pattern = capture.pattern
    if readout == "final":
        return judgment, pattern[-1]
    first = max(prompt.spans["a"][1], prompt.spans["b"][1])
    return judgment, pattern[first:].mean(0)
