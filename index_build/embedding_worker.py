"""Embedding the chunks and evidence units of converted documents: in batches of similar
length, reusing the vectors of unchanged texts."""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from index_build.ingest_report import (
    IngestedDocument,
    IngestProgress,
    IngestReport,
)
from index_build.snapshot import IndexSnapshot
from pipeline.protocols import Embedder
from pipeline.types import (
    EvidenceUnit,
    Span,
    model_text,
    unit_search_text,
    unit_spans,
)

EMBED_BATCH = 64


LENGTH_CLASS_CHARS = 64  # texts this close in length (about 15 tokens) are embedded together


class EmbeddingWorker:
    """Embeds converted documents on one worker thread while the next document converts.

    Conversion is Python (one core); ONNX Runtime releases the interpreter while it embeds,
    so on two cores the two overlap. A batch is padded to its longest text, so texts are not
    embedded document by document (a 256-token chunk would pad its short sentences to its
    length) but gathered by length across documents and embedded when enough of a length
    are waiting; the rest when the last document is in.

    Chunks are embedded as :func:`model_text`. A unit's vector is pooled from its chunk's
    token states in the same pass ("late chunking", see :func:`unit_spans`): units are
    two thirds of the texts and a quarter of the embedding time when embedded alone, and on
    the SEC questions the evidence selected from pooled vectors finds as many of the
    answers' figures. A unit that the model's window cut off, or whose words cannot be
    located, is embedded alone as :func:`unit_search_text`. Vectors are looked up by a
    hash of what they were computed from (in the previous version and in what this ingest
    embedded), so nothing is embedded twice. Leaving the ``with`` block embeds what is
    left, fills every submitted document's vectors and re-raises the worker's error; if
    conversion failed, it only stops the worker.
    """

    def __init__(
        self,
        embedder: Embedder,
        previous: IndexSnapshot | None,
        progress: IngestProgress,
        report: IngestReport,
    ) -> None:
        self._embedder = embedder
        self._progress = progress
        self._report = report
        self._previous = previous
        self._known: dict[str, np.ndarray] = {}  # the previous version's, read at the first document
        self._waiting: dict[int, dict[str, str]] = {}  # length class -> key -> text
        self._chunk_keys: set[str] = set()
        self._units_of: dict[str, dict[str, tuple[Span, ...]]] = {}  # waiting chunk -> its units' ranges
        self._alone: dict[str, str] = {}  # unit key -> the text it is embedded as if pooling fails
        self._aliases: dict[str, str] = {}  # unit key -> key of the text it was embedded alone as
        self._wanted: list[_Wanted] = []  # every submitted text's place
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="docfinder-embed")
        self._pending: list[Future[None]] = []
        self._busy = 0.0

    def __enter__(self) -> EmbeddingWorker:
        self._progress.start("embeddings", None)
        return self

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        try:
            if exc_type is None:
                self._pending.append(self._pool.submit(self._embed_the_rest))
                for pending in self._pending:
                    pending.result()  # the worker's error, if any, is the ingest's
                for target, row, key in self._wanted:
                    target[row] = self._known[self._aliases.get(key, key)]  # units embedded alone: aliased
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._report.embedding_seconds = round(self._busy, 3)

    def submit(self, document: IngestedDocument) -> None:
        """Queue ``document``'s chunks and units for embedding (its vectors are filled on exit).

        Raises the error of an earlier embedding, so a failed embedder stops the ingest at
        the next document rather than after converting every file."""
        for done in (f for f in self._pending if f.done()):
            done.result()
        self._pending.append(self._pool.submit(self._gather, document))

    def _gather(self, document: IngestedDocument) -> None:
        began = time.perf_counter()
        if self._previous is not None:
            self._known = _known_vectors(self._previous)
            self._previous = None
        members: dict[str, list[tuple[int, EvidenceUnit]]] = {}
        for row, unit in enumerate(document.units):
            members.setdefault(unit.chunk_id, []).append((row, unit))
        for row, chunk in enumerate(document.chunks):
            text, key = model_text(chunk), chunk.content_hash
            self._wanted.append((document.embeddings, row, key))
            pooled: dict[str, tuple[Span, ...]] = {}
            units = members.get(chunk.chunk_id, [])
            located = unit_spans(chunk, [u for _, u in units]) if units else []
            for (unit_row, unit), spans in zip(units, located, strict=True):
                unit_key = _unit_key(text, unit)
                self._wanted.append((document.unit_embeddings, unit_row, unit_key))
                if unit_key in self._known:
                    self._report.reused_embeddings += 1
                    continue
                self._alone[unit_key] = unit_search_text(unit, chunk.heading_path)
                pooled[unit_key] = spans
            if key in self._known:  # embedded before: units it did not bring are embedded alone
                self._report.reused_embeddings += 1
                for unit_key in pooled:
                    self._embed_alone(unit_key)
                continue
            self._units_of.setdefault(key, {}).update(pooled)
            self._chunk_keys.add(key)
            self._queue(key, text)
        self._busy += time.perf_counter() - began

    def _embed_alone(self, unit_key: str) -> None:
        """Embed a unit as its own text; units of the same text share one vector."""
        text = self._alone[unit_key]
        self._aliases[unit_key] = text_key = _text_key(text)
        if text_key not in self._known:
            self._queue(text_key, text)

    def _queue(self, key: str, text: str) -> None:
        """Wait for texts of about ``text``'s length, then embed them together."""
        length_class = len(text) // LENGTH_CLASS_CHARS
        waiting = self._waiting.setdefault(length_class, {})
        waiting[key] = text
        if len(waiting) >= EMBED_BATCH:
            self._embed(self._waiting.pop(length_class))

    def _embed_the_rest(self) -> None:
        began = time.perf_counter()
        while self._waiting:  # a chunk's units its window cut off come back as texts of their own
            rest = {
                k: t for length_class in sorted(self._waiting) for k, t in self._waiting[length_class].items()
            }
            self._waiting.clear()
            keys = list(rest)
            for start in range(0, len(keys), EMBED_BATCH):
                self._embed({k: rest[k] for k in keys[start : start + EMBED_BATCH]})
        self._busy += time.perf_counter() - began

    def _embed(self, batch: dict[str, str]) -> None:
        units = [self._units_of.pop(key, {}) for key in batch]
        vectors = self._embedder.embed_spans(list(batch.values()), [tuple(u.values()) for u in units])
        for key, vector in zip(batch, vectors.passages):
            self._known[key] = vector
        for spans_of, unit_vectors, pooled in zip(units, vectors.spans, vectors.pooled, strict=True):
            for unit_key, vector, ok in zip(spans_of, unit_vectors, pooled, strict=True):
                if ok:
                    self._known[unit_key] = vector
                    self._report.pooled_units += 1
                else:
                    self._embed_alone(unit_key)
        chunks = sum(1 for key in batch if key in self._chunk_keys)
        self._report.embedded_chunks += chunks
        self._report.embedded_units += len(batch) - chunks
        self._progress.advance("embeddings", len(batch))


def _known_vectors(previous: IndexSnapshot) -> dict[str, np.ndarray]:
    """The previous version's vectors by key: an unchanged passage keeps its vector."""
    known: dict[str, np.ndarray] = {}
    for collection in previous.collections.values():
        texts = {}
        for chunk, vector in zip(collection.chunks, collection.embeddings):
            known[chunk.content_hash] = vector
            texts[chunk.chunk_id] = model_text(chunk)
        for unit, vector in zip(collection.units, collection.unit_embeddings):
            known[_unit_key(texts[unit.chunk_id], unit)] = vector
    return known


def _unit_key(chunk_text: str, unit: EvidenceUnit) -> str:
    """What a unit's vector is computed from: its chunk as the model reads it and the unit."""
    return _text_key("\0".join((chunk_text, unit.kind, unit.row_group, unit.text)))


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def stacked_vectors(vectors: list[np.ndarray | None]) -> np.ndarray | None:
    return np.vstack(vectors) if vectors else None


# Where a vector goes: a document's list of chunk or unit vectors, a row of it, the vector's key.
_Wanted = tuple[list[np.ndarray | None], int, str]
