"""Ingest throughput on the SEC 10-Q filings and search latency per mode."""

from __future__ import annotations

import asyncio
import csv
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from server.evaluation.retrieval import percentile
from server.models.factories import make_embedder
from server.service import open_service, run_ingest
from server.settings import load_settings


class PhaseTimer:
    """An ingest progress sink that notes when embedding starts, to split conversion from embedding."""

    def __init__(self) -> None:
        self.embedding_started: float | None = None

    def start(self, task: str, total: int | None) -> None:
        if task == "embeddings":
            self.embedding_started = time.perf_counter()

    def advance(self, task: str, amount: int = 1) -> None:
        pass


def bench_ingest_and_search(data: Path) -> dict[str, Any]:
    docs = data / "sec10q" / "docs"
    with open(data / "sec10q" / "qna_dev.csv", encoding="utf-8") as handle:
        questions = [row["Question"] for row in csv.DictReader(handle)]
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(index_dir=Path(tmp) / "index")
        embedder = make_embedder(settings)
        embedder.embed(["warm-up"])  # load the model (and export it, once) before the clock starts
        timer = PhaseTimer()
        started = time.perf_counter()
        report = run_ingest(settings, [docs], embedder=embedder, progress=timer)
        total = time.perf_counter() - started
        convert_seconds = (timer.embedding_started or started + total) - started
        embed_seconds = total - convert_seconds
        ingest = {
            "documents": report.documents,
            "pages": report.pages,
            "chunks": report.chunks,
            "failures": len(report.failures),
            "seconds": round(total, 2),
            "pages_per_s": round(report.pages / total, 2),
            "chunks_per_s": round(report.chunks / total, 2),
            "convert_and_chunk_seconds": round(convert_seconds, 2),
            "convert_pages_per_s": round(report.pages / convert_seconds, 2),
            "embed_seconds": round(embed_seconds, 2),
            "embed_chunks_per_s": round(report.chunks / embed_seconds, 2) if embed_seconds > 0 else None,
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
