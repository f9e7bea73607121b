"""A loaded, read-only index version: what the service searches.

Everything is read into memory at open, so the directory may be pruned afterwards without
disturbing a reader, and a reader never sees a mixture of two versions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from index_build.layout import live_version_dir
from index_build.version import (
    COLLECTIONS,
    FileRecord,
    read_chunks,
    read_files,
    read_manifest,
    read_sparse,
    verify_checksums,
)
from pipeline.errors import IndexCorruptError, InvalidRequestError, NotFoundError
from pipeline.sparse import SparseSet, rank_sparse
from pipeline.types import Chunk


class UnknownCollectionError(InvalidRequestError):
    """A search named a collection the index does not have."""


@dataclass(frozen=True, slots=True)
class CollectionIndex:
    """One collection's chunks, embeddings, BM25 indexes and vector index."""

    name: str
    chunks: tuple[Chunk, ...]
    embeddings: np.ndarray
    bm25: Any
    bm25_fields: Any
    vectors: Any
    rows: dict[str, int]
    sparse: SparseSet

    def bm25_scores(self, terms: Sequence[tuple[str, float]], field_weight: float = 0.0) -> np.ndarray:
        """BM25 score of every chunk for weighted, already-analysed terms.

        ``Σ_t w_t · bm25(t)`` over the combined title+heading+text index, plus ``field_weight``
        times the same sum over the title+heading index.
        """
        scores = np.zeros(len(self.chunks), dtype=np.float32)
        indexes = [(self.bm25, 1.0)] + ([(self.bm25_fields, field_weight)] if field_weight else [])
        by_weight: dict[float, list[str]] = {}
        for term, weight in terms:
            by_weight.setdefault(weight, []).append(term)
        for index, index_weight in indexes:
            for weight, group in by_weight.items():
                ids = index.get_tokens_ids(group)
                if ids:
                    scores += (index_weight * weight) * index.get_scores_from_ids(ids)
        return scores

    def bm25_top(
        self, terms: Sequence[tuple[str, float]], k: int, field_weight: float = 0.0
    ) -> list[tuple[Chunk, float]]:
        """The ``k`` best chunks with a positive BM25 score."""
        if not terms or not self.chunks:
            return []
        return _top_k(self.chunks, self.bm25_scores(terms, field_weight), k)

    def dense_top(self, vector: np.ndarray, k: int) -> list[tuple[Chunk, float]]:
        """The ``k`` nearest chunks by cosine similarity (HNSW search)."""
        if not self.chunks:
            return []
        matches = self.vectors.search(vector, min(k, len(self.chunks)))
        return [(self.chunks[int(key)], 1.0 - float(d)) for key, d in zip(matches.keys, matches.distances)]

    def sparse_top(self, vector: np.ndarray, k: int) -> list[tuple[Chunk, float]]:
        """The ``k`` sparse-information chunks closest to the query (see :mod:`pipeline.sparse`)."""
        return [
            (self.chunks[row], score) for row, score in rank_sparse(vector, self.embeddings, self.sparse, k)
        ]


def _top_k(chunks: tuple[Chunk, ...], scores: np.ndarray, k: int) -> list[tuple[Chunk, float]]:
    k = min(k, len(scores))
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(chunks[i], float(scores[i])) for i in top if scores[i] > 0]


@dataclass(frozen=True, slots=True)
class IndexSnapshot:
    """All collections of one index version, plus its manifest and file records."""

    version_id: str
    path: Path
    manifest: dict[str, Any]
    files: tuple[FileRecord, ...]
    collections: dict[str, CollectionIndex]

    def select(self, names: Iterable[str] | None) -> list[CollectionIndex]:
        """The named collections (all when ``names`` is None), or :class:`UnknownCollectionError`."""
        if names is None:
            return list(self.collections.values())
        chosen = []
        for name in names:
            if name not in self.collections:
                known = ", ".join(sorted(self.collections)) or "none"
                raise UnknownCollectionError(f"unknown collection {name!r} (known: {known})")
            chosen.append(self.collections[name])
        return chosen

    def bm25_top(
        self,
        terms: Sequence[tuple[str, float]],
        k: int,
        collections: Iterable[str] | None = None,
        field_weight: float = 0.0,
    ) -> list[tuple[Chunk, float]]:
        """BM25 candidates from each chosen collection, merged by score."""
        hits = [h for c in self.select(collections) for h in c.bm25_top(terms, k, field_weight)]
        return sorted(hits, key=lambda h: -h[1])[:k]

    def dense_top(self, vector: np.ndarray, k: int, collections: Iterable[str] | None = None):
        """Dense candidates from each chosen collection, merged by cosine similarity."""
        hits = [h for c in self.select(collections) for h in c.dense_top(vector, k)]
        return sorted(hits, key=lambda h: -h[1])[:k]

    def sparse_top(self, vector: np.ndarray, k: int, collections: Iterable[str] | None = None):
        """Sparse-information candidates from each chosen collection, merged by similarity."""
        hits = [h for c in self.select(collections) for h in c.sparse_top(vector, k)]
        return sorted(hits, key=lambda h: -h[1])[:k]

    def bm25_scores_of(
        self, chunks: Sequence[Chunk], terms: Sequence[tuple[str, float]], field_weight: float = 0.0
    ) -> list[float]:
        """The BM25 score of each given chunk (for chunks the BM25 branch did not return)."""
        by_collection: dict[str, np.ndarray] = {}
        scores = []
        for chunk in chunks:
            collection = self.collections[chunk.collection]
            if chunk.collection not in by_collection:
                by_collection[chunk.collection] = collection.bm25_scores(terms, field_weight)
            scores.append(float(by_collection[chunk.collection][collection.rows[chunk.chunk_id]]))
        return scores

    def embedding(self, chunk: Chunk) -> np.ndarray:
        """The stored embedding of ``chunk`` (for MMR and other diversity-aware selection)."""
        collection = self.collections[chunk.collection]
        return collection.embeddings[collection.rows[chunk.chunk_id]]

    def chunk(self, chunk_id: str) -> Chunk:
        """The passage with id ``chunk_id``, or :class:`NotFoundError`."""
        for collection in self.collections.values():
            if chunk_id in collection.rows:
                return collection.chunks[collection.rows[chunk_id]]
        raise NotFoundError(f"no passage with id {chunk_id!r} in index version {self.version_id}")

    def document(self, doc_id: str) -> tuple[FileRecord, list[Chunk]]:
        """A document's file record and its passages in reading order, or :class:`NotFoundError`."""
        for record in self.files:
            if record.doc_id == doc_id:
                chunks = self.collections[record.collection].chunks
                return record, [c for c in chunks if c.doc_id == doc_id]
        raise NotFoundError(f"no document with id {doc_id!r} in index version {self.version_id}")


def open_live(index_dir: Path, *, verify: bool = True) -> IndexSnapshot:
    """Load the live version of ``index_dir``."""
    return open_version(live_version_dir(index_dir), verify=verify)


def open_version(version_dir: Path, *, verify: bool = True) -> IndexSnapshot:
    """Load one version directory into memory, checking its manifest and checksums."""
    import bm25s
    from usearch.index import Index

    manifest = read_manifest(version_dir)
    if verify:
        verify_checksums(version_dir, manifest)
    collections = {}
    for name in manifest["counts"]["collections"]:
        directory = version_dir / COLLECTIONS / name
        vectors = Index.restore(str(directory / "vectors.usearch"), view=False)
        if vectors is None:
            raise IndexCorruptError(f"{directory / 'vectors.usearch'} is not a usearch index")
        chunks = tuple(read_chunks(directory))
        collections[name] = CollectionIndex(
            name=name,
            chunks=chunks,
            embeddings=np.load(directory / "embeddings.npy"),
            bm25=bm25s.BM25.load(str(directory / "bm25"), mmap=False, show_progress=False),
            bm25_fields=bm25s.BM25.load(str(directory / "bm25_fields"), mmap=False, show_progress=False),
            vectors=vectors,
            rows={c.chunk_id: i for i, c in enumerate(chunks)},
            sparse=read_sparse(directory),
        )
    return IndexSnapshot(
        version_id=manifest["version"],
        path=version_dir,
        manifest=manifest,
        files=tuple(read_files(version_dir)),
        collections=collections,
    )
