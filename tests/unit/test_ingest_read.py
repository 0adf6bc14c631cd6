"""Reading a local raw file for parsing: its bytes, sha256, size and modification time in one
open; a file over the size limit is not read."""

import hashlib
import os
from dataclasses import replace
from pathlib import Path

from pipelines.config.settings import Limits, Settings
from pipelines.ingest.parse import _read_to_end, read_raw
from pipelines.sources.base import RawFile


def _file(tmp_path: Path, data: bytes) -> RawFile:
    path = tmp_path / "dialogues" / "a.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    return RawFile.under("dialogue", tmp_path, path)


def test_a_local_file_is_read_with_its_size_and_modification_time(tmp_path):
    file = _file(tmp_path, b'{"a": 1}\n')
    data, fingerprint, size, mtime_ns = read_raw(file, Settings(raw_root=tmp_path))
    assert data == b'{"a": 1}\n'
    assert fingerprint == hashlib.sha256(b'{"a": 1}\n').hexdigest()
    assert (size, mtime_ns) == (9, 1_700_000_000_123_456_789)


def test_a_local_file_over_the_size_limit_is_not_read(tmp_path):
    file = _file(tmp_path, b"x" * 20)
    settings = replace(Settings(raw_root=tmp_path), limits=Limits(max_file_bytes=10))
    data, fingerprint, size, mtime_ns = read_raw(file, settings)
    assert data is None
    assert fingerprint == "size:20:mtime:1700000000123456789"
    assert (size, mtime_ns) == (20, 1_700_000_000_123_456_789)


def test_an_empty_local_file_is_read_as_no_bytes(tmp_path):
    data, fingerprint, size, _ = read_raw(_file(tmp_path, b""), Settings(raw_root=tmp_path))
    assert (data, fingerprint, size) == (b"", hashlib.sha256(b"").hexdigest(), 0)


def test_a_listed_file_is_read_by_its_path_string(tmp_path):
    _file(tmp_path, b'{"a": 1}\n')
    listed = RawFile("dialogue", None, "dialogues/a.jsonl", root=str(tmp_path))
    assert read_raw(listed, Settings(raw_root=tmp_path))[0] == b'{"a": 1}\n'


def test_a_file_grown_since_its_stat_is_read_to_its_end(tmp_path):
    # Stat said 3 bytes; the file holds more by the time it is read (still being written).
    data = bytes(range(256)) * 10_000  # 2.5 MB: more than one read's worth
    path = _file(tmp_path, data).path
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _read_to_end(fd, 3) == data
    finally:
        os.close(fd)
