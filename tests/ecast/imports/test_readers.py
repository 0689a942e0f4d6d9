"""Reading an upload: a gzip bomb is refused with flat memory, a gzipped file within the limit reads whole."""

from __future__ import annotations

import gzip
import tracemalloc

import pytest

from ecast.imports.errors import ImportFailed
from ecast.imports.readers import read_bytes

MiB = 1 << 20


def test_a_gzip_bomb_is_refused_without_holding_the_limits_worth_of_bytes(tmp_path):
    bomb = tmp_path / "bomb.tsv.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as gz:
        for _ in range(96):
            gz.write(b"\0" * MiB)
    assert bomb.stat().st_size < MiB  # ~100 KB that inflate to 96 MiB
    tracemalloc.start()
    try:
        with pytest.raises(ImportFailed) as refused:
            read_bytes(bomb, max_bytes=64 * MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "decompressed content exceeds the upload limit of 67,108,864 bytes" in str(refused.value.errors)
    assert peak < 8 * MiB, f"peak {peak / MiB:.1f} MiB while refusing"


def test_a_gzipped_file_within_the_limit_reads_whole(tmp_path):
    path = tmp_path / "p.tsv.gz"
    text = "".join(f"p{i}\tpassage {i}\n" for i in range(100_000)).encode()
    with gzip.open(path, "wb") as gz:
        gz.write(text)
    assert read_bytes(path, max_bytes=len(text)) == text
    with pytest.raises(ImportFailed):
        read_bytes(path, max_bytes=len(text) - 1)
