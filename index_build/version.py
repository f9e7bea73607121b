"""Write and read one index version: per-collection BM25 and vector indexes plus a manifest.

Each collection gets its own bm25s index (over the stemmed title, heading path and text)
and its own usearch index (cosine) over the chunk embeddings; the embeddings themselves are
kept too, for diversity-aware selection and for reuse by the next incremental ingest. The
manifest records the format version, the models, the counts and a sha256 of every file;
:func:`load_version` checks them, so a damaged version fails at start, not mid-query.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from index_build.docling_blocks import defined_terms
from index_build.records import chunk_to_json, id_hashes, write_records
from index_build.sources import file_sha256
from pipeline.errors import IndexCorruptError
from pipeline.retrieval.documents import DocumentMeta
from pipeline.retrieval.sparse import DEFAULT_THRESHOLD, SparseSet, find_sparse
from pipeline.text import analyze_many
from pipeline.types import Chunk, EvidenceUnit, passage_text, unit_search_text

# 2: title/heading BM25 index and the sparse-information set; 3: evidence units;
# 4: record offsets, chunk-id hashes and document spans (records read on demand); the vector
# index holds half-precision vectors (measured on SciFact: recall@10 against exact search
# 0.991, 0.992 in single precision; cosine within 1e-5; half the size, built 40 % faster;
# int8 lost recall, 0.954)
FORMAT_VERSION = 4
# What the title/heading BM25 index holds: 2 adds the terms a chunk's definition-list entries
# define (index_build.docling_blocks.defined_terms). An index of another version is written
# again at the next ingest, its chunks and embeddings reused.
SEARCH_FIELDS_VERSION = 2
MANIFEST = "manifest.json"
ROWS = "rows.npz"
FILES = "files.json"
COLLECTIONS = "collections"
# Above this many chunks, each chunk's nearest neighbour (for the sparse set) comes from the
# HNSW index: the exact all-pairs computation takes minutes at 100,000 chunks and hours at 1M.
EXACT_NEIGHBOURS_UP_TO = 20_000

log = logging.getLogger(__name__)


class Bm25Params(BaseModel):
    """BM25 scoring parameters (Lucene variant, as bm25s and Elasticsearch use): the
    ``ingest.bm25`` settings section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    k1: float = Field(1.5, gt=0, description="BM25 term-frequency saturation.")
    b: float = Field(0.75, ge=0, le=1, description="BM25 length normalisation.")
    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = Field(
        "lucene", description="The BM25 variant bm25s scores with."
    )


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One ingested source file: where it came from, its content hash and what it produced.

    ``relative`` is the path below the ingested folder's parent (``manuals/a.pdf``), what remote
    callers see instead of the server's path. ``organisation``, ``names``, ``period`` and
    ``version`` describe the document for document-aware questions (see :mod:`index_build.metadata`).
    """

    path: str
    collection: str
    doc_id: str
    sha256: str
    title: str
    pages: int
    chunks: int
    units: int = 0
    relative: str = ""
    organisation: str = ""
    names: tuple[str, ...] = ()
    period: str = ""
    version: str = ""

    def meta(self) -> DocumentMeta:
        """What a question can name about this document."""
        return DocumentMeta(self.doc_id, self.title, self.organisation, self.names, self.period, self.version)


@dataclass(slots=True)
class CollectionData:
    """A collection's chunks and evidence units with their embeddings (row i embeds item i)."""

    name: str
    chunks: list[Chunk] = field(default_factory=list)
    embeddings: np.ndarray | None = None
    units: list[EvidenceUnit] = field(default_factory=list)
    unit_embeddings: np.ndarray | None = None


def search_fields(chunk: Chunk) -> str:
    """What the fields index holds of ``chunk``: its title, heading path and the terms its
    definition-list entries define."""
    return "\n".join([passage_text(chunk.title, chunk.heading_path, ""), *defined_terms(chunk.text)])


def write_collection(
    directory: Path, data: CollectionData, bm25: Bm25Params, sparse_threshold: float = DEFAULT_THRESHOLD
) -> int:
    """Write chunks, embeddings, BM25 indexes, vector index and sparse set of one collection.

    Returns the number of chunks in the sparse-information set.
    """
    import bm25s

    from index_build.vector_library import usearch_index

    usearch = usearch_index()
    Index, ScalarKind = usearch.Index, usearch.ScalarKind

    directory.mkdir(parents=True)
    with open(directory / "chunks.jsonl", "wb") as out:
        chunk_offsets = write_records(out, data.chunks, chunk_to_json)
    embeddings = data.embeddings if data.embeddings is not None else np.zeros((0, 0), np.float32)
    np.save(directory / "embeddings.npy", embeddings.astype(np.float32, copy=False))

    # "bm25" indexes title, heading path and text together; "bm25_fields" the title, heading
    # path and defined terms alone, so a query can weight matches there against the body
    # (multi-field BM25): a parameter's or an option's own entry names it as a heading does, where
    # a release note or another chapter only mentions it.
    fields = {
        "bm25": [passage_text(c.title, c.heading_path, c.text, c.context) for c in data.chunks],
        "bm25_fields": [search_fields(c) for c in data.chunks],
    }
    for name, texts in fields.items():
        retriever = bm25s.BM25(k1=bm25.k1, b=bm25.b, method=bm25.method)
        # bm25s drops documents without tokens; an empty token keeps one row per chunk.
        retriever.index([terms or [""] for terms in analyze_many(texts)], show_progress=False)
        retriever.save(str(directory / name))

    vectors = Index(ndim=embeddings.shape[1], metric="cos", dtype=ScalarKind.F16)
    vectors.add(np.arange(len(data.chunks), dtype=np.uint64), embeddings)
    vectors.save(str(directory / "vectors.usearch"))

    # Evidence units: searched inside one document at a time, so a BM25 index and the
    # embeddings suffice (no vector index).
    headings = {c.chunk_id: c.heading_path for c in data.chunks}
    with open(directory / "units.jsonl", "wb") as out:
        unit_offsets = write_records(out, data.units, asdict)
    write_rows(directory, data, chunk_offsets, unit_offsets)
    unit_vectors = data.unit_embeddings
    if unit_vectors is None or not len(data.units):
        unit_vectors = np.zeros((0, embeddings.shape[1]), np.float32)
    np.save(directory / "unit_embeddings.npy", unit_vectors.astype(np.float32, copy=False))
    unit_texts = [unit_search_text(u, headings[u.chunk_id]) for u in data.units]
    retriever = bm25s.BM25(k1=bm25.k1, b=bm25.b, method=bm25.method)
    retriever.index([terms or [""] for terms in analyze_many(unit_texts or [""])], show_progress=False)
    retriever.save(str(directory / "bm25_units"))

    nearest = approximate_nearest(vectors, embeddings) if len(embeddings) > EXACT_NEIGHBOURS_UP_TO else None
    sparse = find_sparse([c.text for c in data.chunks], embeddings, sparse_threshold, nearest)
    np.savez(directory / "sparse.npz", rows=sparse.rows, nearest=sparse.nearest, threshold=sparse.threshold)
    return len(sparse.rows)


def approximate_nearest(vectors: Any, embeddings: np.ndarray) -> np.ndarray:
    """Each row's highest cosine similarity to another row, from the HNSW index (approximate)."""
    matches = vectors.search(embeddings, 2)
    keys = np.asarray(matches.keys).reshape(len(embeddings), -1)
    distances = np.asarray(matches.distances, dtype=np.float32).reshape(len(embeddings), -1)
    itself = keys[:, 0] == np.arange(len(embeddings))
    other = np.where(itself, distances[:, 1], distances[:, 0]) if keys.shape[1] > 1 else distances[:, 0]
    return (1.0 - other).astype(np.float32)


def read_sparse(directory: Path) -> SparseSet:
    """A collection's sparse-information set."""
    with np.load(directory / "sparse.npz") as data:
        return SparseSet(rows=data["rows"], nearest=data["nearest"], threshold=float(data["threshold"]))


def write_manifest(
    version_dir: Path,
    *,
    version_id: str,
    embedder: dict[str, Any],
    chunking: dict[str, Any],
    bm25: Bm25Params,
    files: list[FileRecord],
    collections: dict[str, int],
    sparse: dict[str, int],
    units: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Write ``files.json`` and ``manifest.json`` (with a checksum of every other file)."""
    (version_dir / FILES).write_text(json.dumps([asdict(f) for f in files], indent=1, ensure_ascii=False))
    checksums = {
        str(p.relative_to(version_dir)): file_sha256(p)
        for p in sorted(version_dir.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    manifest = {
        "format_version": FORMAT_VERSION,
        "search_fields_version": SEARCH_FIELDS_VERSION,
        "version": version_id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "embedder": embedder,
        "chunking": chunking,
        "bm25": bm25.model_dump(),
        "counts": {
            "documents": len(files),
            "pages": sum(f.pages for f in files),
            "chunks": sum(collections.values()),
            "evidence_units": sum((units or {}).values()),
            "collections": {
                name: {
                    "documents": sum(1 for f in files if f.collection == name),
                    "chunks": count,
                    "evidence_units": (units or {}).get(name, 0),
                    "sparse_chunks": sparse[name],
                }
                for name, count in sorted(collections.items())
            },
        },
        "checksums": checksums,
    }
    (version_dir / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
    return manifest


def read_manifest(version_dir: Path) -> dict[str, Any]:
    """The version's manifest, after checking its format version."""
    try:
        manifest = json.loads((version_dir / MANIFEST).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise IndexCorruptError(f"{version_dir} has no readable manifest: {exc}") from exc
    if manifest.get("format_version") != FORMAT_VERSION:
        raise IndexCorruptError(
            f"{version_dir} has index format {manifest.get('format_version')}, this docfinder reads "
            f"{FORMAT_VERSION}: rebuild it with `docfinder ingest`"
        )
    return manifest


def verify_checksums(version_dir: Path, manifest: dict[str, Any]) -> None:
    """Raise :class:`IndexCorruptError` if any file differs from the manifest."""
    for relative, expected in manifest["checksums"].items():
        path = version_dir / relative
        if not path.is_file() or file_sha256(path) != expected:
            raise IndexCorruptError(f"{path} is missing or damaged (checksum mismatch)")


def read_files(version_dir: Path) -> list[FileRecord]:
    """The file records of a version."""
    return [
        FileRecord(**{**r, "names": tuple(r.get("names", ()))})
        for r in json.loads((version_dir / FILES).read_text())
    ]


def write_rows(
    directory: Path, data: CollectionData, chunk_offsets: np.ndarray, unit_offsets: np.ndarray
) -> None:
    """Write what finds a record without reading the others: the byte offset of every chunk
    and unit line, the sorted hashes of the chunk ids with their rows, each document's span."""
    hashes = id_hashes(c.chunk_id for c in data.chunks)
    order = np.argsort(hashes, kind="stable")
    chunk_spans = spans([c.doc_id for c in data.chunks])
    unit_spans = spans([u.doc_id for u in data.units])
    np.savez(
        directory / ROWS,
        chunk_offsets=chunk_offsets,
        unit_offsets=unit_offsets,
        id_hashes=hashes[order],
        id_rows=order.astype(np.int64),
        chunk_docs=np.array(list(chunk_spans), dtype=str),
        chunk_spans=np.array(list(chunk_spans.values()), dtype=np.int64).reshape(-1, 2),
        unit_docs=np.array(list(unit_spans), dtype=str),
        unit_spans=np.array(list(unit_spans.values()), dtype=np.int64).reshape(-1, 2),
    )


@dataclass(frozen=True, slots=True)
class Rows:
    """A collection's record offsets, chunk-id hashes and document spans (see :func:`write_rows`)."""

    chunk_offsets: np.ndarray
    unit_offsets: np.ndarray
    id_hashes: np.ndarray
    id_rows: np.ndarray
    doc_chunks: dict[str, tuple[int, int]]
    doc_units: dict[str, tuple[int, int]]


def read_rows(collection_dir: Path) -> Rows:
    """A collection's :class:`Rows`."""
    with np.load(collection_dir / ROWS) as data:
        return Rows(
            chunk_offsets=data["chunk_offsets"],
            unit_offsets=data["unit_offsets"],
            id_hashes=data["id_hashes"],
            id_rows=data["id_rows"],
            doc_chunks=_span_dict(data["chunk_docs"], data["chunk_spans"]),
            doc_units=_span_dict(data["unit_docs"], data["unit_spans"]),
        )


def _span_dict(doc_ids: np.ndarray, rows: np.ndarray) -> dict[str, tuple[int, int]]:
    return {str(d): (int(start), int(stop)) for d, (start, stop) in zip(doc_ids, rows)}


def spans(doc_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Each document's (start, stop) rows; a document's rows are written contiguously."""
    found: dict[str, tuple[int, int]] = {}
    for row, doc_id in enumerate(doc_ids):
        start = found[doc_id][0] if doc_id in found else row
        found[doc_id] = (start, row + 1)
    return found
