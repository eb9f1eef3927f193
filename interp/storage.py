"""Files that survive a SIGKILL (atomic whole-file writes, append-only JSONL) and where the toolkit may write.

A process killed while appending can leave a torn last line (no trailing newline). Readers skip it and
never modify the file; only the writer cuts it off (`repair_jsonl_tail`) before it appends again. A bad
line anywhere else is corruption and an `InterpError` naming the file and line.

Where: every output folder a command is given (`--out`) passes `check_output_dir` before anything is loaded
or written, and every user-given name that becomes a file or folder name passes `path_label`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import tempfile
import unicodedata
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from interp.errors import InterpError


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a whole file at once: a temporary file beside it, renamed over it."""
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
    """`atomic_write_bytes` of UTF-8 text."""
    atomic_write_bytes(path, text.encode())


def write_jsonl_atomic(path: Path, records: Iterable[dict]) -> None:
    """A whole JSONL file at once (temp file + rename)."""
    atomic_write_text(path, "".join(json.dumps(record) + "\n" for record in records))


class _DuplicateKey(ValueError):
    """A JSON object names one key twice (json keeps the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def jsonl_objects(
    lines: Iterable[str], *, where: Callable[[int], str], hint: str = "", objects_only: bool = True
) -> Iterator[tuple[int, Any]]:
    """(line number, record) of every non-blank line. A line that is not valid JSON (or, with `objects_only`,
    not a JSON object) is one `InterpError` line: `where(line number)`, what is wrong, then `hint`."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as exc:
            raise InterpError(f"{where(number)}: not valid JSON ({exc.msg}){hint}") from None
        except _DuplicateKey as exc:
            raise InterpError(f"{where(number)}: the key {exc.args[0]!r} appears twice in one object{hint}") from None
        if objects_only and not isinstance(record, dict):
            raise InterpError(f"{where(number)}: not a JSON object (got {type(record).__name__}){hint}")
        yield number, record


MAX_INPUT_BYTES = 8 << 30  # a file read as input (tables, data sets): larger is refused before it is read
MAX_LINE_BYTES = 256 << 20  # one line of it (a gzip that inflates to one endless line stops here)


def check_input_file(path: Path, what: str = "input", max_bytes: int = MAX_INPUT_BYTES) -> None:
    """A file the user named as input is a regular file of at most `max_bytes`: `/dev/zero`, a FIFO, a terminal or
    a directory (which would be read until memory runs out, or never end) is one line, before any byte is read."""
    import stat

    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InterpError(f"{path}: no such file of {what}") from None
    except OSError as exc:
        raise InterpError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise InterpError(f"{path}: is a directory, not a file of {what}")
    if not stat.S_ISREG(info.st_mode):
        raise InterpError(f"{path}: not a regular file (a device, pipe or socket); give a file of {what}")
    if info.st_size > max_bytes:
        raise InterpError(
            f"{path}: {info.st_size / 2**30:.1f} GiB, more than the {max_bytes / 2**30:.0f} GiB a file of {what} "
            "may hold; split it"
        )


def bounded_lines(handle, path: Path, max_line: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The lines of an open text handle, each read with a bound: a line longer than `max_line` characters is one
    line of error, not a read until memory runs out."""
    while line := handle.readline(max_line + 1):
        if len(line) > max_line:
            raise InterpError(f"{path}: a line longer than {max_line >> 20} MiB; is it the file you meant?")
        yield line


def read_user_text(path: Path, what: str, *, encoding: str = "utf-8") -> str:
    """A whole text file the user named; missing or unreadable is one `InterpError` line naming `what`."""
    try:
        return Path(path).read_text(encoding=encoding)
    except FileNotFoundError:
        raise InterpError(f"{path}: no such file of {what}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InterpError(f"{path}: cannot read {what} ({exc})") from None


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
        raise InterpError(
            f"{path}:{line}: not UTF-8 text; the file is corrupt (restore it or delete the run)"
        ) from None
    return list(
        jsonl_objects(
            text.splitlines(),
            where=lambda n: f"{path}:{n}",
            hint="; the file is corrupt (restore it or delete the run)",
        )
    )


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


# ---- names that become paths -------------------------------------------------------------------------

LABEL_BYTES = 80  # a label's longest UTF-8 encoding; callers add suffixes (a key, an extension)


def path_label(name: str) -> str:
    """The file or folder name for a user-given name (a sweep's, an intervention's, a judge's): a visible,
    readable label that stays inside the folder it is put in.

    Letters and digits of any script, "_", "." and "-" stay; every other run of characters (path separators,
    NUL, control characters, spaces) becomes one "_". A leading run of dots and underscores that holds a dot
    is dropped (no hidden name, no "." or ".."), and a label longer than `LABEL_BYTES` bytes is cut and ends
    with a hash of the whole name. A label, never a key: two names may share a label.
    """
    text = unicodedata.normalize("NFC", str(name))
    label = re.sub("/+", "_", "".join(c if c.isalnum() or c in "_.-" else "/" for c in text))
    label = re.sub(r"^[._]*\.[._]*", "", label)
    if label.strip("_") == "":
        label = "unnamed"
    if len(label.encode()) > LABEL_BYTES:
        suffix = "-" + hashlib.sha256(str(name).encode("utf-8", "surrogatepass")).hexdigest()[:8]
        while len(label.encode()) + len(suffix) > LABEL_BYTES:
            label = label[:-1]
        label += suffix
    return label


def keyed_label(name: str) -> str:
    """A file or folder name that is a key: `path_label(name)` plus a short hash of the exact name, so two names
    that share a label (`tq/x` and `tq_x`) never share a file. For one judge's stored files and figures."""
    return f"{path_label(name)}-{hashlib.sha256(str(name).encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def figure_label(name: str) -> str:
    """`keyed_label` for a figure's file name: when `path_label` cut a long name it already ends with the same
    hash of the whole name, so the hash is written once (a stored file keeps `keyed_label`, as older runs hold
    it)."""
    keyed = keyed_label(name)
    tail = keyed[-9:]
    return keyed[:-9] if keyed[:-9].endswith(tail) else keyed


# ---- output folders --------------------------------------------------------------------------------

OUTPUT_MARKER = ".interp-output"  # written into every output folder the toolkit makes or takes over
PLACEHOLDERS = frozenset({".keep", ".gitkeep", ".DS_Store", "Thumbs.db"})  # a folder holding only these is empty
OVERWRITE_FLAG = "--overwrite"


def check_writable_dir(path: Path) -> None:
    """A directory that exists and is writable, or can be created: else a one-line error (nothing is created)."""
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise InterpError(f"{path} is a file, not a directory; pass a directory for --out")
        if not os.access(path, os.W_OK | os.X_OK):
            raise InterpError(f"{path} is not writable; pass a directory you can write to")
        return
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise InterpError(f"{path} lies under {parent}, which is a file; pass a directory for --out")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InterpError(f"cannot create {path}: {parent} is not writable")


def is_output_dir(path: Path, markers: Sequence[str] = ()) -> bool:
    """Whether the folder is one the toolkit wrote: it holds the marker file or one of `markers` (paths
    relative to it that only the toolkit writes there, e.g. a run's config.toml)."""
    return any((Path(path) / name).exists() for name in (OUTPUT_MARKER, *markers))


def check_output_dir(
    path: Path, *, markers: Sequence[str] = (), overwrite: bool = False, replace: bool = False
) -> None:
    """The one check of an output folder (`--out`), before anything is loaded or written; one line if refused.

    Refused always: the filesystem root, the home directory or a folder above it, a file, a folder that cannot
    be written. A folder that holds files (placeholders such as .gitkeep aside) and is not the toolkit's
    (`is_output_dir`) is refused unless `overwrite` (`--overwrite`): its files of the same names would be
    replaced. `replace`: the command replaces the whole folder (a trained adapter), so a folder not the
    toolkit's is refused even with `overwrite`, and the toolkit's needs `overwrite`.
    """
    path = Path(path)
    resolved = path.expanduser().resolve()
    home = Path.home().expanduser().resolve()
    if resolved == Path(resolved.anchor) or resolved == home or resolved in home.parents:
        where = (
            "the filesystem root"
            if resolved == Path(resolved.anchor)
            else "your home directory"
            if resolved == home
            else f"{resolved}, above your home directory"
        )
        raise InterpError(f"refusing to write into {where} ({path}); pass a folder of its own for --out")
    check_writable_dir(path)
    if not path.is_dir():
        return
    entries = sorted(p.name for p in path.iterdir() if p.name not in PLACEHOLDERS)
    if not entries:
        return
    ours = is_output_dir(path, markers)
    if not ours and (replace or not overwrite):
        hint = (
            "pass another --out"
            if replace
            else f"pass another --out, or {OVERWRITE_FLAG} to write into it anyway (files of the same names are "
            "replaced)"
        )
        raise InterpError(
            f"{path} holds files interp did not write "
            f"({', '.join(entries[:3])}{', ...' if len(entries) > 3 else ''}); {hint}"
        )
    if ours and replace and not overwrite:
        raise InterpError(f"{path} exists; pass {OVERWRITE_FLAG} to replace it, or another --out")


def claim_output_dir(path: Path, markers: Sequence[str] = ()) -> None:
    """Create the output folder (checked by `check_output_dir`) and mark it as the toolkit's, once."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if not is_output_dir(path, markers):
        atomic_write_bytes(path / OUTPUT_MARKER, b"")
