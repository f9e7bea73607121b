"""Load and fault benchmarks on loopback: the real ``docfinder serve http`` in a subprocess,
a deterministic OpenAI-compatible LLM (``evaluation.doubles.fake_llm``) in a thread, docfinder's own docs
as the corpus. Bounded in count and time.

1. 200 concurrent asks: errors, latency p50/p99.
2. 20 index swaps (re-ingests that publish new versions) under continuous load: failed
   queries (must be 0) and answers that mixed two versions (must be 0; each answer quotes its
   top passage, which must exist in the version the answer reports).
3. The LLM server stopped mid-run: every request gets a sources-only answer or a clear error
   within its timeout.
4. ``kill -9`` of the server while feedback is being written: acknowledged rows lost (must be 0).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp

from evaluation.benchmarks import REPO
from evaluation.doubles.fake_llm import FakeLLMServer
from evaluation.retrieval import percentile
from index_build.layout import VERSIONS
from index_build.snapshot import open_version
from server.core.ingest import run_ingest
from server.settings import Settings

QUESTIONS = [
    "How do I add documents to a collection?",
    "What happens when the language model is down?",
    "How does a hybrid search work?",
    "Which formats can be ingested?",
    "What is the rotation code of the swap document?",
    "How are index versions published?",
    "How do I configure the glossary?",
    "What does the sparse fallback do?",
]
LLM_TIMEOUT_S = 5.0
SWAPS = 20
FEEDBACK_POSTS = 3000


def bench_load_and_faults(settings: Settings) -> dict[str, Any]:
    """Run the four phases; each returns its figures."""
    with tempfile.TemporaryDirectory(prefix="docfinder-load-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus"
        shutil.copytree(REPO / "docs", corpus)
        _write_swap_document(corpus, 0)
        index = work / "index"
        bench_settings = settings.changed({"index.dir": index, "ingest.keep_versions": SWAPS + 5})
        run_ingest(bench_settings, [corpus], collection="docs")
        with FakeLLMServer(delay_s=0.02) as llm:
            env = server_env(work, index, llm.url)
            with serve_http(env) as url:
                load = asyncio.run(_load(url, 200))
                swaps = asyncio.run(_swaps_under_load(url, bench_settings, corpus, index))
        with FakeLLMServer(delay_s=0.5) as llm, serve_http(server_env(work, index, llm.url)) as url:
            outage = asyncio.run(_llm_outage(url, llm))
        with FakeLLMServer() as llm:
            crash = _kill_during_feedback(server_env(work, index, llm.url), work / "feedback.sqlite3")
    return {"load": load, "index_swaps": swaps, "llm_outage": outage, "kill_during_feedback": crash}


def _write_swap_document(corpus: Path, revision: int) -> None:
    (corpus / "swap.md").write_text(
        "# Swap document\n\n"
        f"The rotation code of the swap document is ROT-{revision:04d}. It changes with every revision "
        f"of this document; this is revision {revision}.\n"
    )


def server_env(work: Path, index: Path, llm_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCFINDER_")}
    env.update(
        {
            "DOCFINDER_INDEX__DIR": str(index),
            "DOCFINDER_LLM__API_BASE": llm_url,
            "DOCFINDER_LLM__TIMEOUT_S": str(LLM_TIMEOUT_S),
            "DOCFINDER_STORES__CONVERSATIONS_PATH": str(work / "conversations.sqlite3"),
            "DOCFINDER_STORES__FEEDBACK_PATH": str(work / "feedback.sqlite3"),
        }
    )
    return env


@contextmanager
def serve_http(env: dict[str, str]) -> Iterator[str]:
    """``docfinder serve http`` on a free loopback port; yields its URL once /healthz answers."""
    process, url = start_server(env)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def start_server(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [str(Path(sys.executable).parent / "docfinder"), "serve", "http", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.2)
    else:
        process.kill()
        raise RuntimeError("the server did not start within 120 s")
    return process, url


async def _ask(session: aiohttp.ClientSession, url: str, question: str) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        async with session.post(f"{url}/v1/ask", json={"question": question}) as response:
            body = await response.json()
            return {"status": response.status, "seconds": time.perf_counter() - started, "body": body}
    except (aiohttp.ClientError, TimeoutError) as exc:
        return {"status": None, "seconds": time.perf_counter() - started, "error": repr(exc)}


def _outcomes(results: list[dict[str, Any]]) -> dict[str, int]:
    """How the requests ended: an answer outcome, an HTTP error status, or a transport error."""
    counts: dict[str, int] = {}
    for r in results:
        if r["status"] == 200:
            key = r["body"].get("outcome", "?")
        elif r["status"] is not None:
            key = f"http {r['status']}: {str(r['body'].get('error', ''))[:80]}"
        else:
            key = r["error"][:80]
        counts[key] = counts.get(key, 0) + 1
    return counts


def _latency(results: list[dict[str, Any]]) -> dict[str, float]:
    seconds = [r["seconds"] for r in results]
    return {"p50_s": round(statistics.median(seconds), 3), "p99_s": round(percentile(seconds, 0.99), 3)}


async def _load(url: str, concurrent: int) -> dict[str, Any]:
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
        started = time.perf_counter()
        results = await asyncio.gather(
            *(_ask(session, url, QUESTIONS[n % len(QUESTIONS)]) for n in range(concurrent))
        )
        wall = time.perf_counter() - started
    errors = [r for r in results if r["status"] != 200 or r["body"].get("outcome") != "answered"]
    return {
        "concurrent_asks": concurrent,
        "errors": len(errors),
        "outcomes": _outcomes(results),
        **_latency(results),
        "wall_s": round(wall, 2),
        "asks_per_s": round(concurrent / wall, 1),
    }


async def _swaps_under_load(url: str, settings: Settings, corpus: Path, index: Path) -> dict[str, Any]:
    """Re-ingest ``SWAPS`` times (each publishes a new version) while asks keep coming."""
    done = threading.Event()
    swap_seconds: list[float] = []

    def swap() -> None:
        try:
            for revision in range(1, SWAPS + 1):
                _write_swap_document(corpus, revision)
                started = time.perf_counter()
                run_ingest(settings, [corpus], collection="docs")
                swap_seconds.append(time.perf_counter() - started)
        finally:
            done.set()

    swapper = threading.Thread(target=swap)
    swapper.start()
    results: list[dict[str, Any]] = []
    deadline = time.monotonic() + 600
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
        while not done.is_set() and time.monotonic() < deadline:
            results += await asyncio.gather(*(_ask(session, url, q) for q in QUESTIONS * 4))
    swapper.join()
    failed = [r for r in results if r["status"] != 200 or r["body"].get("outcome") != "answered"]
    mixed = _mixed_versions([r["body"] for r in results if r["status"] == 200], index)
    versions = {r["body"].get("index_version") for r in results if r["status"] == 200}
    return {
        "swaps": len(swap_seconds),
        "queries": len(results),
        "failed_queries": len(failed),
        "answers_mixing_versions": mixed,
        "versions_seen_by_answers": len(versions),
        "swap_s_p50": round(statistics.median(swap_seconds), 2) if swap_seconds else None,
        **_latency(results),
    }


def _mixed_versions(answers: list[dict[str, Any]], index: Path) -> int:
    """Answers whose quoted top passage or cited passages are not in the version they report.

    The version's text is its chunks' and the table headers its evidence units carry: the LLM
    reads a table's rows under their header, which a chunk holding later rows does not repeat."""
    texts: dict[str, tuple[set[str], str]] = {}
    mixed = 0
    for answer in answers:
        version = answer.get("index_version", "")
        if version not in texts:
            snapshot = open_version(index / VERSIONS / version, verify=False, memory_map=True)
            collections = snapshot.collections.values()
            chunks = [c for collection in collections for c in collection.chunks]
            headers = {u.table_header for collection in collections for u in collection.units}
            texts[version] = ({c.chunk_id for c in chunks}, "\n".join([*(c.text for c in chunks), *headers]))
        ids, corpus_text = texts[version]
        quoted = answer["answer"].rsplit(" [1]", 1)[0]
        cited = {c["passage_id"] for c in answer["citations"]}
        if not cited <= ids or quoted not in corpus_text:
            mixed += 1
    return mixed


async def _llm_outage(url: str, llm: FakeLLMServer) -> dict[str, Any]:
    """50 asks in flight, then the LLM server goes away; then 50 more asks."""
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
        in_flight = [
            asyncio.ensure_future(_ask(session, url, QUESTIONS[n % len(QUESTIONS)])) for n in range(50)
        ]
        await asyncio.sleep(1.0)
        await asyncio.to_thread(llm.stop)  # the LLM server goes away
        stopped_at = time.perf_counter()
        during = await asyncio.gather(*in_flight)
        finished_at = time.perf_counter()
        after = await asyncio.gather(*(_ask(session, url, q) for q in QUESTIONS * 6 + QUESTIONS[:2]))
    results = during + after
    return {
        "requests": len(results),
        "outcomes": _outcomes(results),
        "unclear_or_hung": sum(not _clear(r) for r in results),
        "llm_timeout_s": LLM_TIMEOUT_S,
        "max_latency_s": round(max(r["seconds"] for r in results), 2),
        "max_latency_after_stop_s": round(max(r["seconds"] for r in after), 2),
        "in_flight_finished_after_stop_s": round(finished_at - stopped_at, 2),
    }


def _clear(result: dict[str, Any]) -> bool:
    """An answer, a sources-only answer that lists its sources, or an error that says what failed."""
    body = result.get("body") or {}
    if result["status"] == 200:
        return body.get("outcome") == "answered" or (
            body.get("outcome") == "llm_unavailable" and bool(body.get("citations"))
        )
    return result["status"] is not None and bool(body.get("error"))


def _kill_during_feedback(env: dict[str, str], database: Path) -> dict[str, Any]:
    """Feedback pours in; the server is killed with SIGKILL mid-stream; every 201 must be on disk."""
    process, url = start_server(env)
    try:
        acknowledged, not_acknowledged = asyncio.run(_feedback_until_killed(url, process))
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
    with sqlite3.connect(database) as connection:
        stored = {row[0] for row in connection.execute("SELECT feedback_id FROM feedback")}
    return {
        "attempted": FEEDBACK_POSTS,
        "not_acknowledged": not_acknowledged,
        "acknowledged": len(acknowledged),
        "stored": len(stored),
        "acknowledged_lost": len(set(acknowledged) - stored),
        "killed_with": "SIGKILL",
    }


async def _feedback_until_killed(url: str, process: subprocess.Popen) -> tuple[list[int], dict[str, int]]:
    """The feedback ids the server acknowledged, and why the other posts were not (by kind)."""
    acknowledged: list[int] = []
    not_acknowledged: dict[str, int] = {}
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=50), timeout=timeout) as session:
        answer = (await _ask(session, url, QUESTIONS[0]))["body"]["answer_id"]

        async def send(n: int) -> None:
            try:
                async with session.post(
                    f"{url}/v1/feedback", json={"answer_id": answer, "rating": 1 + n % 5, "user": f"u{n}"}
                ) as response:
                    if response.status == 201:
                        acknowledged.append((await response.json())["feedback_id"])
                        return
                    reason = f"http {response.status}"
            except (aiohttp.ClientError, TimeoutError) as exc:  # cut off by the kill
                reason = type(exc).__name__
            not_acknowledged[reason] = not_acknowledged.get(reason, 0) + 1

        async def killer() -> None:
            deadline = time.monotonic() + 60
            while len(acknowledged) < 300 and time.monotonic() < deadline:
                await asyncio.sleep(0.005)
            os.kill(process.pid, signal.SIGKILL)

        await asyncio.gather(killer(), *(send(n) for n in range(FEEDBACK_POSTS)))
    return acknowledged, not_acknowledged
