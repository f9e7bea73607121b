"""Turn source files into chunks and evidence units, in worker processes when that pays.

Converting a PDF (docling-parse, then rebuilding its lines and tables) and chunking it are
Python code that holds the interpreter lock. Ingest embeds on a thread beside them, and that
thread needs the lock between ONNX Runtime calls, so in one process the two wait on each
other. :class:`ConversionPool` converts in child processes instead, one or more, at a lower
CPU priority than the ingesting process: embedding is ingest's critical path, conversion
fills the CPU it leaves.

A child that dies (a file that crashes the PDF parser) costs only that file: the files that
were in flight are converted again one at a time in a fresh child, and the one that kills it
again is reported as a failure like any unreadable file. A child over the memory limit, or
on one file longer than the time limit (:class:`~index_build.limits.IngestLimits`), is
killed by a watchdog, and that file is reported with the limit it passed.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from index_build.chunking import ChunkingOptions, chunk_pieces
from index_build.convert import DocumentConverter
from index_build.document import ParsedDocument
from index_build.evidence import document_units
from index_build.limits import (
    IngestLimits,
    OverLimitError,
    check_chars,
    check_chunks,
    check_pages,
)
from index_build.metadata import describe
from index_build.sources import SourceFile
from index_build.version import FileRecord
from index_build.watchdog import ConversionWatchdog
from pipeline.errors import DocumentError
from pipeline.protocols import Tokenizer
from pipeline.types import Chunk, EvidenceUnit

log = logging.getLogger(__name__)

CONVERT_NICENESS = 5  # a child converts at this niceness, so embedding keeps its CPU when both run
ORPHAN_CHECK_S = 1.0  # how often a child looks whether its ingesting process is still there


@dataclass(frozen=True, slots=True)
class ConversionJob:
    """A file to convert, with the content hash its record will carry."""

    source: SourceFile
    sha256: str


@dataclass(frozen=True, slots=True)
class ConvertedFile:
    """A file's record, chunks and evidence units; ``parsed`` is kept for contextual enrichment."""

    record: FileRecord
    parsed: ParsedDocument
    chunks: list[Chunk]
    units: list[EvidenceUnit]
    seconds: float  # spent converting and chunking it


# What a job came to: the converted file, or the reason it was skipped.
Outcome = ConvertedFile | str


@dataclass(frozen=True, slots=True)
class ConversionSetup:
    """What converting and chunking need besides the file: everything a child process is given once."""

    tokenizer: Tokenizer
    options: ChunkingOptions
    pdf_models_dir: Path | None = None
    limits: IngestLimits = field(default_factory=IngestLimits)


def convert_file(
    job: ConversionJob,
    converter: DocumentConverter,
    setup: ConversionSetup,
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> ConvertedFile:
    """Convert, chunk and describe one file; raises :class:`DocumentError` naming the reason
    (:class:`OverLimitError` for a document over the ingest limits).

    ``embed`` is needed by the semantic chunker only."""
    began = time.perf_counter()
    source = job.source
    parsed = converter.convert(source.path)
    check_pages(parsed.page_count, setup.limits)
    check_chars(sum(len(block.text) for block in parsed.blocks), setup.limits)
    chunked = chunk_pieces(
        parsed,
        doc_id=source.doc_id,
        collection=source.collection,
        source=str(source.path),
        tokenizer=setup.tokenizer,
        options=setup.options,
        embed=embed,
    )
    if not chunked:
        raise DocumentError("no text to index")
    check_chunks(len(chunked), setup.limits)
    units = document_units(parsed, chunked)
    chunks = [chunk for chunk, _ in chunked]
    meta = describe(source.path, parsed, source.doc_id)
    record = FileRecord(
        path=str(source.path),
        collection=source.collection,
        doc_id=source.doc_id,
        sha256=job.sha256,
        title=parsed.title,
        pages=parsed.page_count,
        chunks=len(chunks),
        units=len(units),
        relative=str(source.path.relative_to(source.root.parent)),
        organisation=meta.organisation,
        names=meta.names,
        period=meta.period,
        version=meta.version,
    )
    return ConvertedFile(record, parsed, chunks, units, time.perf_counter() - began)


def failure_reason(exc: DocumentError | OSError) -> str:
    """The reason a file was skipped, as the ingest report shows it."""
    if isinstance(exc, OSError):
        return f"cannot read file: {exc.strerror or exc}"
    return str(exc)


def convert_in_process(
    jobs: Sequence[ConversionJob],
    setup: ConversionSetup,
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> Generator[tuple[ConversionJob, Outcome], None, None]:
    """Each job's outcome in order, converted here, one after the other."""
    converter = DocumentConverter(setup.pdf_models_dir, setup.limits)
    for job in jobs:
        try:
            yield job, convert_file(job, converter, setup, embed)
        except (DocumentError, OSError) as exc:
            yield job, failure_reason(exc)


class ConversionPool:
    """Converts jobs in ``processes`` child processes, yielding outcomes in job order.

    At most ``processes + 1`` files are in flight, so converted documents do not pile up in
    memory while the embedder catches up. Children are started with ``spawn`` (the ingesting
    process runs ONNX Runtime and tokenizer threads, which ``fork`` would copy mid-flight),
    ignore Ctrl-C (the ingesting process decides), and run at :data:`CONVERT_NICENESS`.
    A :class:`ConversionWatchdog` kills a child whose memory or time on one file passes the limits;
    that file is reported with the limit, and the files it shared the pool with are converted
    again.
    """

    def __init__(self, processes: int, setup: ConversionSetup) -> None:
        if processes < 1:
            raise ValueError("a conversion pool needs at least one process")
        self.processes = processes
        self.setup = setup
        self._executor: ProcessPoolExecutor | None = None
        self._running: tuple[tempfile.TemporaryDirectory[str], ConversionWatchdog] | None = None

    def __enter__(self) -> ConversionPool:
        """Start the children and their watchdog once, for several :meth:`convert` calls (a
        long-lived worker keeps its converters warm); without it each call starts its own."""
        board = tempfile.TemporaryDirectory(prefix="docfinder-convert-")
        watchdog = ConversionWatchdog(Path(board.name), self.setup.limits, self._children)
        self._executor = self._start(Path(board.name))
        watchdog.start()
        self._running = (board, watchdog)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._running is None:
            return
        board, watchdog = self._running
        self._running = None
        watchdog.stop()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        board.cleanup()

    def convert(self, jobs: Sequence[ConversionJob]) -> Generator[tuple[ConversionJob, Outcome], None, None]:
        """Each job's outcome in order; see the class docstring."""
        with ExitStack() as started_here:
            if self._running is None:
                started_here.enter_context(self)
            assert self._running is not None
            board, watchdog = self._running
            yield from self._convert(jobs, watchdog, Path(board.name))

    def _convert(
        self, jobs: Sequence[ConversionJob], watchdog: ConversionWatchdog, board: Path
    ) -> Generator[tuple[ConversionJob, Outcome], None, None]:
        waiting = deque(jobs)
        in_flight: deque[tuple[ConversionJob, Future[ConvertedFile]]] = deque()
        suspects = 0  # jobs in flight when a child died unexplained: converted one at a time
        while waiting or in_flight:
            window = 1 if suspects else self.processes + 1
            while waiting and len(in_flight) < window:
                verdict = watchdog.verdicts.pop(waiting[0].source.doc_id, None)
                if verdict is not None:  # killed while in flight beside another job: not run again
                    in_flight.append((waiting.popleft(), _failed(OverLimitError(verdict))))
                    continue
                assert self._executor is not None
                try:
                    future = self._executor.submit(_convert_in_child, waiting[0])
                except BrokenProcessPool:
                    if in_flight:
                        break  # a child died since the last result: its job, in flight, says so below
                    self._restart(board)  # it died idle: no job was lost
                    continue
                in_flight.append((waiting.popleft(), future))
            job, future = in_flight.popleft()
            try:
                outcome: Outcome = future.result()
            except (DocumentError, OSError) as exc:
                outcome = failure_reason(exc)
            except BrokenProcessPool:
                self._restart(board)
                explained = bool(watchdog.verdicts)
                verdict = watchdog.verdicts.pop(job.source.doc_id, None)
                if verdict is not None:
                    log.warning("stopped converting %s: %s", job.source.path, verdict)
                    outcome = verdict
                elif suspects and not explained:  # alone in a fresh child: this file is the one
                    log.warning("the converter's process died on %s", job.source.path)
                    outcome = "the converter crashed on this file (its process died)"
                else:
                    unfinished = [job, *(j for j, _ in in_flight)]
                    in_flight.clear()
                    waiting.extendleft(reversed(unfinished))
                    suspects = 0 if explained else len(unfinished)
                    continue
                rest = [j for j, _ in in_flight]  # they shared the pool the kill broke: again
                in_flight.clear()
                waiting.extendleft(reversed(rest))
            suspects = max(0, suspects - 1)
            yield job, outcome

    def _children(self) -> list[multiprocessing.process.BaseProcess]:
        executor = self._executor
        return list((executor._processes or {}).values()) if executor is not None else []

    def _restart(self, board: Path) -> None:
        """A fresh pool; the broken one's surviving children are terminated.

        CPython's manager thread terminates the children it knows of when a pool breaks, but
        a child that a submit spawned at that moment outlives it, idle, and the manager
        thread then waits for it forever: the interpreter never exits. Python 3.14 has
        ``terminate_workers()``; before it, the pool's process table is the only handle.
        """
        children = self._children()
        assert self._executor is not None
        self._executor.shutdown(wait=False, cancel_futures=True)
        for child in children:
            if child.is_alive():
                child.terminate()
        self._executor = self._start(board)

    def _start(self, board: Path) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_child,
            initargs=(self.setup, board, os.getpid()),
        )


def _failed(error: Exception) -> Future[ConvertedFile]:
    future: Future[ConvertedFile] = Future()
    future.set_exception(error)
    return future


# A child process's converter, setup and watchdog board, made once by its initializer.
_child: tuple[DocumentConverter, ConversionSetup, Path] | None = None


def _start_child(setup: ConversionSetup, board: Path, parent: int) -> None:
    global _child
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(CONVERT_NICENESS)
    threading.Thread(target=_exit_with, args=(parent,), name="orphan-check", daemon=True).start()
    _child = (DocumentConverter(setup.pdf_models_dir, setup.limits), setup, board)


def _exit_with(parent: int) -> None:
    """End this child once its ingesting process is gone (killed, say, by the OOM killer): it
    holds both ends of the pool's queues, so it would otherwise wait for work for ever."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK_S)
    os._exit(1)


def _convert_in_child(job: ConversionJob) -> ConvertedFile:
    if _child is None:
        raise RuntimeError("a conversion process was started without its initializer")
    converter, setup, board = _child
    note = board / str(os.getpid())  # for the watchdog: the file, and since when its time counts
    note.write_text(f"{job.source.doc_id} inf", encoding="ascii")  # memory counts from here
    converter.warm_up(job.source.path)  # the first import of a parser is not the file's time
    note.write_text(f"{job.source.doc_id} {time.time()}", encoding="ascii")
    try:
        return convert_file(job, converter, setup)
    finally:
        note.unlink(missing_ok=True)
