"""Scale: a synthetic index of 100,000 and 1,000,000 chunks, built, sized, served and searched.

No documents and no embedder: each chunk is 60 words drawn from a 50,000-word vocabulary
with a Zipf distribution (as words are in real text), 100 chunks to a document, and its
embedding is a random unit vector (384 dimensions, as the packaged MiniLM's). The index is
written by the real writer (:func:`index_build.builder.write_version`: BM25 indexes, HNSW
vector index, sparse set, checksummed manifest) and searched through the real retrieval
(:func:`pipeline.retrieval.search.retrieve`, no reranker), with queries of three mid-frequency
words whose query vector is random too.

For each size: build time, size on disk, and, in a fresh serving process, the RSS after
opening the index and after the searches, and search p50/p95 per mode (bm25, dense,
hybrid). Then a second process opens the same index while the first is still up: with the
arrays memory-mapped (the default, ``index_memory_map``) both share one copy in the page
cache, which their proportional set sizes (PSS, shared pages split between them) show.
``BENCH_SCALE_SIZES=100000`` picks the sizes. Evidence units are not generated (they are
searched inside one document at a time, so they do not grow a search's cost with the index).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.benchmarks import REPO
from index_build.builder import VersionPart, write_version
from index_build.layout import writer_lock
from index_build.options import IngestOptions
from index_build.snapshot import open_live
from index_build.version import FileRecord
from pipeline.retrieval.search import RetrievalConfig, SearchRequest, retrieve
from pipeline.types import Chunk

DIMENSIONS = 384
VOCABULARY = 50_000
WORDS_PER_CHUNK = 60
CHUNKS_PER_DOCUMENT = 100
QUERIES = 200
MODES = ("bm25", "dense", "hybrid")


class RandomEmbedder:
    """Random unit vectors, the same for the same text: a stand-in that costs no model."""

    name = "synthetic-random"
    backend = "numpy"
    dimensions = DIMENSIONS
    max_tokens = 256
    tokenizer = None

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.vstack([self.embed_query(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        vector = np.random.default_rng(seed).standard_normal(DIMENSIONS).astype(np.float32)
        return vector / np.linalg.norm(vector)

    def forget_queries(self) -> None:
        pass  # nothing is remembered


def _words(count: int) -> list[str]:
    """``count`` distinct pseudo-words ("bba", "bbb", ...), the same on every run."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = []
    for i in range(count):
        n, word = i + 26 * 27, ""
        while n:
            n, r = divmod(n, 26)
            word = letters[r] + word
        words.append(word)
    return words


def _zipf_ids(rng: np.random.Generator, size: int) -> np.ndarray:
    """Word ids with a Zipf (s = 1.1) distribution over the vocabulary (0 is the most frequent)."""
    ranks = np.arange(1, VOCABULARY + 1)
    weights = 1.0 / ranks**1.1
    return rng.choice(VOCABULARY, size=size, p=weights / weights.sum())


def build_synthetic(index_dir: Path, chunks: int, seed: int = 0) -> dict[str, Any]:
    """Write a synthetic index of ``chunks`` chunks into ``index_dir``; build time and size."""
    rng = np.random.default_rng(seed)
    words = np.array(_words(VOCABULARY))
    started = time.perf_counter()
    parts = []
    for doc in range(0, chunks, CHUNKS_PER_DOCUMENT):
        count = min(CHUNKS_PER_DOCUMENT, chunks - doc)
        doc_id = f"synthetic{doc // CHUNKS_PER_DOCUMENT:06d}"
        ids = _zipf_ids(rng, count * WORDS_PER_CHUNK).reshape(count, WORDS_PER_CHUNK)
        texts = [" ".join(words[row]) for row in ids]
        vectors = rng.standard_normal((count, DIMENSIONS)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        source = f"/synthetic/{doc_id}.md"
        part_chunks = [
            Chunk(f"{doc_id}-{i:04d}", doc_id, "synthetic", source, doc_id, ("Section",), (0, 0), text, "")
            for i, text in enumerate(texts)
        ]
        record = FileRecord(source, "synthetic", doc_id, "", doc_id, 0, count, relative=f"{doc_id}.md")
        parts.append(VersionPart(record, part_chunks, vectors))
    generated = time.perf_counter() - started
    with writer_lock(index_dir):
        write_version(index_dir, parts, RandomEmbedder(), IngestOptions(keep_versions=1))  # type: ignore[arg-type]
    size = sum(p.stat().st_size for p in index_dir.rglob("*") if p.is_file())
    return {
        "chunks": chunks,
        "generate_s": round(generated, 1),
        "build_s": round(time.perf_counter() - started - generated, 1),
        "disk_mb": round(size / 2**20, 1),
    }


_MEMORY_LINES = {"Rss": "rss_mb", "Pss": "pss_mb", "Anonymous": "anonymous_mb"}


def _memory_mb(pid: int) -> dict[str, float]:
    """RSS, PSS and anonymous memory of a process, from /proc.

    PSS splits shared pages between their users. Anonymous memory is the process's own (the
    Python objects); the rest of its RSS is pages of memory-mapped index files, which every
    process serving the version shares and the kernel can drop and read again under pressure.
    """
    values = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in _MEMORY_LINES:
            values[_MEMORY_LINES[name]] = round(int(rest.split()[0]) / 1024, 1)
    return values


def probe(index_dir: Path, memory_map: bool) -> None:
    """Serving process: open the index, report memory, search, report latencies, wait for stdin."""
    started = time.perf_counter()
    snapshot = open_live(index_dir, memory_map=memory_map)
    opened = {"open_s": round(time.perf_counter() - started, 2), **_memory_mb(os.getpid())}
    rng = np.random.default_rng(1)
    words = _words(VOCABULARY)
    queries = [" ".join(words[i] for i in rng.integers(50, 5_000, 3)) for _ in range(QUERIES)]
    embedder = RandomEmbedder()
    config = RetrievalConfig(candidates=16, max_passages=10)
    latency = {}
    for mode in MODES:
        times = []
        for query in queries:
            began = time.perf_counter()
            retrieve(snapshot, embedder, SearchRequest.of(query, mode=mode), config)  # type: ignore[arg-type]
            times.append((time.perf_counter() - began) * 1000)
        times.sort()
        latency[mode] = {
            "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1),
        }
    print(json.dumps({"opened": opened, "search": latency, "after": _memory_mb(os.getpid())}), flush=True)
    sys.stdin.readline()  # stay up while the parent measures a second process beside this one


def _serve(index_dir: Path, memory_map: bool) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "evaluation.benchmarks.scale", "--probe", str(index_dir.resolve())]
        + ([] if memory_map else ["--no-memory-map"]),
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait()
        raise RuntimeError(f"the serving probe exited with status {process.returncode}")
    return process, json.loads(line)


def measure_serving(index_dir: Path, memory_map: bool) -> dict[str, Any]:
    """One serving process, then a second beside it: memory and search latency."""
    first, report = _serve(index_dir, memory_map)
    second = None
    try:
        second, _ = _serve(index_dir, memory_map)
        both = [_memory_mb(first.pid), _memory_mb(second.pid)]
    finally:
        for process in (first, second):
            if process is not None and process.stdin is not None:
                process.stdin.close()
                process.wait(timeout=60)
    one = report["after"]["rss_mb"]
    two = sum(m["pss_mb"] for m in both)
    return {
        "memory_map": memory_map,
        **report,
        "two_processes": {"pss_mb": [m["pss_mb"] for m in both], "total_pss_mb": round(two, 1)},
        "two_over_one": round(two / one, 3),
    }


def bench_scale(work_dir: Path = Path(".docfinder/scale")) -> dict[str, Any]:
    """Every configured size: build, then serve memory-mapped and (at the smallest) copied."""
    sizes = [int(s) for s in os.environ.get("BENCH_SCALE_SIZES", "100000,1000000").split(",") if s]
    results = []
    for size in sizes:
        index_dir = work_dir / f"synthetic-{size}"
        shutil.rmtree(index_dir, ignore_errors=True)
        build = build_synthetic(index_dir, size)
        serving = [measure_serving(index_dir, memory_map=True)]
        if size == min(sizes):
            serving.append(measure_serving(index_dir, memory_map=False))
        results.append({"build": build, "serving": serving})
        shutil.rmtree(index_dir, ignore_errors=True)
    return {"machine_cpus": os.cpu_count(), "sizes": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--probe", type=Path, help="serve this index and report (internal)")
    parser.add_argument("--no-memory-map", action="store_true")
    args = parser.parse_args()
    if args.probe:
        probe(args.probe, memory_map=not args.no_memory_map)
    else:
        print(json.dumps(bench_scale(), indent=2))


if __name__ == "__main__":
    main()
