"""The base of every result model: pydantic, unknown keys kept (a newer writer's key survives an older reader),
and read by name as well as by attribute (`result["judges"]`, `record.get("p_value")`) for callers that
treat a result as the mapping it is written as."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict


class ResultModel(BaseModel):
    """A result read from or written to disk; `to_json` is what the codec writes."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=False, validate_assignment=False)

    def __getitem__(self, key: str) -> Any:
        if key in type(self).model_fields or key in (self.model_extra or {}):
            return getattr(self, key)
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def __contains__(self, key: object) -> bool:
        """Whether the result holds `key`: given by its writer or read from its file (a field left at its
        default is not held)."""
        return isinstance(key, str) and (key in self.model_fields_set or key in (self.model_extra or {}))

    def get(self, key: str, default: Any = None) -> Any:
        """The value of `key`, or `default` where the result has no such key or holds None for it."""
        value = getattr(self, key) if key in self else None
        return default if value is None else value

    def keys(self) -> list[str]:
        return [*type(self).model_fields, *(self.model_extra or {})]

    def to_json(self) -> dict:
        """The result as JSON data: what was set (by the writer or read from the file), nothing invented. A
        number a writer computed with numpy is written as the plain number it is; NaN stays NaN, as `json` writes
        it."""
        return json.loads(json.dumps(self.model_dump(mode="python", exclude_unset=True), default=plain_json))


def plain_json(value: Any) -> Any:
    """A numpy scalar or array, or a path, as the JSON value it stands for (`json.dumps(..., default=plain_json)`)."""
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")
