"""What an ingest reports and is handed: its progress, its report, the documents it embedded,
the engine that converts elsewhere."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import asdict, dataclass, field
from typing import Protocol

import numpy as np

from index_build.conversion import ConversionJob
from index_build.document import ParsedDocument
from index_build.options import IngestOptions
from index_build.version import (
    FileRecord,
)
from pipeline.types import (
    Chunk,
    EvidenceUnit,
)

# Writes one or two sentences situating a chunk in its document (contextual enrichment).
Enricher = Callable[[ParsedDocument, Chunk], str]


class IngestProgress(Protocol):
    """Receives progress as ingest runs (the CLI draws rich progress bars from it)."""

    def start(self, task: str, total: int | None) -> None:
        """A task (``files``, ``pages``, ``chunks``, ``embeddings``) begins."""
        ...

    def advance(self, task: str, amount: int = 1) -> None:
        """``amount`` more units of ``task`` are done."""
        ...


class NoProgress:
    """An :class:`IngestProgress` that shows nothing."""

    def start(self, task: str, total: int | None) -> None:
        pass

    def advance(self, task: str, amount: int = 1) -> None:
        pass


class IngestEngine(Protocol):
    """Converts and embeds files somewhere other than this process (a Ray cluster, say)."""

    def __call__(
        self,
        jobs: list[ConversionJob],
        *,
        options: IngestOptions,
        report: IngestReport,
        progress: IngestProgress,
    ) -> EngineOutcomes:
        """Each job's place in ``jobs`` with its document, vectors filled, or the reason it was
        skipped, in any order; it counts what it embedded in ``report`` and shows
        ``embeddings`` progress."""
        ...


@dataclass(frozen=True, slots=True)
class Failure:
    """A file that was skipped, and why."""

    path: str
    reason: str


@dataclass(slots=True)
class IngestReport:
    """What an ingest did. ``version`` is the live version afterwards."""

    version: str
    published: bool
    documents: int = 0
    pages: int = 0
    chunks: int = 0
    converted: int = 0
    reused: int = 0
    removed: int = 0
    embedded_chunks: int = 0
    embedded_units: int = 0  # embedded alone, not pooled from their chunk
    pooled_units: int = 0
    units: int = 0
    ignored: list[str] = field(default_factory=list)
    reused_embeddings: int = 0
    seconds: float = 0.0
    converting_seconds: float = 0.0
    embedding_seconds: float = 0.0
    writing_seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(slots=True)
class IngestedDocument:
    record: FileRecord
    chunks: list[Chunk]
    embeddings: list[np.ndarray | None]
    units: list[EvidenceUnit] = field(default_factory=list)
    unit_embeddings: list[np.ndarray | None] = field(default_factory=list)
    seconds: float = 0.0  # spent converting and chunking it


# What an engine yields as files are done: each job's place among the jobs, with its embedded
# document or the reason it was skipped; and an engine bound to one ingest.
EngineOutcomes = Generator[tuple[int, IngestedDocument | str], None, None]


DocumentsOf = Callable[[list[ConversionJob]], EngineOutcomes]
