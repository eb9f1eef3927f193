"""interp: why do LLM judges prefer their own answers? Measure (DBG), look inside (attention), intervene."""

from interp.models import LoadedModel, load_model

__all__ = ["LoadedModel", "load_model"]
