"""The nnsight trace body. nnsight reads a trace's source code, so it lives in a file of its own."""

from __future__ import annotations

from interp.core.backends.layers import edit_layer_output


def _envoy(root, path: str):
    node = root
    for part in path.split("."):
        node = node[int(part)] if part.isdigit() else getattr(node, part)
    return node


def traced_forward(wrapped, batch, on_pattern, attention_paths: list[str], resid_edit=None):
    """Final-position logits (float32, on the model's device) of one traced pass; the batch must already be
    on the device of the model's input embedding."""
    with wrapped.trace(
        {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask},
        position_ids=batch.position_ids,
        use_cache=False,
    ):
        if resid_edit:
            # nnsight serves module outputs in execution order: layer l's attention, then layer l's output.
            for layer, path in enumerate(attention_paths):
                if on_pattern is not None:
                    on_pattern(layer, _envoy(wrapped, path).output[1])
                if layer in resid_edit:
                    block = _envoy(wrapped, path.rsplit(".", 1)[0])
                    block.output = edit_layer_output(resid_edit[layer], block.output)
        elif on_pattern is not None:
            for layer, path in enumerate(attention_paths):
                on_pattern(layer, _envoy(wrapped, path).output[1])
        logits = wrapped.output.logits[:, -1, :].float().save()
    return logits
