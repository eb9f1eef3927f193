"""Read named metadata values from a GGUF file's header, stopping as soon as they are found.

`gguf.GGUFReader` parses every field and every tensor's info into numpy views before it answers: on the
packaged models that is ~11 s per file (Gemma's 262k-token vocabulary is one array of strings), and `interp
models` asked it ten times. The metadata keys we need (`general.architecture`, `<arch>.block_count`, ...)
come first in the files llama.cpp's and transformers' writers produce, so a sequential read that skips what
it does not need ends after a few hundred bytes. Layout (GGUF v2/v3, little-endian): magic "GGUF", uint32
version, uint64 tensor count, uint64 key-value count, then key (uint64 length + UTF-8), uint32 value type,
value; an array is uint32 item type, uint64 count, items.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from interp.errors import InterpError

# value type -> struct format of one scalar (GGUF's GGUFValueType numbering)
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class _Reader:
    def __init__(self, stream: BinaryIO, path: Path):
        self.stream, self.path = stream, path

    def take(self, size: int) -> bytes:
        data = self.stream.read(size)
        if len(data) != size:
            raise InterpError(f"{self.path}: cannot read as GGUF (the header ends early); pass a valid .gguf file")
        return data

    def unpack(self, fmt: str):
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        return self.take(self.unpack("Q")).decode("utf-8", errors="replace")

    def value(self, kind: int, keep: bool):
        """The value of type `kind`; skipped (None returned) when not `keep`."""
        if kind in _SCALARS:
            return self.unpack(_SCALARS[kind])
        if kind == _STRING:
            size = self.unpack("Q")
            if not keep:
                self.stream.seek(size, 1)
                return None
            return self.take(size).decode("utf-8", errors="replace")
        if kind == _ARRAY:
            item_kind, count = self.unpack("I"), self.unpack("Q")
            if not keep and item_kind in _SCALARS:
                self.stream.seek(count * struct.calcsize(_SCALARS[item_kind]), 1)
                return None
            items = [self.value(item_kind, keep) for _ in range(count)]
            return items if keep else None
        raise InterpError(f"{self.path}: cannot read as GGUF (unknown value type {kind}); pass a valid .gguf file")


def gguf_metadata(path: str | Path, keys: Iterable[str] | None = None) -> dict:
    """The metadata values of `keys` (all of them when None) that the GGUF file at `path` holds; a key the file
    lacks is absent from the result. Reads no further than the last wanted key. A file that is not GGUF is one
    InterpError line."""
    path = Path(path)
    wanted = None if keys is None else set(keys)
    found: dict = {}
    with path.open("rb") as stream:
        reader = _Reader(stream, path)
        if stream.read(4) != b"GGUF":
            raise InterpError(f"{path}: cannot read as GGUF (no GGUF magic); pass a valid .gguf file")
        version = reader.unpack("I")
        if version not in (2, 3):
            raise InterpError(f"{path}: GGUF version {version} is not supported (2 and 3 are)")
        reader.unpack("Q")  # tensor count
        for _ in range(reader.unpack("Q")):
            key = reader.string()
            keep = wanted is None or key in wanted
            value = reader.value(reader.unpack("I"), keep)
            if keep:
                found[key] = value
                if wanted is not None and wanted <= found.keys():
                    break
    return found


def gguf_architecture(path: str | Path) -> str:
    """`general.architecture` of a GGUF model file; one InterpError line when it is not one."""
    architecture = gguf_metadata(path, ["general.architecture"]).get("general.architecture")
    if not isinstance(architecture, str):
        raise InterpError(f"{path}: not a GGUF model file (no general.architecture field)")
    return architecture


def gguf_shape(path: str | Path) -> tuple[str, int | None, int | None]:
    """(architecture, layers, attention heads) from the header; None for a count the file does not hold."""
    architecture = gguf_architecture(path)
    values = gguf_metadata(path, [f"{architecture}.block_count", f"{architecture}.attention.head_count"])
    return architecture, values.get(f"{architecture}.block_count"), values.get(f"{architecture}.attention.head_count")


@contextlib.contextmanager
def one_parse_per_file() -> Iterator[None]:
    """Within the block, `gguf.GGUFReader(path)` parses each file once and hands the same reader back after.

    transformers' GGUF loader builds a new reader for the config, another for the tokenizer and a third for the
    weights, and each parses the whole header (Gemma-3-270M's: 17 s, most of its 50 s dequantisation). A
    reader memory-maps the file read-only and is not changed by reading, so one serves all three. The module
    attribute is put back on exit, whatever happens inside.

    The reader is also faster (`plain_array_reader`): its header parse slices the mapped file once per value, and on
    a `numpy.memmap` each slice runs Python-level hooks; on a plain array view of the same mapping it does not.
    Gemma-3-270M's header (262,144 token strings): 3.1 s against 10.3 s; the fields and tensors are equal.

    And `gguf.get_tensor_name_map(arch, n_blocks)` builds each map once: transformers' weight loader asks for it
    again for every submodule of the model it walks (397 times for SmolLM2-135M, 7.5 s of building the same
    dictionary; the loader only looks names up in it).
    """
    import gguf

    original, original_map = gguf.GGUFReader, gguf.get_tensor_name_map
    reader_type = plain_array_reader(original)
    readers: dict[tuple[str, str], object] = {}
    maps: dict[tuple, object] = {}

    def shared(path, mode="r"):
        key = (str(Path(path).resolve()), mode)
        if key not in readers:
            readers[key] = reader_type(path, mode)
        return readers[key]

    def name_map(arch, n_blocks):
        if (arch, n_blocks) not in maps:
            maps[arch, n_blocks] = original_map(arch, n_blocks)
        return maps[arch, n_blocks]

    gguf.GGUFReader, gguf.get_tensor_name_map = shared, name_map
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = original, original_map


def plain_array_reader(reader_type: type) -> type:
    """A subclass of gguf's reader whose mapped file is a plain `numpy.ndarray` view (same memory, same values) rather
    than the `numpy.memmap` it opens: slicing a memmap calls its Python `__getitem__` and `__array_finalize__`, which
    the header parse does millions of times for a large vocabulary. Read-only use only (the mapping is the reader's)."""
    import numpy as np

    class PlainArrayReader(reader_type):
        @property
        def data(self):
            return self._plain_data

        @data.setter
        def data(self, value):
            self._plain_data = value.view(np.ndarray) if isinstance(value, np.memmap) else value

    return PlainArrayReader
