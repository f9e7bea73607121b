"""A version's per-row data read on demand: chunk and unit records, embedding rows.

A million chunks held as Python objects take over a gigabyte of a serving process's heap,
yet a search reads a few dozen of them. A :class:`RecordFile` keeps each record's byte
offset (8 bytes a record) and decodes a record when it is asked for, remembering the most
recently used ones; :class:`StoredRows` reads rows of an embedding matrix the same way.
:class:`ChunkRows` finds a chunk's row from its id through sorted 64-bit hashes of the ids,
16 bytes a chunk instead of a dictionary's hundred or so.

The reads are positional reads of an open file (:class:`OpenFile`), not a memory map: the
bytes come from the page cache, which every process serving the version shares, and never
count in a process's own memory. (A memory map would: mapping one page of a cached file
maps its neighbours too, so random reads of a mapped 1.5 GB matrix soon show all of it in
the process's resident set.) The file stays readable after its version is pruned.
"""

from __future__ import annotations

import hashlib
import json
import os
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import IO, Any, TypeVar, overload

import numpy as np

from pipeline.errors import IndexCorruptError
from pipeline.types import Chunk, EvidenceUnit

Record = TypeVar("Record")


def write_records(out: IO[bytes], records: Iterable[Any], encode: Callable[[Any], dict]) -> np.ndarray:
    """Write one JSON line per record; the byte offset of each line, plus the end (``n + 1`` values)."""
    offsets = [0]
    for record in records:
        line = json.dumps(encode(record), ensure_ascii=False).encode() + b"\n"
        out.write(line)
        offsets.append(offsets[-1] + len(line))
    return np.array(offsets, dtype=np.uint64)


class RecordFile(Sequence[Record]):
    """The records of a JSON-lines file as a read-only sequence, decoded on demand.

    Indexing decodes one record (or serves it from a cache of the ``cache_size`` most
    recently used); iterating decodes them in order without filling the cache.
    """

    def __init__(
        self,
        data: bytes | OpenFile,
        offsets: np.ndarray,
        decode: Callable[[dict], Record],
        cache_size: int,
    ) -> None:
        self._read_bytes = data.read if isinstance(data, OpenFile) else lambda at, size: data[at : at + size]
        self._offsets = offsets
        self._decode = decode
        self._cached = lru_cache(maxsize=cache_size)(self._read)

    def _read(self, row: int) -> Record:
        start, stop = int(self._offsets[row]), int(self._offsets[row + 1])
        return self._decode(json.loads(self._read_bytes(start, stop - start)))

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> list[Record]: ...

    def __getitem__(self, index: int | slice) -> Record | list[Record]:
        if isinstance(index, slice):
            return [self._cached(row) for row in range(*index.indices(len(self)))]
        row = int(index)
        if row < 0:
            row += len(self)
        if not 0 <= row < len(self):
            raise IndexError(f"record {index} of {len(self)}")
        return self._cached(row)

    def __iter__(self) -> Iterator[Record]:
        for row in range(len(self)):
            yield self._read(row)


def open_records(
    path: Path, offsets: np.ndarray, decode: Callable[[dict], Record], *, in_memory: bool, cache_size: int
) -> RecordFile[Record]:
    """The records of ``path``, read on demand from the file (or from a copy, ``in_memory``)."""
    file = OpenFile(path)
    data: bytes | OpenFile = file.read(0, file.size) if in_memory else file
    if len(offsets) < 1 or int(offsets[-1]) != file.size:
        raise IndexCorruptError(f"{path} does not match its record offsets")
    return RecordFile(data, offsets, decode, cache_size)


class OpenFile:
    """A file kept open for positional reads (thread-safe); closed when no longer referenced."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self._fd)
        self.size = os.fstat(self._fd).st_size

    def read(self, at: int, size: int) -> bytes:
        """``size`` bytes from offset ``at``; a short read means the file is damaged."""
        data = os.pread(self._fd, size, at)
        if len(data) != size:
            raise IndexCorruptError(f"{self.path} ends before byte {at + size}")
        return data


class StoredRows:
    """The rows of a 2-D ``.npy`` matrix, read on demand: a row, a slice or an array of rows.

    Indexing returns a NumPy array as indexing the matrix would (a copy); iterating yields
    the rows in order, read a block at a time.
    """

    BLOCK = 4096  # rows read at once when iterating
    GAP = 8  # rows this close are read together, with the rows between them

    def __init__(self, path: Path) -> None:
        self._file = OpenFile(path)
        with open(path, "rb") as header:
            version = np.lib.format.read_magic(header)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(header)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(header)
            start = header.tell()
        if fortran or len(shape) != 2 or start + shape[0] * shape[1] * dtype.itemsize != self._file.size:
            raise IndexCorruptError(f"{path} is not a row-major matrix of its stated size")
        self.shape: tuple[int, int] = (int(shape[0]), int(shape[1]))
        self.dtype = dtype
        self._start = start
        self._row_bytes = self.shape[1] * dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def _rows(self, start: int, stop: int) -> np.ndarray:
        data = self._file.read(self._start + start * self._row_bytes, (stop - start) * self._row_bytes)
        return np.frombuffer(data, dtype=self.dtype).reshape(stop - start, self.shape[1])

    def __getitem__(self, index: int | slice | Sequence[int] | np.ndarray) -> np.ndarray:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            return self._rows(start, max(start, stop)) if step == 1 else self[np.arange(start, stop, step)]
        if isinstance(index, (int, np.integer)):
            row = int(index) + (len(self) if index < 0 else 0)
            if not 0 <= row < len(self):
                raise IndexError(f"row {index} of {len(self)}")
            return self._rows(row, row + 1)[0]
        rows = np.asarray(index, dtype=np.int64)
        if len(rows) and (rows.min() < -len(self) or rows.max() >= len(self)):
            raise IndexError(f"rows out of range for {len(self)}")
        rows = np.where(rows < 0, rows + len(self), rows)
        out = np.empty((len(rows), self.shape[1]), dtype=self.dtype)
        if not len(rows):
            return out
        # One read per run of nearby rows (a document's rows are contiguous), not one per row.
        order = np.argsort(rows, kind="stable")
        ordered = rows[order]
        for run in np.split(np.arange(len(rows)), np.flatnonzero(np.diff(ordered) > self.GAP) + 1):
            first, last = int(ordered[run[0]]), int(ordered[run[-1]])
            out[order[run]] = self._rows(first, last + 1)[ordered[run] - first]
        return out

    def __iter__(self) -> Iterator[np.ndarray]:
        for start in range(0, len(self), self.BLOCK):
            yield from self._rows(start, min(start + self.BLOCK, len(self)))


def id_hashes(ids: Iterable[str]) -> np.ndarray:
    """A 64-bit hash of each id (blake2b), as :class:`ChunkRows` stores and looks them up."""
    return np.array(
        [int.from_bytes(hashlib.blake2b(i.encode(), digest_size=8).digest(), "little") for i in ids],
        dtype=np.uint64,
    )


class ChunkRows:
    """Chunk id → row, through the sorted hashes of the ids; a hash collision is resolved by
    reading the candidate rows' ids."""

    def __init__(self, hashes: np.ndarray, rows: np.ndarray, chunks: Sequence[Chunk]) -> None:
        self._hashes = hashes  # sorted
        self._rows = rows  # the row of each hash
        self._chunks = chunks

    def get(self, chunk_id: str) -> int | None:
        """The row of ``chunk_id``, or None when no chunk has that id."""
        wanted = id_hashes([chunk_id])[0]
        at = int(np.searchsorted(self._hashes, wanted))
        while at < len(self._hashes) and self._hashes[at] == wanted:
            row = int(self._rows[at])
            if self._chunks[row].chunk_id == chunk_id:
                return row
            at += 1
        return None

    def __contains__(self, chunk_id: object) -> bool:
        return isinstance(chunk_id, str) and self.get(chunk_id) is not None

    def __getitem__(self, chunk_id: str) -> int:
        row = self.get(chunk_id)
        if row is None:
            raise KeyError(chunk_id)
        return row


def chunk_to_json(chunk: Chunk) -> dict[str, Any]:
    """A chunk as its JSON record."""
    data = asdict(chunk)
    data["heading_path"] = list(chunk.heading_path)
    data["pages"] = list(chunk.pages)
    return data


def chunk_from_json(data: dict[str, Any]) -> Chunk:
    """The chunk of a JSON record."""
    data["heading_path"] = tuple(data["heading_path"])
    data["pages"] = tuple(data["pages"])
    return Chunk(**data)


def unit_from_json(data: dict[str, Any]) -> EvidenceUnit:
    """The evidence unit of a JSON record."""
    return EvidenceUnit(**data)
