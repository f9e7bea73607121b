"""Ingest from the settings: the build parameters they ask for, a plain ingest (the CLI and the
ingest job call it), and an ingest whose chunks the LLM situates (contextual enrichment)."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from index_build.builder import ingest
from index_build.ingest_report import Enricher, IngestProgress, IngestReport, NoProgress
from pipeline.protocols import Embedder
from server.models.factories import embedder_factory, make_embedder
from server.models.llm import make_adapter, open_lm
from server.settings import Settings


def run_ingest(
    settings: Settings,
    inputs: list[Path],
    *,
    collection: str | None = None,
    embedder: Embedder | None = None,
    progress: IngestProgress = NoProgress(),
    enricher: Enricher | None = None,
) -> IngestReport:
    """Build a new index version from ``inputs`` (blocking; the CLI and the ingest job call it),
    on the engine that ``ingest.engine`` names."""
    embedder = embedder or make_embedder(settings)
    engine = None
    if settings.ingest.engine == "ray":
        from index_build.ray_engine import RayEngine

        embedder.embed(["warm-up"])  # makes the model's export here, once; the workers load it
        engine = RayEngine(settings.ingest.ray, embedder_factory(settings))
    return ingest(
        settings.index.dir,
        inputs,
        embedder=embedder,
        collection=collection,
        options=settings.ingest,
        progress=progress,
        enricher=enricher,
        engine=engine,
    )


async def run_enriched_ingest(
    settings: Settings,
    inputs: list[Path],
    *,
    collection: str | None = None,
    progress: IngestProgress = NoProgress(),
    lm: Any = None,
) -> IngestReport:
    """Ingest with contextual enrichment: the LLM (given, or opened here) situates each new chunk."""
    from server.models.enrichment import EnrichmentCache, LLMEnricher

    settings = settings.changed({"ingest.chunking.contextual": True})
    cache = EnrichmentCache(
        settings.index.dir / "enrichment.sqlite3", settings.stores.database_busy_timeout_s
    )
    async with AsyncExitStack() as stack:
        model = lm if lm is not None else await stack.enter_async_context(open_lm(settings))
        stack.callback(cache.close)
        enricher = LLMEnricher(model, cache, make_adapter(settings))
        # Conversion, chunking and embedding are blocking and CPU-bound: run them in a worker thread.
        return await asyncio.to_thread(
            run_ingest, settings, inputs, collection=collection, progress=progress, enricher=enricher
        )
