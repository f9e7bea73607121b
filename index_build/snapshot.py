"""A loaded, read-only index version: what the service searches.

Everything is read into memory at open, so the directory may be pruned afterwards without
disturbing a reader, and a reader never sees a mixture of two versions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from index_build.layout import live_version_dir
from index_build.version import COLLECTIONS, FileRecord, read_chunks, read_files, read_manifest, verify_checksums
from pipeline.errors import IndexCorruptError, PermanentError
from pipeline.types import Chunk


class UnknownCollectionError(PermanentError):
    """A search named a collection the index does not have."""


@dataclass(frozen=True, slots=True)
class CollectionIndex:
    """One collection's chunks, embeddings, BM25 index and vector index."""

    name: str
    chunks: tuple[Chunk, ...]
    embeddings: np.ndarray
    bm25: Any
    vectors: Any

    def bm25_top(self, terms: list[str], k: int) -> list[tuple[Chunk, float]]:
        """The ``k`` best chunks for already-analysed query terms, with positive BM25 scores."""
        ids = self.bm25.get_tokens_ids(terms)
        if not ids or not self.chunks:
            return []
        scores = self.bm25.get_scores_from_ids(ids)
        return _top_k(self.chunks, scores, k)

    def dense_top(self, vector: np.ndarray, k: int) -> list[tuple[Chunk, float]]:
        """The ``k`` nearest chunks by cosine similarity (HNSW search)."""
        if not self.chunks:
            return []
        matches = self.vectors.search(vector, min(k, len(self.chunks)))
        return [(self.chunks[int(key)], 1.0 - float(d)) for key, d in zip(matches.keys, matches.distances)]


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

    def bm25_top(self, terms: list[str], k: int, collections: Iterable[str] | None = None):
        """BM25 candidates from each chosen collection, merged by score."""
        hits = [h for c in self.select(collections) for h in c.bm25_top(terms, k)]
        return sorted(hits, key=lambda h: -h[1])[:k]

    def dense_top(self, vector: np.ndarray, k: int, collections: Iterable[str] | None = None):
        """Dense candidates from each chosen collection, merged by cosine similarity."""
        hits = [h for c in self.select(collections) for h in c.dense_top(vector, k)]
        return sorted(hits, key=lambda h: -h[1])[:k]


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
        collections[name] = CollectionIndex(
            name=name,
            chunks=tuple(read_chunks(directory)),
            embeddings=np.load(directory / "embeddings.npy"),
            bm25=bm25s.BM25.load(str(directory / "bm25"), mmap=False, show_progress=False),
            vectors=vectors,
        )
    return IndexSnapshot(
        version_id=manifest["version"],
        path=version_dir,
        manifest=manifest,
        files=tuple(read_files(version_dir)),
        collections=collections,
    )
