"""Turn source files into chunks and evidence units, in worker processes when that pays.

Converting a PDF (docling-parse, then rebuilding its lines and tables) and chunking it are
Python code that holds the interpreter lock. Ingest embeds on a thread beside them, and that
thread needs the lock between ONNX Runtime calls, so in one process the two wait on each
other. :class:`ConversionPool` converts in child processes instead, one or more, at a lower
CPU priority than the ingesting process: embedding is ingest's critical path, conversion
fills the CPU it leaves.

A child that dies (a file that crashes the PDF parser) costs only that file: the files that
were in flight are converted again one at a time in a fresh child, and the one that kills it
again is reported as a failure like any unreadable file.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from index_build.chunking import ChunkingOptions, chunk_pieces
from index_build.convert import DocumentConverter
from index_build.document import ParsedDocument
from index_build.evidence import document_units
from index_build.metadata import describe
from index_build.sources import SourceFile
from index_build.version import FileRecord
from pipeline.errors import DocumentError
from pipeline.protocols import Tokenizer
from pipeline.types import Chunk, EvidenceUnit

log = logging.getLogger(__name__)

CONVERT_NICENESS = 5  # a child converts at this niceness, so embedding keeps its CPU when both run


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


def convert_file(
    job: ConversionJob,
    converter: DocumentConverter,
    setup: ConversionSetup,
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> ConvertedFile:
    """Convert, chunk and describe one file; raises :class:`DocumentError` naming the reason.

    ``embed`` is needed by the semantic chunker only."""
    began = time.perf_counter()
    source = job.source
    parsed = converter.convert(source.path)
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
    converter = DocumentConverter(setup.pdf_models_dir)
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
    """

    def __init__(self, processes: int, setup: ConversionSetup) -> None:
        if processes < 1:
            raise ValueError("a conversion pool needs at least one process")
        self.processes = processes
        self.setup = setup

    def convert(self, jobs: Sequence[ConversionJob]) -> Generator[tuple[ConversionJob, Outcome], None, None]:
        """Each job's outcome in order; see the class docstring."""
        waiting = deque(jobs)
        in_flight: deque[tuple[ConversionJob, Future[ConvertedFile]]] = deque()
        suspects = 0  # jobs in flight when a child died: converted one at a time
        executor = self._start()
        try:
            while waiting or in_flight:
                window = 1 if suspects else self.processes + 1
                while waiting and len(in_flight) < window:
                    try:
                        future = executor.submit(_convert_in_child, waiting[0])
                    except BrokenProcessPool:
                        if in_flight:
                            break  # a child died since the last result: its job, in flight, says so below
                        executor = self._restart(executor)  # it died idle: no job was lost
                        continue
                    in_flight.append((waiting.popleft(), future))
                job, future = in_flight.popleft()
                try:
                    outcome: Outcome = future.result()
                except (DocumentError, OSError) as exc:
                    outcome = failure_reason(exc)
                except BrokenProcessPool:
                    executor = self._restart(executor)
                    if suspects:  # alone in a fresh child: this file is the one
                        log.warning("the converter's process died on %s", job.source.path)
                        outcome = "the converter crashed on this file (its process died)"
                    else:
                        unfinished = [job, *(j for j, _ in in_flight)]
                        in_flight.clear()
                        waiting.extendleft(reversed(unfinished))
                        suspects = len(unfinished)
                        continue
                suspects = max(0, suspects - 1)
                yield job, outcome
        finally:
            executor.shutdown(wait=False, cancel_futures=True)

    def _restart(self, broken: ProcessPoolExecutor) -> ProcessPoolExecutor:
        """A fresh pool; the broken one's surviving children are terminated.

        CPython's manager thread terminates the children it knows of when a pool breaks, but
        a child that a submit spawned at that moment outlives it, idle, and the manager
        thread then waits for it forever: the interpreter never exits. Python 3.14 has
        ``terminate_workers()``; before it, the pool's process table is the only handle.
        """
        children = list((broken._processes or {}).values())
        broken.shutdown(wait=False, cancel_futures=True)
        for child in children:
            if child.is_alive():
                child.terminate()
        return self._start()

    def _start(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_child,
            initargs=(self.setup,),
        )


# A child process's converter and setup, made once by its initializer.
_child: tuple[DocumentConverter, ConversionSetup] | None = None


def _start_child(setup: ConversionSetup) -> None:
    global _child
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(CONVERT_NICENESS)
    _child = (DocumentConverter(setup.pdf_models_dir), setup)


def _convert_in_child(job: ConversionJob) -> ConvertedFile:
    if _child is None:
        raise RuntimeError("a conversion process was started without its initializer")
    converter, setup = _child
    return convert_file(job, converter, setup)
