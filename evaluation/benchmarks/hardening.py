"""Hardening benchmarks on loopback, against the real ``docfinder serve http`` in a subprocess
(a deterministic OpenAI-compatible LLM in a thread, docfinder's own docs as the corpus).

1. Memory per request: the server's resident set size after 200 and after 2,000 asks; the
   growth between them must stay under 5 % (DSPy's call history off, nothing kept per ask).
2. Health under a search flood: p50/p95 latency of ``/healthz``, probed from another process,
   while waves of 400 searches arrive at once for 3 s (searches run in their own bounded pool,
   and the excess is refused with 503; one wave alone is over in well under a second).
3. Fuzzing: schemathesis generates requests from ``/openapi.json`` for every operation; the
   number of 5xx answers must be 0.
4. Ingest bomb and 5. hostile bodies on every route: see :mod:`evaluation.benchmarks.hostile`.
6. Round three's attacks (collection scope, a keyless server, LLM errors, a runaway generation,
   a silent token endpoint): see :mod:`evaluation.benchmarks.round_three`.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import shutil
import statistics
import tempfile
import time
import urllib.request
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp

from evaluation.benchmarks import REPO
from evaluation.benchmarks.hostile import bench_hostile, bench_ingest_bomb
from evaluation.benchmarks.load_fault import server_env, start_server
from evaluation.benchmarks.round_three import bench_round_three
from evaluation.doubles.fake_llm import FakeLLMServer
from evaluation.retrieval import percentile
from server.core.ingest import run_ingest
from server.settings import Settings

ASKS = (200, 2000)
SEARCH_FLOOD = 400  # searches in one wave, all at once
FLOOD_S = 3.0  # waves keep coming this long
FUZZ_EXAMPLES = 100


def bench_hardening(settings: Settings) -> dict[str, Any]:
    """Run the three phases; see the module docstring."""
    with tempfile.TemporaryDirectory(prefix="docfinder-hardening-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus"
        shutil.copytree(REPO / "docs", corpus)
        index = work / "index"
        run_ingest(settings.changed({"index.dir": index}), [corpus], collection="docs")
        with FakeLLMServer() as llm:
            env = server_env(work, index, llm.url)
            process, url = start_server(env)
            try:
                memory = asyncio.run(_memory(url, process.pid))
                health = asyncio.run(_health_under_search_flood(url))
                fuzz = _fuzz(url)
            finally:
                process.terminate()
                process.wait(timeout=30)
            hostile = asyncio.run(bench_hostile(env))
        plain = {k: v for k, v in os.environ.items() if not k.startswith("DOCFINDER_")}
        bomb = bench_ingest_bomb(work, plain)
        round_three = bench_round_three(settings, work, corpus)
    return {
        "memory": memory,
        "health_under_search_flood": health,
        "fuzzing": fuzz,
        "hostile_bodies": hostile,
        "ingest_bomb": bomb,
        "round_three": round_three,
    }


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


async def _memory(url: str, pid: int) -> dict[str, Any]:
    rss: dict[str, float] = {}
    errors = 0
    done = 0
    async with aiohttp.ClientSession() as session:
        semaphore = asyncio.Semaphore(8)

        async def ask(n: int) -> None:
            nonlocal errors
            async with (
                semaphore,
                session.post(f"{url}/v1/ask", json={"question": f"How are versions published? {n}"}) as r,
            ):
                errors += r.status != 200
                await r.read()

        for target in ASKS:
            await asyncio.gather(*(ask(n) for n in range(done, target)))
            done = target
            rss[f"after_{target}_asks_mb"] = round(_rss_mb(pid), 1)
    first, last = (rss[f"after_{n}_asks_mb"] for n in ASKS)
    return {**rss, "growth_pct": round(100 * (last - first) / first, 2), "errors": errors}


async def _health_under_search_flood(url: str) -> dict[str, Any]:
    statuses: dict[int, int] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def search(n: int) -> None:
            async with session.post(f"{url}/v1/search", json={"query": f"hybrid search fusion {n}"}) as r:
                statuses[r.status] = statuses.get(r.status, 0) + 1
                await r.read()

        async def waves() -> None:
            deadline, wave = time.monotonic() + FLOOD_S, 0
            while time.monotonic() < deadline:
                await asyncio.gather(*(search(wave * SEARCH_FLOOD + n) for n in range(SEARCH_FLOOD)))
                wave += 1

        # The probe runs in its own process: on this event loop its timings would be those of
        # the flood's 400 requests waiting to be sent, not of the server.
        loop, spawn = asyncio.get_running_loop(), multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            await loop.run_in_executor(pool, _probe_health, url, 0.0)  # the process is up
            probe = loop.run_in_executor(pool, _probe_health, url, FLOOD_S)
            await waves()
            latencies = await probe
    return {
        "searches": sum(statuses.values()),
        "flood_s": FLOOD_S,
        "search_statuses": {str(k): v for k, v in sorted(statuses.items())},
        "healthz_ms": {
            "p50": round(statistics.median(latencies), 2),
            "p95": round(percentile(latencies, 0.95), 2),
            "samples": len(latencies),
        },
    }


def _probe_health(url: str, seconds: float) -> list[float]:
    """``/healthz`` latencies in ms, one request every 20 ms for ``seconds`` (at least one)."""
    latencies: list[float] = []
    deadline = time.monotonic() + seconds
    while not latencies or time.monotonic() < deadline:
        started = time.perf_counter()
        with urllib.request.urlopen(f"{url}/healthz", timeout=30) as reply:
            reply.read()
        latencies.append((time.perf_counter() - started) * 1000)
        time.sleep(0.02)
    return latencies


def _fuzz(url: str) -> dict[str, Any]:
    import hypothesis
    import schemathesis

    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    statuses: dict[str, int] = {}
    for result in schema.get_all_operations():
        operation = result.ok()

        @hypothesis.given(operation.as_strategy())
        @hypothesis.settings(
            max_examples=FUZZ_EXAMPLES,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(hypothesis.HealthCheck),
            database=None,
        )
        def call(case: Any) -> None:
            response = case.call(base_url=url, timeout=120)
            key = f"{response.status_code // 100}xx"
            statuses[key] = statuses.get(key, 0) + 1

        call()
    return {"requests": sum(statuses.values()), "by_class": statuses, "server_errors": statuses.get("5xx", 0)}
