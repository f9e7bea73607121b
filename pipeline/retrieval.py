"""Search one index snapshot: BM25, dense, or both fused.

The index and the embedder come in through small protocols, so this module stays free of
I/O and heavy imports; the service runs it off the event loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from pipeline.fusion import reciprocal_rank_fusion
from pipeline.protocols import Embedder
from pipeline.text import analyze
from pipeline.types import Chunk, SearchHit

SearchMode = Literal["bm25", "dense", "hybrid"]
SEARCH_MODES: tuple[str, ...] = ("bm25", "dense", "hybrid")


class SearchableIndex(Protocol):
    """What retrieval needs from a loaded index version."""

    def bm25_top(
        self, terms: list[str], k: int, collections: Sequence[str] | None = None
    ) -> list[tuple[Chunk, float]]: ...

    def dense_top(
        self, vector: np.ndarray, k: int, collections: Sequence[str] | None = None
    ) -> list[tuple[Chunk, float]]: ...


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A query and how to run it. ``candidates`` is the per-branch depth before fusion."""

    query: str
    k: int = 10
    mode: SearchMode = "hybrid"
    candidates: int = 16
    collections: tuple[str, ...] | None = None


def search(index: SearchableIndex, embedder: Embedder, request: SearchRequest) -> list[SearchHit]:
    """Run ``request`` against ``index``; hits best first, at most ``request.k``."""
    depth = max(request.k, request.candidates)
    bm25: list[tuple[Chunk, float]] = []
    dense: list[tuple[Chunk, float]] = []
    if request.mode in ("bm25", "hybrid"):
        bm25 = index.bm25_top(analyze(request.query), depth, request.collections)
    if request.mode in ("dense", "hybrid"):
        dense = index.dense_top(embedder.embed_query(request.query), depth, request.collections)
    if request.mode == "bm25":
        return [SearchHit(c, s, {"bm25": s}) for c, s in bm25[: request.k]]
    if request.mode == "dense":
        return [SearchHit(c, s, {"dense": s}) for c, s in dense[: request.k]]
    return _fuse_rrf(bm25, dense, request.k)


def _fuse_rrf(bm25: list[tuple[Chunk, float]], dense: list[tuple[Chunk, float]], k: int) -> list[SearchHit]:
    chunks = {c.chunk_id: c for c, _ in bm25 + dense}
    branch: dict[str, dict[str, float]] = {cid: {} for cid in chunks}
    for c, s in bm25:
        branch[c.chunk_id]["bm25"] = s
    for c, s in dense:
        branch[c.chunk_id]["dense"] = s
    fused = reciprocal_rank_fusion([[c.chunk_id for c, _ in bm25], [c.chunk_id for c, _ in dense]])
    return [SearchHit(chunks[cid], score, branch[cid]) for cid, score in fused[:k]]
