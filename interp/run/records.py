"""The judgment record: one line of `judgments.jsonl` per (judge, item, order), written and read as one type.

`p_a`, `p_b` (and `p_t` with ties) are the judge's label probabilities renormalised over the labels, with
`model_a`'s response in slot A and `model_b`'s in slot B; order "ab" puts the run's models[0] in slot A.
`rationale` is what the judge wrote before its verdict (judge-side chain of thought, `cot`; absent without).
`label_mass`, `top_is_label`, `top_token`, `n_tokens` and `spans` (token indices, end exclusive) come from
the toolkit's own judging; records from elsewhere (`interp metrics run` on another system's judgments) may
leave them out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

from interp.core.judge import Judgment
from interp.errors import InterpError
from interp.results.codec import append_records, read_record_lines

ORDERS = ("ab", "ba")  # "ab": models[0]'s response in slot A; "ba": swapped
REQUIRED_FIELDS = ("judge", "item_id", "order", "model_a", "model_b", "p_a", "p_b")


@dataclass(frozen=True)
class JudgmentRecord:
    """One line of judgments.jsonl: a judge's verdict on one pair in one order, with its label probabilities."""

    judge: str
    item_id: str
    order: str
    model_a: str
    model_b: str
    p_a: float
    p_b: float
    p_t: float | None = None
    task: str | None = None
    label_mass: float | None = None
    top_is_label: bool | None = None
    top_token: int | None = None
    n_tokens: int | None = None
    spans: dict[str, list[int]] | None = None
    rationale: str | None = None  # what the judge wrote before its verdict (`cot`); None without

    @property
    def key(self) -> str:
        """The judgment's key: its item and order."""
        return f"{self.item_id}|{self.order}"

    @classmethod
    def of(
        cls,
        judge: str,
        item_id: str,
        task: str,
        order: str,
        author_a: str,
        author_b: str,
        judgment: Judgment,
        rationale: str | None = None,
    ) -> "JudgmentRecord":
        """The record of one judgment of the pair (author A, author B) of an item, in `order`."""
        return cls(
            judge=judge,
            item_id=item_id,
            task=task,
            order=order,
            model_a=author_a,
            model_b=author_b,
            p_a=judgment.probs["A"],
            p_b=judgment.probs["B"],
            p_t=judgment.probs.get("T"),
            label_mass=judgment.label_mass,
            top_is_label=judgment.top_is_label,
            top_token=judgment.top_token,
            n_tokens=judgment.n_tokens,
            spans={k: list(v) for k, v in judgment.spans.items()},
            rationale=rationale,
        )

    def to_dict(self) -> dict:
        """The record as its JSONL line holds it."""
        data = asdict(self)
        return {key: data[key] for key in _WRITE_ORDER if key in data and (key != "rationale" or data[key] is not None)}


_WRITE_ORDER = (
    "judge",
    "item_id",
    "task",
    "order",
    "model_a",
    "model_b",
    "p_a",
    "p_b",
    "p_t",
    "label_mass",
    "top_is_label",
    "top_token",
    "n_tokens",
    "spans",
    "rationale",
)


def append_judgments(path: Path, records: Iterable[JudgmentRecord]) -> None:
    """Append records to a judgments file, one line each."""
    append_records(path, [record.to_dict() for record in records])


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _record(obj: dict, where: str) -> JudgmentRecord:
    missing = [name for name in REQUIRED_FIELDS if name not in obj]
    if missing:
        raise InterpError(f"{where}: missing field {', '.join(repr(m) for m in missing)}")
    for name in ("judge", "model_a", "model_b"):
        if not isinstance(obj[name], str) or not obj[name]:
            raise InterpError(f"{where}: field {name!r} must be a non-empty string")
    if obj["model_a"] == obj["model_b"]:
        raise InterpError(f"{where}: model_a and model_b are both {obj['model_a']!r}")
    if obj["order"] not in ORDERS:
        raise InterpError(f"{where}: field 'order' must be 'ab' or 'ba', got {obj['order']!r}")
    item = obj["item_id"]
    if not isinstance(item, (str, int)) or isinstance(item, bool):
        raise InterpError(f"{where}: field 'item_id' must be a string or integer")
    for name in ("p_a", "p_b", "p_t"):
        value = obj.get(name)
        if value is None and name == "p_t":
            continue
        if not _is_number(value) or not (0.0 <= value <= 1.0 + 1e-6):
            raise InterpError(f"{where}: field {name!r} must be a probability in [0, 1], got {value!r}")
    values = {name: obj[name] for name in _WRITE_ORDER if name in obj}  # other fields are not ours to read
    values["item_id"] = str(item)
    for name in ("p_a", "p_b", "p_t"):
        if values.get(name) is not None:
            values[name] = float(values[name])
    return JudgmentRecord(**values)


def read_judgments(path: Path, *, judge: str | None = None, required: bool = False) -> list[JudgmentRecord]:
    """Validated records of a `judgments.jsonl` (a torn last line is skipped, the file is never modified).

    Errors name the file and line: a missing or bad field, a duplicate (judge, item, slot authors). With
    `judge`, only that judge's records; `required`: a missing or empty file is an error too.
    """
    path = Path(path)
    if required and not path.is_file():
        raise InterpError(f"{path}: no such judgments file")
    out: list[JudgmentRecord] = []
    seen: dict[tuple, int] = {}
    for number, obj in read_record_lines(path, "judgments"):
        where = f"{path}, line {number}"
        record = _record(obj, where)
        key = (record.judge, record.item_id, record.model_a, record.model_b)
        if key in seen:
            raise InterpError(f"{where}: duplicate judgment (first on line {seen[key]})")
        seen[key] = number
        if judge is None or record.judge == judge:
            out.append(record)
    if required and not out:
        raise InterpError(f"{path}: no judgment records (empty file)")
    return out
