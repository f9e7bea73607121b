"""Ingest of the SEC filings on the local engine and on Ray at several worker counts.

Each run builds a fresh index from the same files in a fresh process-level Ray cluster (its
start, about 4 s, and the actors' start are counted: that is what an ingest costs). Speed-up
and efficiency are against the local engine on the same machine; Ray's overhead is its time
at one worker over the local engine's, which uses the same two processes (one converting, one
embedding). ``SCALE_OUT_WORKERS=2,4,8,16`` sets the worker counts (default 1,2).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from server.core.ingest import run_ingest
from server.models.factories import make_embedder
from server.settings import load_settings

DEFAULT_WORKERS = (1, 2)


def bench_scale_out(data: Path, workers: tuple[int, ...] | None = None) -> dict[str, Any]:
    docs = data / "sec10q" / "docs"
    counts = workers or _workers_from_env() or DEFAULT_WORKERS
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        exports = Path(tmp) / "exports"
        make_embedder(load_settings(embedder__cache_dir=exports)).embed(["export the model once"])
        runs = [("local", None), *(("ray", n) for n in counts)]
        for engine, n in runs:
            settings = load_settings(
                index__dir=Path(tmp) / f"index-{engine}-{n}",
                embedder__cache_dir=exports,
                ingest__engine=engine,
                ingest__ray__workers=n,
            )
            started = time.perf_counter()
            report = run_ingest(settings, [docs])
            seconds = time.perf_counter() - started
            rows.append(
                {
                    "engine": engine,
                    "workers": n,
                    "documents": report.documents,
                    "pages": report.pages,
                    "chunks": report.chunks,
                    "units": report.units,
                    "failures": len(report.failures),
                    "seconds": round(seconds, 1),
                    "pages_per_s": round(report.pages / seconds, 2),
                }
            )
    local = rows[0]
    for row in rows:
        row["speed_up"] = round(local["seconds"] / row["seconds"], 2)
        row["efficiency"] = round(
            row["speed_up"] / (row["workers"] or 1), 2
        )  # a worker: the local engine's 2 CPUs
    one = next((r for r in rows if r["workers"] == 1), None)
    return {
        "dataset": str(docs),
        "cpus": os.cpu_count(),
        "rows": rows,
        "same_index_size": len({(r["chunks"], r["units"]) for r in rows}) == 1,
        "ray_overhead_at_one_worker_pct": round(100 * (one["seconds"] / local["seconds"] - 1), 1)
        if one
        else None,
        "table": _table(rows),
    }


def _workers_from_env() -> tuple[int, ...]:
    given = os.environ.get("SCALE_OUT_WORKERS", "")
    return tuple(int(n) for n in given.split(",") if n.strip())


def _table(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as a Markdown table, as docs/scaling.md shows them."""
    lines = [
        "| engine | workers | seconds | pages/s | speed-up | efficiency |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        cells = [
            r["engine"],
            r["workers"] or "-",
            r["seconds"],
            r["pages_per_s"],
            r["speed_up"],
            r["efficiency"],
        ]
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    return lines
