"""Files that survive a SIGKILL: atomic whole-file writes and append-only JSONL with torn-tail repair."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Iterable


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


def read_jsonl(path: Path) -> list[dict]:
    """Complete records of an append-only JSONL file; a torn last line (killed mid-write) is cut off."""
    path = Path(path)
    if not path.exists():
        return []
    raw = path.read_bytes()
    end = raw.rfind(b"\n") + 1
    if end < len(raw):
        with path.open("r+b") as handle:
            handle.truncate(end)
    return [json.loads(line) for line in raw[:end].decode().splitlines() if line.strip()]


def append_jsonl(path: Path, records: Iterable[dict]) -> None:
    """Append whole lines in one write and fsync, so a batch is either on disk or not."""
    payload = "".join(json.dumps(record, allow_nan=False) + "\n" for record in records)
    if not payload:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(payload)
        handle.flush()
        os.fsync(handle.fileno())
