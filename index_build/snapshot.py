"""A loaded, read-only index version: what the service searches.

Everything is opened at once (files mapped or read, never looked up by path later), so the
directory may be pruned afterwards without disturbing a reader, and a reader never sees a
mixture of two versions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from index_build.layout import live_version_dir
from index_build.records import ChunkRows, StoredRows, chunk_from_json, open_records, unit_from_json
from index_build.version import (
    COLLECTIONS,
    FileRecord,
    read_files,
    read_manifest,
    read_rows,
    read_sparse,
    verify_checksums,
)
from pipeline.errors import IndexCorruptError, NotFoundError, UnknownCollectionError
from pipeline.retrieval.documents import DocumentMeta
from pipeline.retrieval.sparse import SparseSet, rank_sparse
from pipeline.text import inverse_document_frequency
from pipeline.types import Chunk, EvidenceUnit

# Decoded records kept per collection: every chunk and unit of a few thousand pages, the
# passages of the recent questions at a million chunks (about 1 KB a chunk, 0.3 KB a unit).
CHUNK_CACHE = 20_000
UNIT_CACHE = 100_000


@dataclass(frozen=True, slots=True)
class CollectionIndex:
    """One collection's chunks, embeddings, BM25 indexes and vector index, and its evidence units.

    A document's chunks, and its units, are contiguous rows: ``doc_chunks`` and ``doc_units``
    give each document's ``(start, stop)``.
    """

    name: str
    chunks: Sequence[Chunk]
    embeddings: np.ndarray
    bm25: Any
    bm25_fields: Any
    vectors: Any
    rows: ChunkRows
    sparse: SparseSet
    units: Sequence[EvidenceUnit] = ()
    unit_embeddings: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    bm25_units: Any = None
    doc_chunks: dict[str, tuple[int, int]] = field(default_factory=dict)
    doc_units: dict[str, tuple[int, int]] = field(default_factory=dict)

    def document_rows(self, documents: Iterable[str]) -> np.ndarray:
        """The chunk rows of the given documents that this collection holds."""
        spans = [self.doc_chunks[d] for d in documents if d in self.doc_chunks]
        return np.concatenate([np.arange(a, b) for a, b in spans]) if spans else np.zeros(0, np.int64)

    def bm25_scores(self, terms: Sequence[tuple[str, float]], field_weight: float) -> np.ndarray:
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
        self,
        terms: Sequence[tuple[str, float]],
        k: int,
        field_weight: float,
        documents: Iterable[str] | None = None,
    ) -> list[tuple[Chunk, float]]:
        """The ``k`` best chunks with a positive BM25 score (of ``documents`` only, when given)."""
        if not terms or not self.chunks:
            return []
        scores = self.bm25_scores(terms, field_weight)
        if documents is None:
            return _top_k(self.chunks, scores, k)
        rows = self.document_rows(documents)
        return [(self.chunks[rows[i]], s) for i, s in _top_rows(scores[rows], k)]

    def dense_top(
        self, vector: np.ndarray, k: int, documents: Iterable[str] | None = None
    ) -> list[tuple[Chunk, float]]:
        """The ``k`` nearest chunks by cosine similarity (HNSW search; exact within ``documents``)."""
        if not self.chunks:
            return []
        if documents is not None:
            rows = self.document_rows(documents)
            similarities = self.embeddings[rows] @ vector if len(rows) else np.zeros(0, np.float32)
            return [(self.chunks[rows[i]], s) for i, s in _top_rows(similarities, k, positive=False)]
        matches = self.vectors.search(vector, min(k, len(self.chunks)))
        return [(self.chunks[int(key)], 1.0 - float(d)) for key, d in zip(matches.keys, matches.distances)]

    def knows(self, terms: Sequence[str]) -> bool:
        """Whether every one of the analysed ``terms`` stands somewhere in this collection's text."""
        return bool(terms) and len(self.bm25.get_tokens_ids(list(terms))) == len(set(terms))

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        """How many chunks of this collection hold each analysed term (0 for a term none holds):
        the length of the term's column in the BM25 score matrix."""
        vocabulary, starts = self.bm25.vocab_dict, self.bm25.scores["indptr"]
        counts = {}
        for term in set(terms):
            column = vocabulary.get(term)
            counts[term] = 0 if column is None else int(starts[column + 1] - starts[column])
        return counts

    def unit_bm25_scores(self, terms: Sequence[str], start: int, stop: int) -> np.ndarray:
        """BM25 score of units ``start:stop`` for already-analysed query terms."""
        if self.bm25_units is None or stop <= start:
            return np.zeros(max(stop - start, 0), np.float32)
        ids = self.bm25_units.get_tokens_ids(list(terms))
        if not ids:
            return np.zeros(stop - start, np.float32)
        return np.asarray(self.bm25_units.get_scores_from_ids(ids)[start:stop], dtype=np.float32)

    def sparse_top(self, vector: np.ndarray, k: int) -> list[tuple[Chunk, float]]:
        """The ``k`` sparse-information chunks closest to the query (see :mod:`pipeline.retrieval.sparse`)."""
        return [
            (self.chunks[row], score) for row, score in rank_sparse(vector, self.embeddings, self.sparse, k)
        ]


def _top_rows(scores: np.ndarray, k: int, positive: bool = True) -> list[tuple[int, float]]:
    """Positions and scores of the ``k`` best entries of ``scores`` (positive ones only, by default)."""
    if not len(scores) or k <= 0:
        return []
    k = min(k, len(scores))
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(i), float(scores[i])) for i in top if not positive or scores[i] > 0]


def _top_k(chunks: Sequence[Chunk], scores: np.ndarray, k: int) -> list[tuple[Chunk, float]]:
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
        collections: Iterable[str] | None,
        field_weight: float,
        documents: Collection[str] | None = None,
    ) -> list[tuple[Chunk, float]]:
        """BM25 candidates from each chosen collection (and document, when given), merged by score."""
        hits = [h for c in self.select(collections) for h in c.bm25_top(terms, k, field_weight, documents)]
        return sorted(hits, key=lambda h: -h[1])[:k]

    def dense_top(
        self,
        vector: np.ndarray,
        k: int,
        collections: Iterable[str] | None = None,
        documents: Collection[str] | None = None,
    ) -> list[tuple[Chunk, float]]:
        """Dense candidates from each chosen collection (and document, when given), merged by similarity."""
        hits = [h for c in self.select(collections) for h in c.dense_top(vector, k, documents)]
        return sorted(hits, key=lambda h: -h[1])[:k]

    def knows(self, terms: Sequence[str], collections: Iterable[str] | None = None) -> bool:
        """Whether one of ``collections`` (all by default) has every one of the analysed ``terms``."""
        return any(collection.knows(terms) for collection in self.select(collections))

    def term_rarity(self, terms: Iterable[str], collections: Iterable[str] | None = None) -> dict[str, float]:
        """Each analysed term's rarity over the chunks of ``collections`` (all by default): its
        inverse document frequency as BM25 weighs it
        (:func:`pipeline.text.inverse_document_frequency`), so that "ifconfig" counts for more
        than "use" wherever words are matched."""
        chosen = self.select(collections)
        wanted = set(terms)
        held = Counter[str]()
        for collection in chosen:
            held.update(collection.document_frequencies(wanted))
        chunks = sum(int(collection.bm25.scores["num_docs"]) for collection in chosen)
        return {term: inverse_document_frequency(held[term], chunks) for term in wanted}

    def documents(self, collections: Iterable[str] | None = None) -> list[DocumentMeta]:
        """The metadata of every document in the chosen collections (all when None)."""
        names = {c.name for c in self.select(collections)}
        return [r.meta() for r in self.files if r.collection in names]

    def units_of(self, doc_id: str) -> tuple[Sequence[EvidenceUnit], np.ndarray]:
        """A document's evidence units in reading order, and their embeddings."""
        collection, start, stop = self._unit_span(doc_id)
        return collection.units[start:stop], collection.unit_embeddings[start:stop]

    def stored_unit_vectors(self, pieces: Sequence[tuple[Chunk, str]]) -> list[np.ndarray | None]:
        """The embedding computed at ingest of each (chunk, text) that is one of the chunk's evidence units.

        None for a text that is no unit (a short sentence, a piece of a unit): the caller embeds it.
        """
        by_document: dict[str, dict[tuple[str, str], np.ndarray]] = {}
        found: list[np.ndarray | None] = []
        for chunk, text in pieces:
            if chunk.doc_id not in by_document:
                units, vectors = self.units_of(chunk.doc_id)
                by_document[chunk.doc_id] = {(u.chunk_id, u.text): vectors[i] for i, u in enumerate(units)}
            found.append(by_document[chunk.doc_id].get((chunk.chunk_id, text)))
        return found

    def chunks_of(self, doc_id: str) -> tuple[Sequence[Chunk], np.ndarray]:
        """A document's chunks in reading order, and their embeddings."""
        collection, start, stop = self._chunk_span(doc_id)
        return collection.chunks[start:stop], collection.embeddings[start:stop]

    def chunk_bm25(self, doc_id: str, terms: Sequence[str]) -> np.ndarray:
        """BM25 scores of a document's chunks (in :meth:`chunks_of` order) for analysed terms."""
        collection, start, stop = self._chunk_span(doc_id)
        return collection.bm25_scores([(t, 1.0) for t in terms], 0.0)[start:stop]

    def _chunk_span(self, doc_id: str) -> tuple[CollectionIndex, int, int]:
        for collection in self.collections.values():
            if doc_id in collection.doc_chunks:
                start, stop = collection.doc_chunks[doc_id]
                return collection, start, stop
        raise NotFoundError(f"no document with id {doc_id!r} in index version {self.version_id}")

    def unit_bm25(self, doc_id: str, terms: Sequence[str]) -> np.ndarray:
        """BM25 scores of a document's units (in :meth:`units_of` order) for analysed terms."""
        collection, start, stop = self._unit_span(doc_id)
        return collection.unit_bm25_scores(terms, start, stop)

    def _unit_span(self, doc_id: str) -> tuple[CollectionIndex, int, int]:
        for collection in self.collections.values():
            if doc_id in collection.doc_units:
                start, stop = collection.doc_units[doc_id]
                return collection, start, stop
            if doc_id in collection.doc_chunks:
                return collection, 0, 0
        raise NotFoundError(f"no document with id {doc_id!r} in index version {self.version_id}")

    def sparse_top(self, vector: np.ndarray, k: int, collections: Iterable[str] | None = None):
        """Sparse-information candidates from each chosen collection, merged by similarity."""
        hits = [h for c in self.select(collections) for h in c.sparse_top(vector, k)]
        return sorted(hits, key=lambda h: -h[1])[:k]

    def bm25_scores_of(
        self, chunks: Sequence[Chunk], terms: Sequence[tuple[str, float]], field_weight: float
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
            row = collection.rows.get(chunk_id)
            if row is not None:
                return collection.chunks[row]
        raise NotFoundError(f"no passage with id {chunk_id!r} in index version {self.version_id}")

    def document(self, doc_id: str) -> tuple[FileRecord, list[Chunk]]:
        """A document's file record and its passages in reading order, or :class:`NotFoundError`."""
        for record in self.files:
            if record.doc_id == doc_id:
                collection = self.collections[record.collection]
                start, stop = collection.doc_chunks.get(doc_id, (0, 0))
                return record, list(collection.chunks[start:stop])
        raise NotFoundError(f"no document with id {doc_id!r} in index version {self.version_id}")


def open_live(index_dir: Path, *, memory_map: bool, verify: bool = True) -> IndexSnapshot:
    """Load the live version of ``index_dir``."""
    return open_version(live_version_dir(index_dir), verify=verify, memory_map=memory_map)


def open_version(version_dir: Path, *, memory_map: bool, verify: bool = True) -> IndexSnapshot:
    """Load one version directory, checking its manifest and checksums.

    With ``memory_map`` nothing large is copied into the process: the BM25 matrices and the
    vector graph are mapped read-only from their files, and the chunk and unit records and
    the embedding rows are read when a search asks for them (see :mod:`index_build.records`).
    The operating system keeps what searches touch in its page cache, one copy for every
    process serving the same version. A version directory is never modified once written,
    and a file that a later clean-up deletes stays readable while it is mapped or open.
    """
    import bm25s

    from index_build.vector_library import usearch_index

    Index = usearch_index().Index

    manifest = read_manifest(version_dir)
    if verify:
        verify_checksums(version_dir, manifest)
    matrix = StoredRows if memory_map else np.load
    collections = {}
    for name in manifest["counts"]["collections"]:
        directory = version_dir / COLLECTIONS / name
        vectors = Index.restore(str(directory / "vectors.usearch"), view=memory_map)
        if vectors is None:
            raise IndexCorruptError(f"{directory / 'vectors.usearch'} is not a usearch index")
        layout = read_rows(directory)
        chunks = open_records(
            directory / "chunks.jsonl",
            layout.chunk_offsets,
            chunk_from_json,
            in_memory=not memory_map,
            cache_size=CHUNK_CACHE,
        )
        units = open_records(
            directory / "units.jsonl",
            layout.unit_offsets,
            unit_from_json,
            in_memory=not memory_map,
            cache_size=UNIT_CACHE,
        )

        def bm25(folder: str, directory: Path = directory) -> Any:
            return bm25s.BM25.load(str(directory / folder), mmap=memory_map, show_progress=False)

        collections[name] = CollectionIndex(
            name=name,
            chunks=chunks,
            embeddings=matrix(directory / "embeddings.npy"),
            bm25=bm25("bm25"),
            bm25_fields=bm25("bm25_fields"),
            vectors=vectors,
            rows=ChunkRows(layout.id_hashes, layout.id_rows, chunks),
            sparse=read_sparse(directory),
            units=units,
            unit_embeddings=matrix(directory / "unit_embeddings.npy"),
            bm25_units=bm25("bm25_units"),
            doc_chunks=layout.doc_chunks,
            doc_units=layout.doc_units,
        )
    return IndexSnapshot(
        version_id=manifest["version"],
        path=version_dir,
        manifest=manifest,
        files=tuple(read_files(version_dir)),
        collections=collections,
    )
