"""A ``kill -9`` at any point of an ingest leaves the previous version live and searchable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from index_build.layout import BUILDING_PREFIX, VERSIONS, live_version_id
from index_build.snapshot import open_live
from pipeline.retrieval.search import SearchRequest, retrieve
from tests.conftest import REPO
from tests.samples import write_text_pdf

PARAGRAPH = (
    "Section {i}.{j} explains how antenna {i} is serviced: the team checks the cryostat, the "
    "receiver cartridges and the drive motors, records the results in the log and reports any fault "
    "to the engineering desk, which schedules a repair before the next observing block begins."
)


def write_corpus(root: Path, files: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        body = "\n\n".join(PARAGRAPH.format(i=i, j=j) for j in range(8))
        (root / f"antenna-{i:03d}.md").write_text(f"# Antenna {i}\n\n## Servicing\n\n{body}\n")


def run_ingest(corpus: Path, index: Path) -> subprocess.CompletedProcess:
    """A whole ingest in a subprocess, as an operator would run it."""
    return subprocess.run(
        [sys.executable, "-m", "server.doors.cli", "ingest", str(corpus), "--index", str(index)],
        cwd=REPO,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def start_ingest(corpus: Path, index: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "server.doors.cli", "ingest", str(corpus), "--index", str(index), "--json"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def children_of(pid: int) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(p) == pid]


def _parent(process: Path) -> int:
    try:
        return int((process / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def kill_when(process: subprocess.Popen, ready, timeout: float = 120.0) -> bool:
    """SIGKILL ``process`` as soon as ``ready()`` holds; False if it finished first. Its
    conversion processes must end with it, not linger as orphans."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        if ready():
            children = children_of(process.pid)
            process.send_signal(signal.SIGKILL)
            process.wait()
            gone_by = time.monotonic() + 10
            while any(Path(f"/proc/{child}").exists() for child in children) and time.monotonic() < gone_by:
                time.sleep(0.1)
            left = [child for child in children if Path(f"/proc/{child}").exists()]
            assert not left, f"conversion processes {left} outlived the killed ingest"
            return True
        time.sleep(0.002)
    process.kill()
    raise AssertionError("ingest neither finished nor reached the kill point in time")


def assert_previous_version_serves(index: Path, version: str, embedder) -> None:
    assert live_version_id(index) == version
    snapshot = open_live(index, memory_map=True)  # verifies every checksum
    hits = retrieve(snapshot, embedder, SearchRequest.of("proposal deadline", k=1)).hits
    assert Path(hits[0].chunk.source).name == "observing.md"


def test_kill_9_during_ingest_keeps_the_previous_version_live(sample_corpus, tmp_path, embedder):
    index = tmp_path / "index"
    first = run_ingest(sample_corpus, index)
    assert first.returncode == 0, first.stderr.decode()
    version = live_version_id(index)
    write_corpus(sample_corpus / "antennas", files=200)  # an ingest of several seconds, to kill it midway
    write_text_pdf(sample_corpus / "antennas" / "manual.pdf", "Manual", ["The antenna is parked in wind."])
    # (with a PDF among them, files convert in a child process, which must die with the ingest)

    # Kill once while documents are converted and embedded, once while the new version is written.
    started = time.monotonic()
    mid_run = start_ingest(sample_corpus, index)
    assert kill_when(mid_run, lambda: time.monotonic() - started > 6.0)
    assert_previous_version_serves(index, version, embedder)

    building = index / VERSIONS
    writing = start_ingest(sample_corpus, index)
    killed_while_writing = kill_when(
        writing, lambda: any(p.name.startswith(BUILDING_PREFIX) for p in building.iterdir())
    )
    if killed_while_writing:
        assert_previous_version_serves(index, version, embedder)
    else:  # the write phase was too quick to catch: the ingest completed, which must also be consistent
        assert writing.returncode == 0, writing.stderr.read().decode()

    final = run_ingest(sample_corpus, index)
    assert final.returncode == 0, final.stderr.decode()
    assert live_version_id(index) != version
    assert not [p for p in building.iterdir() if p.name.startswith(BUILDING_PREFIX)]
    snapshot = open_live(index, memory_map=True)
    hits = retrieve(
        snapshot, embedder, SearchRequest.of("servicing antenna 17 cryostat", k=3, mode="bm25")
    ).hits
    assert any("antenna-017" in h.chunk.source for h in hits)
