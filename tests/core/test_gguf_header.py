"""The header reader against gguf's own writer and reader, on a small file with the value types models use."""

from __future__ import annotations

import pytest

from interp.core.gguf_header import gguf_architecture, gguf_metadata, gguf_shape
from interp.errors import InterpError
from tests.helpers.models import write_gguf


def _write(path, *, architecture: str | None = "llama", tokens_first: bool = True):
    def metadata(writer):
        if architecture is None:  # a file with no general.architecture: drop what the writer adds by itself
            writer.kv_data[0].pop("general.architecture")
        if tokens_first:  # arrays of strings and of numbers before the keys asked for: they must be skipped right
            writer.add_token_list([f"tok{i}" for i in range(300)] + ["émoji 🙂"])
            writer.add_token_scores([float(i) / 7 for i in range(301)])
            writer.add_array("test.nested", [[1, 2], [3]])
        writer.add_block_count(30)
        writer.add_head_count(9)
        writer.add_float32("test.scale", 0.25)
        writer.add_bool("test.flag", True)
        writer.add_uint64("test.big", 2**40)
        writer.add_string("test.text", "héllo")

    return write_gguf(path, architecture or "llama", metadata)


def test_every_value_equals_gguf_readers(tmp_path):
    from gguf import GGUFReader

    path = _write(tmp_path / "m.gguf")
    ours = gguf_metadata(path)
    reader = GGUFReader(str(path))
    assert set(ours) == {key for key in reader.fields if not key.startswith("GGUF.")}
    assert ours.pop("test.nested") == [[1, 2], [3]]  # gguf's reader flattens nested arrays: [1, 2, 3]
    for key, value in ours.items():
        expected = reader.fields[key].contents()
        if isinstance(value, float):
            assert value == pytest.approx(expected)
        elif isinstance(value, list) and value and isinstance(value[0], float):
            assert value == pytest.approx(expected)
        else:
            assert value == expected, key
    assert gguf_shape(path) == ("llama", 30, 9)
    assert gguf_metadata(path, ["llama.block_count", "absent.key"]) == {"llama.block_count": 30}


def test_a_file_that_is_not_gguf_is_one_line(tmp_path):
    text = tmp_path / "notes.gguf"
    text.write_text("not a model\n")
    with pytest.raises(InterpError, match="no GGUF magic"):
        gguf_architecture(text)
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(_write(tmp_path / "full.gguf").read_bytes()[:40])
    with pytest.raises(InterpError, match="ends early"):
        gguf_metadata(truncated)
    with pytest.raises(InterpError, match="no general.architecture"):
        gguf_architecture(_write(tmp_path / "noarch.gguf", architecture=None, tokens_first=False))


def test_one_parse_per_file_shares_a_reader_inside_the_block_only(tmp_path):
    import gguf

    from interp.core.gguf_header import one_parse_per_file

    path, other = _write(tmp_path / "m.gguf"), _write(tmp_path / "n.gguf", tokens_first=False)
    original = gguf.GGUFReader
    with one_parse_per_file():
        first = gguf.GGUFReader(str(path))
        assert gguf.GGUFReader(path) is first  # the same file, however spelled
        assert gguf.GGUFReader(other) is not first
        assert first.fields["llama.block_count"].contents() == 30
    assert gguf.GGUFReader is original
    with pytest.raises(RuntimeError), one_parse_per_file():
        raise RuntimeError("inside")
    assert gguf.GGUFReader is original  # put back on an error too
    assert gguf.GGUFReader(path) is not first


def test_the_shared_reader_reads_what_ggufs_reader_reads(tmp_path):
    import gguf
    import numpy as np

    from interp.core.gguf_header import plain_array_reader

    path = _write(tmp_path / "m.gguf")
    expected, got = gguf.GGUFReader(path), plain_array_reader(gguf.GGUFReader)(path)
    assert type(got.data) is np.ndarray and isinstance(expected.data, np.memmap)
    assert list(got.fields) == list(expected.fields)
    for key, field in expected.fields.items():
        mine = got.fields[key]
        assert (mine.types, mine.data, mine.offset) == (field.types, field.data, field.offset), key
        assert len(mine.parts) == len(field.parts) and all(
            np.array_equal(a, b) for a, b in zip(mine.parts, field.parts, strict=False)
        )
    assert [(t.name, t.tensor_type, t.data_offset) for t in got.tensors] == [
        (t.name, t.tensor_type, t.data_offset) for t in expected.tensors
    ]
    assert all(np.array_equal(a.data, b.data) for a, b in zip(got.tensors, expected.tensors, strict=False))
