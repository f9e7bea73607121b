"""Files convert in child processes beside ingest's embedding, in order, and a file that kills
the process converting it costs only itself."""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from index_build.builder import ingest
from index_build.chunking import ChunkingOptions
from index_build.conversion import ConversionJob, ConversionPool, ConversionSetup, convert_in_process
from index_build.limits import IngestLimits
from index_build.options import IngestOptions
from index_build.snapshot import open_live
from index_build.sources import discover, file_sha256
from tests.fakes import POISON, CrashingTokenizer, WhitespaceTokenizer
from tests.samples import write_text_pdf

PARAGRAPH = "Antenna {i} is serviced every {i} months; the team checks the cryostat and the drive motors."


def write_manuals(folder: Path, count: int, poisoned: tuple[int, ...] = ()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        body = PARAGRAPH.format(i=i) + (f" The {POISON} switch is red." if i in poisoned else "")
        (folder / f"manual-{i}.txt").write_text(f"Manual {i}\n\n{body}\n")
    return folder


def jobs_for(folder: Path) -> list[ConversionJob]:
    return [ConversionJob(s, file_sha256(s.path)) for s in discover([folder], None).sources]


def test_the_pool_gives_what_converting_here_gives_in_the_same_order(sample_corpus):
    (sample_corpus / "empty.md").write_bytes(b"")
    (sample_corpus / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(2048))
    jobs = jobs_for(sample_corpus)
    setup = ConversionSetup(WhitespaceTokenizer(), ChunkingOptions(max_tokens=64))

    here = list(convert_in_process(jobs, setup))
    pooled = list(ConversionPool(2, setup).convert(jobs))

    assert [job for job, _ in pooled] == jobs
    for (_, expected), (job, outcome) in zip(here, pooled, strict=True):
        if isinstance(expected, str):
            assert outcome == expected, job.source.path.name
        else:
            assert outcome.record == expected.record
            assert outcome.chunks == expected.chunks and outcome.units == expected.units
    reasons = {job.source.path.name: o for job, o in pooled if isinstance(o, str)}
    assert reasons.keys() == {"empty.md", "corrupt.pdf"} and reasons["empty.md"] == "empty file"


def test_a_file_that_kills_its_process_fails_alone(tmp_path):
    jobs = jobs_for(write_manuals(tmp_path / "manuals", 7, poisoned=(2, 5)))
    setup = ConversionSetup(CrashingTokenizer(), ChunkingOptions(max_tokens=64))

    outcomes = list(ConversionPool(2, setup).convert(jobs))

    assert [job for job, _ in outcomes] == jobs
    failed = {job.source.path.name: o for job, o in outcomes if isinstance(o, str)}
    assert failed == dict.fromkeys(["manual-2.txt", "manual-5.txt"], failed["manual-2.txt"])
    assert "crashed" in failed["manual-2.txt"]
    converted = [o for _, o in outcomes if not isinstance(o, str)]
    assert [Path(o.record.path).name for o in converted] == [f"manual-{i}.txt" for i in (0, 1, 3, 4, 6)]
    assert all(o.chunks and o.units for o in converted)


@dataclass
class EmbedderWithTokenizer:
    """The real embedder's vectors with another tokenizer (the one chunking uses)."""

    inner: object
    tokenizer: object

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_an_ingest_reports_the_crashing_file_and_publishes_the_rest(tmp_path, embedder):
    folder = write_manuals(tmp_path / "manuals", 3, poisoned=(1,))
    for name in ("transporter", "cryostat"):  # two PDFs: ingest converts in a child process
        write_text_pdf(folder / f"{name}.pdf", name.title(), [f"The {name} is serviced yearly."])
    report = ingest(
        tmp_path / "index",
        [folder],
        embedder=EmbedderWithTokenizer(embedder, CrashingTokenizer()),
        options=IngestOptions(chunking=ChunkingOptions(max_tokens=64)),
    )

    assert report.published and (report.documents, report.converted) == (4, 4)
    assert [Path(f.path).name for f in report.failures] == ["manual-1.txt"]
    assert "crashed" in report.failures[0].reason
    snapshot = open_live(tmp_path / "index", memory_map=True)
    sources = {Path(c.source).name for c in snapshot.collections["manuals"].chunks}
    assert sources == {"cryostat.pdf", "manual-0.txt", "manual-2.txt", "transporter.pdf"}
    vectors = snapshot.collections["manuals"].embeddings
    assert np.allclose(np.linalg.norm(np.asarray(vectors), axis=1), 1.0, atol=1e-3)


class CountingHereTokenizer(WhitespaceTokenizer):
    """Records which processes counted with it: a copy sent to a child records there, not here."""

    def __init__(self) -> None:
        self.processes: set[int] = set()

    def count(self, text: str) -> int:
        self.processes.add(os.getpid())
        return super().count(text)


def test_every_file_converts_in_a_guarded_child_unless_a_trusted_corpus_asks_otherwise(tmp_path, embedder):
    """Round three of hardening, finding 2: small files converted in the ingesting process, where
    no memory or time limit applies (a 240 KB Markdown table took an ingest past 12 GB)."""
    folder = write_manuals(tmp_path / "manuals", 2)
    options = IngestOptions(chunking=ChunkingOptions(max_tokens=64))
    elsewhere = CountingHereTokenizer()
    report = ingest(
        tmp_path / "index", [folder], embedder=EmbedderWithTokenizer(embedder, elsewhere), options=options
    )
    assert report.converted == 2 and elsewhere.processes == set(), "by default no file converts here"

    trusted = IngestOptions(
        chunking=ChunkingOptions(max_tokens=64), limits=IngestLimits(convert_here_max_mb=1)
    )
    (folder / "cryostat.md").write_text("# Cryostat\n\nThe cryostat is serviced yearly.\n")
    here = CountingHereTokenizer()
    ingest(tmp_path / "index", [folder], embedder=EmbedderWithTokenizer(embedder, here), options=trusted)
    assert here.processes == {os.getpid()}, "a trusted corpus's small files may convert here"
    for name, write in (("pdf", _one_pdf), ("large", _large_html)):
        write(folder)
        (folder / "manual-0.txt").write_text(f"Manual 0\n\nRewritten for the {name} case.\n")
        guarded = CountingHereTokenizer()
        report = ingest(
            tmp_path / "index", [folder], embedder=EmbedderWithTokenizer(embedder, guarded), options=trusted
        )
        assert report.converted == 2 and guarded.processes == set(), f"{name}: all in a child process"


def _one_pdf(folder: Path) -> None:
    write_text_pdf(folder / "transporter.pdf", "Transporter", ["The transporter is serviced yearly."])


def _large_html(folder: Path) -> None:  # over 1 MB, mostly a comment: little text to embed
    padding = "<!-- " + "x" * 1_100_000 + " -->"
    (folder / "frame.html").write_text(
        f"<html><body>{padding}<h1>Frame</h1><p>Tighten every bolt.</p></body></html>"
    )


def test_what_a_child_is_sent_fits_in_a_pipe(embedder):
    """A spawned child is sent its start-up arguments in one write to a 64 KB pipe whose read
    end the parent holds until the write ends: if they do not fit and the child dies first
    (an import error, an out-of-memory kill), the ingest would wait for ever."""
    setup = ConversionSetup(embedder.tokenizer, ChunkingOptions())
    sent = pickle.dumps(setup)
    assert len(sent) < 64 * 1024, len(sent)
    received = pickle.loads(sent).tokenizer
    text = "Net revenue for the three months ended July 1, 2023 was $12,949 million."
    assert received.offsets(text) == embedder.tokenizer.offsets(text)
