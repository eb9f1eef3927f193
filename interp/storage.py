"""Files that survive a SIGKILL: atomic whole-file writes and append-only JSONL.

A process killed while appending can leave a torn last line (no trailing newline). Readers skip it and
never modify the file; only the writer cuts it off (`repair_jsonl_tail`) before it appends again. A bad
line anywhere else is corruption and an `InterpError` naming the file and line.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from interp.errors import InterpError


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would make run outputs private to one user
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def write_jsonl_atomic(path: Path, records: Iterable[dict]) -> None:
    """A whole JSONL file at once (temp file + rename)."""
    atomic_write_text(path, "".join(json.dumps(record) + "\n" for record in records))


def jsonl_objects(
    lines: Iterable[str], *, where: Callable[[int], str], hint: str = "", objects_only: bool = True
) -> Iterator[tuple[int, Any]]:
    """(line number, record) of every non-blank line. A line that is not valid JSON (or, with `objects_only`,
    not a JSON object) is one `InterpError` line: `where(line number)`, what is wrong, then `hint`."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InterpError(f"{where(number)}: not valid JSON ({exc.msg}){hint}") from None
        if objects_only and not isinstance(record, dict):
            raise InterpError(f"{where(number)}: not a JSON object (got {type(record).__name__}){hint}")
        yield number, record


def read_jsonl_lines(path: Path) -> list[tuple[int, dict]]:
    """(line number, object) of every complete line; a torn last line is skipped, the file left as it is."""
    path = Path(path)
    if not path.exists():
        return []
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InterpError(f"{path}: cannot read ({exc.strerror})") from None
    complete = raw[: raw.rfind(b"\n") + 1]
    try:
        text = complete.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = complete[: exc.start].count(b"\n") + 1
        raise InterpError(f"{path}:{line}: not UTF-8 text; the file is corrupt (restore it or delete the run)") from None
    return list(jsonl_objects(text.splitlines(), where=lambda n: f"{path}:{n}", hint="; the file is corrupt (restore it or delete the run)"))


def read_jsonl(path: Path) -> list[dict]:
    """Complete records of an append-only JSONL file (see `read_jsonl_lines`)."""
    return [record for _, record in read_jsonl_lines(path)]


def repair_jsonl_tail(path: Path) -> None:
    """Cut off a torn last line left by a killed writer. Only the holder of the run's write lock calls this."""
    path = Path(path)
    if not path.exists():
        return
    if path.stat().st_size == 0:
        return
    with path.open("r+b") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return
        handle.seek(0)
        raw = handle.read()
        handle.truncate(raw.rfind(b"\n") + 1)


def append_jsonl(path: Path, records: Iterable[dict]) -> None:
    """Append whole lines in one write and fsync, so a batch is either on disk or not."""
    payload = "".join(json.dumps(record, allow_nan=False) + "\n" for record in records)
    if not payload:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    repair_jsonl_tail(path)
    with path.open("a") as handle:
        handle.write(payload)
        handle.flush()
        os.fsync(handle.fileno())


def write_csv(path: Path, rows: Sequence[dict], fields: Sequence[str]) -> None:
    """A CSV table with a header row, written atomically."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(fields))
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, buffer.getvalue())
