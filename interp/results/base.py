"""The base of every result model: pydantic, read by attribute, and strict: a key the model does not declare
is refused (`extra="forbid"`), so a writer's typo or a file of another kind fails where it is read. A key an
older file holds under another name is renamed by the codec's migrations (`interp.results.codec`)."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict


class ResultModel(BaseModel):
    """A result read from or written to disk; `to_json` is what the codec writes."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=False, validate_assignment=False)

    def to_json(self) -> dict:
        """The result as JSON data: what was set (by the writer or read from the file), nothing invented. A
        number a writer computed with numpy is written as the plain number it is; NaN stays NaN, as `json` writes
        it."""
        return json.loads(json.dumps(self.model_dump(mode="python", exclude_unset=True), default=plain_json))


def plain_json(value: Any) -> Any:
    """A numpy scalar or array, a path, or a result record a writer built as an object (its `to_json`), as the JSON
    value it stands for (`json.dumps(..., default=plain_json)`)."""
    if isinstance(value, ResultModel):
        return value.to_json()
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")
