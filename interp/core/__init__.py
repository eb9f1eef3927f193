"""The core layer: models, prompts, token spans, backends, span attention, and judging one batch."""
