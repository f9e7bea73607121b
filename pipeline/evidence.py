"""In-document deepening: the best evidence units of the documents a question needs.

Retrieval ranks chunks across the whole index; an answer needs the right rows and
sentences of the right documents. So, as Science Checker does, search twice:

1. decide which documents need evidence: the question's scope when it names documents
   (every period for a change over time, see :mod:`pipeline.documents`), else the
   documents of the best retrieved chunks;
2. inside each of them, score every evidence unit by BM25 and by dense similarity to each
   query variant (normalised over all candidates, so scores compare across documents),
   plus a share of its chunk's retrieval score; then take a second, dense hop from the
   document's best unit (units like it, e.g. the rows around the row that matched, gain).

:func:`select_evidence` then fills the token budget so that every needed document is
represented before any document gets a second unit, then by score, a row's table header
counted once per passage. Unit embeddings come from the index (computed at ingest): only
the query variants are embedded here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from pipeline.documents import DocumentScope
from pipeline.protocols import Tokenizer
from pipeline.text import analyze
from pipeline.types import Chunk, EvidenceUnit, SearchHit


class EvidenceIndex(Protocol):
    """What in-document search needs from a loaded index version."""

    def units_of(self, doc_id: str) -> tuple[Sequence[EvidenceUnit], np.ndarray]: ...

    def unit_bm25(self, doc_id: str, terms: Sequence[str]) -> np.ndarray: ...

    def chunk(self, chunk_id: str) -> Chunk: ...


@dataclass(frozen=True, slots=True)
class EvidenceConfig:
    """How deep to search: documents deepened and the weights of the unit score."""

    documents: int = 3
    max_documents: int = 8
    candidates_per_document: int = 40
    dense_weight: float = 0.5
    chunk_weight: float = 0.2
    hop_weight: float = 0.2


@dataclass(frozen=True, slots=True)
class ScoredUnit:
    """An evidence unit, its chunk, its score and the rank of its document among those needed."""

    unit: EvidenceUnit
    chunk: Chunk
    score: float
    document_rank: int


@dataclass(frozen=True, slots=True)
class EvidenceSearch:
    """Candidate units of the needed documents (best first) and those documents in priority order."""

    units: list[ScoredUnit]
    documents: list[str]
    spread: bool = False
    trace: dict[str, Any] = field(default_factory=dict)


def needed_documents(hits: Sequence[SearchHit], scope: DocumentScope, config: EvidenceConfig) -> list[str]:
    """The documents to deepen, in priority order (see the module docstring)."""
    by_hits = list(dict.fromkeys(h.chunk.doc_id for h in hits))
    if scope.documents is None:
        return by_hits[: config.documents]
    if scope.spread or len(scope.documents) <= config.documents:
        return list(scope.documents[: config.max_documents])
    ranked = [d for d in by_hits if d in scope.documents]
    return (ranked + [d for d in scope.documents if d not in ranked])[: config.documents]


def find_evidence(
    index: EvidenceIndex,
    query_vectors: Sequence[np.ndarray],
    queries: Sequence[str],
    hits: Sequence[SearchHit],
    scope: DocumentScope,
    config: EvidenceConfig = EvidenceConfig(),
) -> EvidenceSearch:
    """Score the evidence units of the needed documents; see the module docstring."""
    started = time.perf_counter()
    documents = needed_documents(hits, scope, config)
    best_hit = max((h.score for h in hits), default=0.0)
    low_hit = min((h.score for h in hits), default=0.0)
    hit_score = {h.chunk.chunk_id: _scaled(h.score, low_hit, best_hit) for h in hits}
    terms = [analyze(q) for q in queries]

    per_document = []
    for doc_id in documents:
        units, vectors = index.units_of(doc_id)
        if not len(units):
            continue
        bm25 = np.max([index.unit_bm25(doc_id, t) for t in terms], axis=0)
        dense = np.max([vectors @ v for v in query_vectors], axis=0)
        per_document.append((doc_id, units, vectors, bm25, dense))
    if not per_document:
        return EvidenceSearch([], documents, scope.spread, _trace(started, documents, 0))

    # One normalisation over every candidate, so that a unit's score means the same in each document.
    bm25_top = max(float(p[3].max()) for p in per_document) or 1.0
    dense_all = np.concatenate([p[4] for p in per_document])
    dense_low, dense_top = float(dense_all.min()), float(dense_all.max())
    scored: list[ScoredUnit] = []
    for doc_id, units, vectors, bm25, dense in per_document:
        rank = documents.index(doc_id)
        chunk_prior = np.array([hit_score.get(u.chunk_id, 0.0) for u in units])
        fused = (
            config.dense_weight * _scaled(dense, dense_low, dense_top)
            + (1 - config.dense_weight) * bm25 / bm25_top
            + config.chunk_weight * chunk_prior
        )
        if config.hop_weight:
            fused = fused + config.hop_weight * np.clip(vectors @ vectors[int(np.argmax(fused))], 0.0, 1.0)
        order = np.argsort(-fused, kind="stable")
        seen: set[str] = set()
        for i in order:
            unit = units[int(i)]
            if unit.text in seen:
                continue
            seen.add(unit.text)
            scored.append(ScoredUnit(unit, index.chunk(unit.chunk_id), float(fused[i]), rank))
            if len(seen) >= config.candidates_per_document:
                break
    scored.sort(key=lambda s: -s.score)
    return EvidenceSearch(scored, documents, scope.spread, _trace(started, documents, len(scored)))


def _scaled(values, low: float, high: float):
    return (values - low) / (high - low) if high > low else values * 0.0 + 1.0


def _trace(started: float, documents: list[str], candidates: int) -> dict[str, Any]:
    return {
        "step": "deepen",
        "ms": round((time.perf_counter() - started) * 1000, 3),
        "documents": documents,
        "candidates": candidates,
    }


def select_evidence(search: EvidenceSearch, budget: int, tokenizer: Tokenizer) -> list[ScoredUnit]:
    """Fill ``budget`` tokens: one unit of each needed document first, then the rest by score.

    A row costs its own tokens plus, the first time its table appears in a passage, the
    table header and group label it is shown with.
    """
    by_document: dict[int, list[ScoredUnit]] = {}
    for candidate in search.units:
        by_document.setdefault(candidate.document_rank, []).append(candidate)
    chosen: list[ScoredUnit] = []
    taken: set[str] = set()
    headers: set[tuple[str, str]] = set()
    used = 0

    def take(candidate: ScoredUnit) -> bool:
        nonlocal used
        unit = candidate.unit
        cost = tokenizer.count(unit.text) + 1
        header_key = (unit.chunk_id, unit.table_header)
        if unit.kind == "row" and header_key not in headers:
            cost += tokenizer.count(unit.table_header) + 1
        if unit.row_group:
            cost += tokenizer.count(unit.row_group) + 1
        if used + cost > budget:
            return False
        used += cost
        chosen.append(candidate)
        taken.add(unit.unit_id)
        if unit.kind == "row":
            headers.add(header_key)
        return True

    for rank in sorted(by_document):  # coverage first: every needed document gets its best unit
        for candidate in by_document[rank]:
            if take(candidate):
                break
    for candidate in search.units:
        if candidate.unit.unit_id not in taken:
            take(candidate)
    return chosen
