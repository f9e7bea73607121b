"""Chunk and unit records are read on demand from the version's files, exactly as written."""

from __future__ import annotations

import numpy as np
import pytest

from index_build.builder import VersionPart, write_version
from index_build.layout import writer_lock
from index_build.options import IngestOptions
from index_build.records import ChunkRows, StoredRows, id_hashes
from index_build.snapshot import open_live
from index_build.version import FileRecord
from pipeline.errors import IndexCorruptError, NotFoundError
from pipeline.types import Chunk, EvidenceUnit


class StubEmbedder:
    name, backend, dimensions, max_tokens = "stub", "numpy", 4, 256


def _document(doc_id: str, texts: list[str]) -> VersionPart:
    source = f"/docs/{doc_id}.md"
    headings = ("Kapitel 1", "Größen")
    chunks = [
        Chunk(f"{doc_id}-{i:04d}", doc_id, "main", source, "Überblick", headings, (1, 2), t, "")
        for i, t in enumerate(texts)
    ]
    units = [
        EvidenceUnit(f"{c.chunk_id}-u0", c.chunk_id, doc_id, "row", f"| Δ {c.text} | 1,234 |", 2, "| a | b |")
        for c in chunks
    ]
    vectors = np.random.default_rng(len(texts)).standard_normal((len(texts), 4)).astype(np.float32)
    record = FileRecord(source, "main", doc_id, "", "Überblick", 2, len(chunks), len(units), f"{doc_id}.md")
    return VersionPart(record, chunks, vectors, units, vectors.copy())


@pytest.fixture
def written(tmp_path):
    parts = [
        _document("first", ["Die Antenne misst 12 m …", "Zweite Zeile — mit Umlauten: äöü"]),
        _document("second", ["日本語のテキスト", "plain ascii", "a third one"]),
    ]
    index = tmp_path / "index"
    with writer_lock(index):
        write_version(index, parts, StubEmbedder(), IngestOptions())  # type: ignore[arg-type]
    return index, parts


@pytest.mark.parametrize("memory_map", [True, False])
def test_every_record_reads_back_exactly_as_written_mapped_or_not(written, memory_map):
    index, parts = written
    snapshot = open_live(index, memory_map=memory_map)
    collection = snapshot.collections["main"]
    chunks = [c for p in parts for c in p.chunks]
    units = [u for p in parts for u in p.units]
    assert list(collection.chunks) == chunks and list(collection.units) == units
    assert [collection.chunks[i] for i in range(len(chunks))] == chunks
    assert collection.chunks[-1] == chunks[-1] and collection.chunks[1:3] == chunks[1:3]
    with pytest.raises(IndexError):
        collection.chunks[len(chunks)]
    for row, chunk in enumerate(chunks):
        assert collection.rows[chunk.chunk_id] == row
        assert snapshot.chunk(chunk.chunk_id) == chunk
    assert snapshot.document("second")[1] == chunks[2:]
    assert list(snapshot.units_of("second")[0]) == units[2:]
    assert collection.doc_chunks == {"first": (0, 2), "second": (2, 5)}
    vectors = np.vstack([p.embeddings for p in parts])
    assert np.array_equal(collection.embeddings[3], vectors[3])
    assert np.array_equal(collection.embeddings[-1], vectors[-1])
    assert np.array_equal(collection.embeddings[1:4], vectors[1:4])
    assert np.array_equal(collection.embeddings[::2], vectors[::2])
    assert np.array_equal(collection.embeddings[[4, 0, 4, 2]], vectors[[4, 0, 4, 2]])
    assert np.array_equal(collection.embeddings[np.array([], np.int64)], vectors[:0])
    assert np.array_equal(np.vstack(list(collection.embeddings)), vectors)
    assert np.array_equal(snapshot.units_of("second")[1], np.vstack([p.unit_embeddings for p in parts])[2:])
    assert "second-0009" not in collection.rows
    with pytest.raises(NotFoundError):
        snapshot.chunk("second-0009")


def test_two_ids_with_one_hash_are_told_apart_by_the_ids_themselves(written):
    _, parts = written
    chunks = list(parts[0].chunks)
    collided = id_hashes([chunks[0].chunk_id])[0]  # row 1 is filed under row 0's hash
    rows = ChunkRows(np.array([collided, collided], np.uint64), np.array([1, 0]), chunks)
    assert rows.get(chunks[0].chunk_id) == 0
    assert rows.get(chunks[1].chunk_id) is None  # its own hash is absent


def test_a_record_file_that_does_not_match_its_offsets_is_refused(written):
    index, _ = written
    records = next((index / "live").resolve().glob("collections/main/chunks.jsonl"))
    records.write_bytes(records.read_bytes()[:-10])
    with pytest.raises(IndexCorruptError, match="record offsets"):
        open_live(index, verify=False, memory_map=True)
    with pytest.raises(IndexCorruptError, match="checksum"):
        open_live(index, memory_map=True)


def test_stored_rows_read_any_rows_of_a_matrix_and_refuse_a_truncated_one(tmp_path):
    matrix = np.arange(300, dtype=np.float32).reshape(100, 3)
    np.save(tmp_path / "m.npy", matrix)
    stored = StoredRows(tmp_path / "m.npy")
    rows = [90, 3, 50, 3, 99, 0, 12]  # far apart, repeated, out of order
    assert stored.shape == (100, 3) and np.array_equal(stored[rows], matrix[rows])
    assert np.array_equal(stored[95:200], matrix[95:]) and np.array_equal(stored[::-7], matrix[::-7])
    with pytest.raises(IndexError):
        stored[[0, 100]]
    (tmp_path / "m.npy").write_bytes((tmp_path / "m.npy").read_bytes()[:-4])
    with pytest.raises(IndexCorruptError, match="stated size"):
        StoredRows(tmp_path / "m.npy")
