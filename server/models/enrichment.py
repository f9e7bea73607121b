"""Contextual enrichment at ingest: the LLM situates each chunk in its document.

The context (one or two sentences) is added to the chunk before embedding and BM25, as in
contextual retrieval. Contexts are cached in SQLite by the chunk's content hash, so an
unchanged chunk is never sent to the LLM twice, across ingests and versions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from index_build.document import ParsedDocument
from pipeline.types import HEADING_SEPARATOR, Chunk
from server.stores.database import SQLiteDatabase, create_tables

OUTLINE_HEADINGS = 30


_TABLE = "CREATE TABLE IF NOT EXISTS contexts (content_hash TEXT PRIMARY KEY, context TEXT)"


class EnrichmentCache:
    """content hash → context, in one SQLite file (WAL), safe across threads."""

    def __init__(self, path: Path, busy_timeout_s: float) -> None:
        self._db = SQLiteDatabase(path, busy_timeout_s)
        create_tables(self._db, {"sqlite": _TABLE, "postgresql": _TABLE})

    def get(self, content_hash: str) -> str | None:
        """The cached context of a chunk with this content, or None when it was never made."""
        with self._db.read() as tx:
            rows = tx.execute("SELECT context FROM contexts WHERE content_hash = ?", (content_hash,))
        return rows[0][0] if rows else None

    def put(self, content_hash: str, context: str) -> None:
        with self._db.transaction() as tx:
            tx.execute(
                "INSERT INTO contexts VALUES (?, ?)"
                " ON CONFLICT (content_hash) DO UPDATE SET context = excluded.context",
                (content_hash, context),
            )

    def close(self) -> None:
        self._db.close()


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
