"""The nnsight trace body. nnsight reads a trace's source code, so it lives in a file of its own."""

from __future__ import annotations


def _envoy(root, path: str):
    node = root
    for part in path.split("."):
        node = node[int(part)] if part.isdigit() else getattr(node, part)
    return node


def traced_forward(wrapped, batch, on_pattern, attention_paths: list[str]):
    with wrapped.trace(
        {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask},
        position_ids=batch.position_ids,
        use_cache=False,
    ):
        if on_pattern is not None:
            for layer, path in enumerate(attention_paths):
                on_pattern(layer, _envoy(wrapped, path).output[1])
        logits = wrapped.output.logits[:, -1, :].float().save()
    return logits
