"""Raw dataset input, checked before it becomes an `Item`: a file's UTF-8 text and its lines (one sentence a
line), a record's text fields and lists of strings. Each fault is one line that says what is wrong; a
`RecordError` is about one record, and the loader of `interp.data` adds the file and line it came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from interp.errors import InterpError


class RecordError(ValueError):
    """What is wrong with one record; the file loader adds where it is."""


def required_text(record: Mapping[str, Any], key: str) -> str:
    """The record's `key`: a non-empty string, stripped."""
    if key not in record or record[key] is None:
        raise RecordError(f'missing field "{key}"')
    value = record[key]
    if not isinstance(value, str):
        raise RecordError(f'field "{key}" must be a string, not {type(value).__name__}')
    if not value.strip():
        raise RecordError(f'field "{key}" is empty')
    return value.strip()


def optional_text(record: Mapping[str, Any], key: str) -> str | None:
    """`required_text`, or None when the field is absent or null."""
    if record.get(key) is None:
        return None
    return required_text(record, key)


def string_list(record: Mapping[str, Any], key: str, *, as_written: bool = False) -> tuple[str, ...]:
    """A list of non-empty strings, stripped; `as_written`: one string is a list of one, none is stripped."""
    value = [record[key]] if as_written and isinstance(record.get(key), str) else record.get(key)
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(entry, str) and entry.strip() for entry in value):
        raise RecordError(f'field "{key}" must be a list of non-empty strings')
    return tuple(entry if as_written else entry.strip() for entry in value)


def read_text(path: Path) -> str:
    """A dataset file's text (UTF-8, a BOM dropped); a missing, unreadable or non-UTF-8 file is one line."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InterpError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InterpError(f"{path}: is a directory, not a dataset file") from None
    except OSError as exc:
        raise InterpError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InterpError(f"{path}:{line}: not UTF-8 text") from None


def text_lines(path: Path) -> list[str]:
    """A file of one sentence a line, stripped; trailing blank lines dropped, an empty line inside refused."""
    lines = read_text(path).splitlines()
    while lines and not lines[-1].strip():  # trailing blank lines are an editor artefact, not data
        lines.pop()
    for line_number, line in enumerate(lines, 1):
        if not line.strip():
            raise InterpError(f"{path}:{line_number}: empty line (one sentence a line expected)")
    return [line.strip() for line in lines]


def message_line(exc: BaseException) -> str:
    """The first line of an error's message (its type's name when it has none)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
