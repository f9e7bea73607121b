"""Ingest throughput on the SEC 10-Q filings and search latency per mode."""

from __future__ import annotations

import asyncio
import csv
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from evaluation.retrieval import percentile
from server.core.ingest import run_ingest
from server.models.factories import make_embedder
from server.service import open_service
from server.settings import load_settings


def bench_ingest_and_search(data: Path) -> dict[str, Any]:
    docs = data / "sec10q" / "docs"
    with open(data / "sec10q" / "qna_dev.csv", encoding="utf-8") as handle:
        questions = [row["Question"] for row in csv.DictReader(handle)]
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(index__dir=Path(tmp) / "index")
        embedder = make_embedder(settings)
        embedder.embed(["warm-up"])  # load the model (and export it, once) before the clock starts
        started = time.perf_counter()
        report = run_ingest(settings, [docs], embedder=embedder)
        total = time.perf_counter() - started
        embedded = report.embedded_chunks + report.embedded_units
        ingest = {
            "documents": report.documents,
            "pages": report.pages,
            "chunks": report.chunks,
            "units": report.units,
            "failures": len(report.failures),
            "seconds": round(total, 2),
            "pages_per_s": round(report.pages / total, 2),
            "chunks_per_s": round(report.chunks / total, 2),
            # Conversion and embedding overlap (embedding runs on a worker thread): each phase's
            # own busy time, so their sum exceeds the total when the overlap works.
            "convert_and_chunk_seconds": report.converting_seconds,
            "convert_pages_per_s": round(report.pages / report.converting_seconds, 2),
            "embed_seconds": report.embedding_seconds,
            "embedded_texts": embedded,
            "embedded_texts_per_s": round(embedded / report.embedding_seconds, 1),
            # Units whose vectors were pooled from their chunk's pass rather than embedded alone.
            "pooled_units": report.pooled_units,
            "write_seconds": report.writing_seconds,
        }
        search = asyncio.run(_search_latency(settings, questions))
    return {"dataset": str(docs), "ingest": ingest, "search": search}


async def _search_latency(settings, questions: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    async with open_service(settings) as service:
        await service.search("warm up the embedder", k=10)
        encode = []
        for question in questions:
            started = time.perf_counter()
            service.embedder.embed_query(question)
            encode.append((time.perf_counter() - started) * 1000)
        results["query_encode"] = {
            "embedder": service.embedder.name,
            "backend": service.embedder.backend,
            "p50_ms": round(statistics.median(encode), 2),
            "p95_ms": round(percentile(encode, 0.95), 2),
        }
        for mode in ("bm25", "dense", "hybrid"):
            service.embedder.forget_queries()  # each question as if asked for the first time
            latencies = []
            for question in questions:
                started = time.perf_counter()
                await service.search(question, k=10, mode=mode)
                latencies.append((time.perf_counter() - started) * 1000)
            results[mode] = {
                "queries": len(latencies),
                "p50_ms": round(statistics.median(latencies), 2),
                "p95_ms": round(percentile(latencies, 0.95), 2),
            }
    return results
