"""Ingest from the settings: the build parameters they ask for, a plain ingest (the CLI and the
ingest job call it), and an ingest whose chunks the LLM situates (contextual enrichment)."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from dataclasses import fields
from pathlib import Path
from typing import Any

from index_build.builder import Enricher, IngestOptions, IngestProgress, IngestReport, NoProgress, ingest
from index_build.chunking import ChunkingOptions
from index_build.limits import IngestLimits, limit_setting
from index_build.version import Bm25Params
from pipeline.protocols import Embedder
from server.models.factories import make_embedder
from server.models.llm import make_adapter, open_lm
from server.settings import Settings


def ingest_options(settings: Settings) -> IngestOptions:
    """The build parameters the settings ask for."""
    return IngestOptions(
        chunking=ChunkingOptions(
            max_tokens=settings.chunk_tokens,
            overlap_tokens=settings.chunk_overlap_tokens,
            method=settings.chunker,
            semantic_percentile=settings.semantic_percentile,
            contextual=settings.enrich,
        ),
        bm25=Bm25Params(k1=settings.bm25_k1, b=settings.bm25_b),
        keep_versions=settings.keep_versions,
        pdf_models_dir=settings.pdf_models_dir,
        sparse_threshold=settings.sparse_similarity_threshold,
        convert_processes=settings.convert_processes,
        limits=IngestLimits(
            **{f.name: getattr(settings, limit_setting(f.name)) for f in fields(IngestLimits)}
        ),
    )


def run_ingest(
    settings: Settings,
    inputs: list[Path],
    *,
    collection: str | None = None,
    embedder: Embedder | None = None,
    progress: IngestProgress = NoProgress(),
    enricher: Enricher | None = None,
) -> IngestReport:
    """Build a new index version from ``inputs`` (blocking; the CLI and the ingest job call it)."""
    return ingest(
        settings.index_dir,
        inputs,
        embedder=embedder or make_embedder(settings),
        collection=collection,
        options=ingest_options(settings),
        progress=progress,
        enricher=enricher,
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

    settings = settings.model_copy(update={"enrich": True})
    cache = EnrichmentCache(settings.index_dir / "enrichment.sqlite3")
    async with AsyncExitStack() as stack:
        model = lm if lm is not None else await stack.enter_async_context(open_lm(settings))
        stack.callback(cache.close)
        enricher = LLMEnricher(model, cache, make_adapter(settings))
        # Conversion, chunking and embedding are blocking and CPU-bound: run them in a worker thread.
        return await asyncio.to_thread(
            run_ingest, settings, inputs, collection=collection, progress=progress, enricher=enricher
        )
