"""Reading rows of metric inputs (JSONL, optionally gzip, or CSV), with errors that name the file and line."""

from __future__ import annotations

import gzip
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

from interp.errors import InterpError
from interp.storage import bounded_lines, check_input_file, jsonl_objects


def open_text(path: Path) -> Iterator[str]:
    """The lines of a text file, plain or gzip; an unreadable file, one that is not a regular file (`/dev/zero`),
    a huge one or an endless line is a one-line error (`interp.storage.check_input_file`), before it is read."""
    check_input_file(path, "metric input")
    try:
        with path.open("rb") as probe:
            magic = probe.read(2)
    except OSError as exc:
        raise InterpError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    opener = gzip.open if magic == b"\x1f\x8b" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            yield from bounded_lines(handle, path)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InterpError(f"{path}: cannot read ({exc})") from exc


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for every non-blank line of a JSONL file (plain or gzip).

    Raises :class:`InterpError` naming the file and line for invalid JSON or a non-object line.
    """
    path = Path(path)
    yield from jsonl_objects(open_text(path), where=lambda n: f"{path}, line {n}")


def is_number(x: object) -> bool:
    """Whether `x` is an int or float (a bool is not)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def flag(value: object, name: str, where: str) -> bool:
    """A table's boolean field: true/false, or 0/1; anything else is refused naming the field and row."""
    if isinstance(value, bool):
        return value
    if is_number(value) and value in (0, 1):
        return bool(value)
    raise InterpError(f"{where}: field {name!r} must be true or false, got {value!r}")


def read_table_rows(path: str | Path, required: Sequence[str]) -> list[tuple[int, dict]]:
    """Rows of a CSV (``.csv``, header on line 1) or JSONL file (anything else, gzip allowed) as
    ``(line_number, row)``; every row must have the ``required`` columns with a non-empty value.
    Errors (and an empty file) raise :class:`InterpError` naming the file and line."""
    import csv

    path = Path(path)
    rows: list[tuple[int, dict]] = []
    if path.suffix.lower() == ".csv":
        lines = list(open_text(path))
        reader = csv.DictReader(lines)
        header = reader.fieldnames or []
        absent = [c for c in required if c not in header]
        if header and absent:
            raise InterpError(f"{path}, line 1: missing column {', '.join(repr(c) for c in absent)}")
        for row in reader:
            rows.append((reader.line_num, {k: v for k, v in row.items() if k is not None}))
    else:
        rows = list(iter_jsonl(path))
    if not rows:
        raise InterpError(f"{path}: no rows (empty file)")
    for lineno, row in rows:
        missing = [c for c in required if row.get(c) in (None, "")]
        if missing:
            raise InterpError(f"{path}, line {lineno}: missing field {', '.join(repr(m) for m in missing)}")
    return rows


def number(value: object, name: str, where: str) -> float:
    """A table's numeric field (a number, or a string of one); anything else is refused naming the field and row."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InterpError(f"{where}: field {name!r} must be a number, got {value!r}") from None
    if not is_number(value) or not math.isfinite(value):
        raise InterpError(f"{where}: field {name!r} must be a finite number, got {value!r}")
    return float(value)


def optional_field(row: dict, name: str) -> object | None:
    """A table row's field, None where it is missing or empty."""
    value = row.get(name)
    return None if value in (None, "") else value
