"""Contextual enrichment at ingest: the LLM situates each chunk in its document.

The context (one or two sentences) is added to the chunk before embedding and BM25, as in
contextual retrieval. Contexts are cached in SQLite by the chunk's content hash, so an
unchanged chunk is never sent to the LLM twice, across ingests and versions.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from index_build.document import ParsedDocument
from pipeline.types import HEADING_SEPARATOR, Chunk

OUTLINE_HEADINGS = 30


class EnrichmentCache:
    """content hash → context, in one SQLite file (WAL), safe across threads."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute(
            "CREATE TABLE IF NOT EXISTS contexts (content_hash TEXT PRIMARY KEY, context TEXT)"
        )
        self._lock = threading.Lock()

    def get(self, content_hash: str) -> str | None:
        with self._lock:
            row = self._connection.execute(
                "SELECT context FROM contexts WHERE content_hash = ?", (content_hash,)
            ).fetchone()
        return row[0] if row else None

    def put(self, content_hash: str, context: str) -> None:
        with self._lock:
            self._connection.execute("INSERT OR REPLACE INTO contexts VALUES (?, ?)", (content_hash, context))

    def close(self) -> None:
        with self._lock:
            self._connection.close()


class LLMEnricher:
    """An :data:`~index_build.builder.Enricher` that asks the LLM, through the cache."""

    def __init__(self, lm: Any, cache: EnrichmentCache, adapter: Any) -> None:
        import dspy

        from programs.signatures import Situate

        self._lm = lm
        self._adapter = adapter
        self._cache = cache
        self._situate = dspy.Predict(Situate)
        self.calls = 0

    def __call__(self, document: ParsedDocument, chunk: Chunk) -> str:
        cached = self._cache.get(chunk.content_hash)
        if cached is not None:
            return cached
        import dspy

        headings = [b.text for b in document.blocks if b.kind == "heading"][:OUTLINE_HEADINGS]
        outline = "\n".join([document.title, *headings])
        with dspy.context(lm=self._lm, adapter=self._adapter):
            context = self._situate(
                document=outline, heading_path=HEADING_SEPARATOR.join(chunk.heading_path), passage=chunk.text
            ).context.strip()
        self.calls += 1
        self._cache.put(chunk.content_hash, context)
        return context
