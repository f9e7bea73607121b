"""Ingest: files → docling → chunks → embeddings → a new index version, made live atomically.

Incremental: a file whose content hash and collection are unchanged keeps its chunks and
embeddings; a changed file is converted and chunked again (chunks whose text did not change
keep their embeddings); files that vanished from an ingested folder leave the index. Files
ingested from other folders are kept as they are. Bad files are reported and skipped.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from index_build.chunking import CHUNKERS, ChunkingOptions
from index_build.conversion import (
    ConversionJob,
    ConversionPool,
    ConversionSetup,
    ConvertedFile,
    Outcome,
    convert_in_process,
    failure_reason,
)
from index_build.convert import SUPPORTED_SUFFIXES
from index_build.document import ParsedDocument
from index_build.evidence import EVIDENCE_VERSION
from index_build.layout import (
    building_dir,
    new_version_id,
    prune_versions,
    publish,
    remove_stale_builds,
    writer_lock,
)
from index_build.limits import MB, IngestLimits, expanded_bytes
from index_build.snapshot import IndexSnapshot, open_live
from index_build.sources import SourceFile, discover, file_sha256
from index_build.version import (
    COLLECTIONS,
    Bm25Params,
    CollectionData,
    FileRecord,
    write_collection,
    write_manifest,
)
from pipeline.errors import ConfigurationError, DocumentError, IndexCorruptError, IndexNotFoundError
from pipeline.protocols import Embedder, Tokenizer
from pipeline.retrieval.sparse import DEFAULT_THRESHOLD
from pipeline.types import (
    MODEL_TEXT_VERSION,
    Chunk,
    EvidenceUnit,
    Span,
    model_text,
    unit_search_text,
    unit_spans,
)

log = logging.getLogger(__name__)

EMBED_BATCH = 64


def _worth_a_child(path: Path, limits: IngestLimits) -> bool:
    if path.suffix.lower() == ".pdf":
        return True
    try:
        return expanded_bytes(path) > limits.convert_here_max_mb * MB
    except (DocumentError, OSError):
        return True  # its conversion reports what is wrong with it


LENGTH_CLASS_CHARS = 64  # texts this close in length (about 15 tokens) are embedded together


class RayOptions(BaseModel):
    """Where and how wide the Ray engine runs (the ``ingest.ray`` settings section)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str | None = Field(
        None,
        pattern=r"^(auto|[A-Za-z0-9][A-Za-z0-9.-]*:[0-9]{1,5})$",
        description="Ray cluster to join, from one of its nodes (head:6379, or auto for the node's own); "
        "unset starts a local one.",
    )
    workers: int = Field(
        2,
        ge=1,
        le=1024,
        description="Converting actors, and as many embedding actors (up to twice as many once "
        "conversion is done), one CPU each; a local cluster gets twice this many CPUs.",
    )


class IngestOptions(BaseModel):
    """What shapes a build (the ``ingest`` settings section): chunking, BM25 parameters,
    retention, the PDF pipeline, the limits, and how many child processes convert files."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chunking: ChunkingOptions = Field(default_factory=ChunkingOptions, description="Chunking.")
    bm25: Bm25Params = Field(default_factory=Bm25Params, description="BM25.")
    limits: IngestLimits = Field(default_factory=IngestLimits, description="What a document may expand to.")
    keep_versions: int = Field(
        3, ge=1, le=100, description="Index versions kept on disk, the live one included."
    )
    pdf_models_dir: Path | None = Field(
        None,
        description="docling layout/table model artifacts; when set, PDFs use docling's standard pipeline.",
    )
    sparse_threshold: float = Field(
        DEFAULT_THRESHOLD,
        gt=0,
        le=1,
        description="A chunk is sparse if no other chunk is this similar (and it has unique facts).",
    )
    convert_processes: int = Field(
        1,
        ge=0,
        le=64,
        description="Child processes that convert and chunk PDFs and larger files while ingest embeds, "
        "each under the memory and time limits; 0 converts every file in the ingesting process, "
        "without those limits.",
    )
    engine: Literal["local", "ray"] = Field(
        "local",
        description="Where files convert and embed: this process and its children, or a Ray cluster "
        "(needs docfinder[ray]; ingest.ray says which).",
    )
    ray: RayOptions = Field(default_factory=RayOptions, description="The Ray engine.")


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


def ingest(
    index_dir: Path,
    inputs: list[Path],
    *,
    embedder: Embedder,
    collection: str | None = None,
    options: IngestOptions = IngestOptions(),
    progress: IngestProgress = NoProgress(),
    enricher: Enricher | None = None,
    engine: IngestEngine | None = None,
) -> IngestReport:
    """Index ``inputs`` into ``index_dir`` as a new live version; see the module docstring.

    With ``options.chunking.contextual``, ``enricher`` writes each new chunk's situating context.
    ``engine`` converts and embeds the new and changed files elsewhere (on a Ray cluster:
    :mod:`index_build.ray_engine`); by default this process does, with child processes.
    """
    if options.chunking.contextual and enricher is None:
        raise ConfigurationError("contextual chunks need an enricher (an LLM): ingest with --enrich")
    started = time.perf_counter()
    discovery = discover(inputs, collection)
    sources = discovery.sources
    with writer_lock(index_dir):
        for stale in remove_stale_builds(index_dir):
            log.warning("removed a half-written version left by an interrupted ingest: %s", stale.name)
        live = _open_live_or_none(index_dir)
        roots = {s.root for s in sources}
        previous = live if live and _reusable(live, embedder, options) else None
        if live and previous is None:
            log.info("embedder or chunking changed since %s: every file is processed again", live.version_id)
            sources = sources + _sources_outside(live, roots)
        ignored = [s for s in sources if s.path.suffix.lower() not in SUPPORTED_SUFFIXES]
        sources = [s for s in sources if s not in ignored]
        report = IngestReport(
            version=live.version_id if live else "",
            published=False,
            ignored=[s.path.name for s in ignored],
        )
        documents_of: DocumentsOf
        if engine is None:
            documents_of = _local_engine(embedder, previous, options, progress, report, enricher)
        elif enricher is not None:
            raise ConfigurationError(
                "contextual enrichment runs on the local engine only: ingest with --engine local"
            )
        else:
            documents_of = partial(engine, options=options, report=report, progress=progress)
        documents, failures, converted = _process_sources(sources, previous, progress, documents_of)
        report.converting_seconds = round(sum(d.seconds for d in documents), 3)
        kept = _documents_outside(previous, roots) if previous else []
        removed = _count_removed(live, roots, {d.record.path for d in documents}) if live else 0
        all_documents = kept + documents
        report.converted = converted
        report.reused = len(documents) - converted
        report.removed = removed
        report.failures = [Failure(path, reason) for path, reason in discovery.skipped] + failures
        if (converted or removed or previous is None) and all_documents:
            writing = time.perf_counter()
            parts = [
                VersionPart(d.record, d.chunks, np.vstack(d.embeddings), d.units, _stack(d.unit_embeddings))
                for d in all_documents
            ]
            report.version = write_version(index_dir, parts, embedder, options)
            report.published = True
            report.writing_seconds = round(time.perf_counter() - writing, 3)
        report.documents = len(all_documents)
        report.pages = sum(d.record.pages for d in all_documents)
        report.chunks = sum(len(d.chunks) for d in all_documents)
        report.units = sum(len(d.units) for d in all_documents)
        report.seconds = round(time.perf_counter() - started, 3)
        return report


def _open_live_or_none(index_dir: Path) -> IndexSnapshot | None:
    try:
        return open_live(index_dir, verify=False, memory_map=True)
    except IndexNotFoundError:
        return None
    except IndexCorruptError as exc:
        # An older format or a damaged version: rebuild from the inputs rather than refuse.
        log.warning("the live version cannot be reused (%s); building a new one from the inputs", exc)
        return None


def _reusable(snapshot: IndexSnapshot, embedder: Embedder, options: IngestOptions) -> bool:
    """Whether chunks and embeddings of ``snapshot`` are valid for this build's settings."""
    same_chunking = snapshot.manifest["chunking"] == chunking_manifest(options)
    return same_chunking and built_by(snapshot.manifest, embedder)


# Chunking options added after indexes existed, with the value that chunks as before they did.
CHUNKING_ADDED_LATER = {"adjacent_overlap_tokens": 0}


def chunking_manifest(options: IngestOptions) -> dict[str, object]:
    """What the manifest records of chunking and evidence extraction; reuse needs an exact match.

    An option added later is recorded only when it changes the chunks, so that an index built
    before it existed stays reusable."""
    recorded = {
        name: value
        for name, value in options.chunking.model_dump().items()
        if name not in CHUNKING_ADDED_LATER or value != CHUNKING_ADDED_LATER[name]
    }
    return {**recorded, "evidence_version": EVIDENCE_VERSION}


def embedder_manifest(embedder: Embedder) -> dict[str, object]:
    """What the manifest records of the embedder; embeddings are reusable only if it matches."""
    return {
        "name": embedder.name,
        "backend": embedder.backend,
        "dimensions": embedder.dimensions,
        "max_tokens": embedder.max_tokens,
        "text_version": MODEL_TEXT_VERSION,
    }


def built_by(manifest: dict[str, Any], embedder: Embedder) -> bool:
    """Whether the index of ``manifest`` holds vectors of this embedder (name, backend, size).

    Manifests written before backends existed were all built on PyTorch."""
    recorded = {"backend": "torch", **manifest.get("embedder", {})}
    return recorded == embedder_manifest(embedder)


def _sources_outside(snapshot: IndexSnapshot, roots: set[Path]) -> list[SourceFile]:
    """Files of earlier ingests from other folders, to convert again when reuse is impossible."""
    return [
        SourceFile(path=Path(r.path), root=Path(r.path), collection=r.collection)
        for r in snapshot.files
        if not _under(r.path, roots) and Path(r.path).is_file()
    ]


def _process_sources(
    sources: list[SourceFile],
    previous: IndexSnapshot | None,
    progress: IngestProgress,
    engine: DocumentsOf,
) -> tuple[list[IngestedDocument], list[Failure], int]:
    """Reuse unchanged files and hand the others to ``engine``, which yields each job's place
    among the jobs with its embedded document or the reason it was skipped, in any order.
    Documents come back in the order of ``sources``."""
    previous_records = {r.path: r for r in previous.files} if previous else {}
    progress.start("files", len(sources))
    progress.start("pages", None)
    progress.start("chunks", None)
    placed: dict[int, IngestedDocument] = {}
    failures: list[Failure] = []
    jobs: list[ConversionJob] = []
    job_places: list[int] = []  # each job's place among the sources

    def done(place: int, document: IngestedDocument) -> None:
        placed[place] = document
        progress.advance("pages", document.record.pages)
        progress.advance("chunks", len(document.chunks))
        progress.advance("files")

    for place, source in enumerate(sources):
        try:
            sha = file_sha256(source.path)
        except OSError as exc:
            failures.append(Failure(str(source.path), failure_reason(exc)))
            progress.advance("files")
            continue
        old = previous_records.get(str(source.path))
        if old and old.sha256 == sha and old.collection == source.collection and previous:
            done(place, _reuse(previous, old))
        else:
            jobs.append(ConversionJob(source, sha))
            job_places.append(place)
    converted = 0
    failed: dict[int, Failure] = {}
    # Closed on the way out, so an engine's processes stop even when this loop fails.
    with closing(engine(jobs)) as outcomes:
        for job_place, outcome in outcomes:
            job = jobs[job_place]
            if isinstance(outcome, str):
                failed[job_place] = Failure(str(job.source.path), outcome)
                log.warning("skipped %s: %s", job.source.path, outcome)
                progress.advance("files")
                continue
            converted += 1
            done(job_places[job_place], outcome)
    documents = [placed[place] for place in sorted(placed)]
    return documents, failures + [failed[place] for place in sorted(failed)], converted


def _local_engine(
    embedder: Embedder,
    previous: IndexSnapshot | None,
    options: IngestOptions,
    progress: IngestProgress,
    report: IngestReport,
    enricher: Enricher | None,
) -> DocumentsOf:
    """Convert in this process or its children, and embed on a thread beside: each converted
    document is queued for embedding at once, so its embedding overlaps the next conversion.
    The documents' vectors are all filled when the last one has been yielded."""

    def documents(jobs: list[ConversionJob]) -> EngineOutcomes:
        embed = embedder.embed if CHUNKERS[options.chunking.method].needs_embedder else None
        outcomes = conversions(jobs, conversion_setup(embedder.tokenizer, options), options, embed=embed)
        # Closed on the way out, so child processes stop even when embedding fails mid-way.
        with EmbeddingWorker(embedder, previous, progress, report) as embedding, closing(outcomes):
            for place, (_, outcome) in enumerate(outcomes):
                if isinstance(outcome, str):
                    yield place, outcome
                    continue
                document = converted_document(outcome, enricher)
                embedding.submit(document)
                yield place, document

    return documents


def conversion_setup(tokenizer: Tokenizer, options: IngestOptions) -> ConversionSetup:
    """What converting and chunking a file need besides the file, from the ingest options."""
    return ConversionSetup(tokenizer, options.chunking, options.pdf_models_dir, options.limits)


def conversions(
    jobs: list[ConversionJob],
    setup: ConversionSetup,
    options: IngestOptions,
    *,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    pool: ConversionPool | None = None,
) -> Generator[tuple[ConversionJob, Outcome], None, None]:
    """The jobs' outcomes in order, from child processes that the limits' watchdog guards
    when any of them is worth guarding (``pool``, when given, is an open pool to use).

    Every file converts in a child (a PDF, and any file beyond ``limits.convert_here_max_mb``, 0
    by default): a parser that crashes, balloons or loops on one document then costs that
    document, not the ingest. Size is no guard: a 240 KB Markdown table of 20,000 columns took
    an ingest past 12 GB, 990 KB of nested HTML kept one busy for seven minutes. Chunking that
    needs the embedder (semantic: ``embed``) converts here, and so does everything with
    ``convert_processes`` 0 or below the ``convert_here_max_mb`` a trusted corpus may set: there
    only the size limits hold, not the memory and time limits."""
    if embed is not None:
        return convert_in_process(jobs, setup, embed)
    if options.convert_processes == 0 or not any(_worth_a_child(j.source.path, options.limits) for j in jobs):
        return convert_in_process(jobs, setup)
    return (pool or ConversionPool(min(options.convert_processes, len(jobs)), setup)).convert(jobs)


def _reuse(previous: IndexSnapshot, record: FileRecord) -> IngestedDocument:
    collection = previous.collections[record.collection]
    start, stop = collection.doc_chunks.get(record.doc_id, (0, 0))
    units, unit_vectors = previous.units_of(record.doc_id)
    return IngestedDocument(
        record=record,
        chunks=list(collection.chunks[start:stop]),
        embeddings=list(collection.embeddings[start:stop]),
        units=list(units),
        unit_embeddings=list(unit_vectors),
    )


def converted_document(converted: ConvertedFile, enricher: Enricher | None) -> IngestedDocument:
    """A converted file as ingest carries it: chunks situated by ``enricher`` when there is
    one, vectors to be filled by the embedding worker."""
    chunks = converted.chunks
    if enricher is not None:
        chunks = [replace(chunk, context=enricher(converted.parsed, chunk)) for chunk in chunks]
    units = converted.units
    return IngestedDocument(
        converted.record, chunks, [None] * len(chunks), units, [None] * len(units), converted.seconds
    )


def _under(path: str, roots: set[Path]) -> bool:
    p = Path(path)
    return any(p == root or root in p.parents for root in roots)


def _documents_outside(previous: IndexSnapshot, roots: set[Path]) -> list[IngestedDocument]:
    """Documents of earlier ingests from other folders: carried over unchanged."""
    return [_reuse(previous, r) for r in previous.files if not _under(r.path, roots)]


def _count_removed(previous: IndexSnapshot, roots: set[Path], present: set[str]) -> int:
    return sum(1 for r in previous.files if _under(r.path, roots) and r.path not in present)


class EmbeddingWorker:
    """Embeds converted documents on one worker thread while the next document converts.

    Conversion is Python (one core); ONNX Runtime releases the interpreter while it embeds,
    so on two cores the two overlap. A batch is padded to its longest text, so texts are not
    embedded document by document (a 256-token chunk would pad its short sentences to its
    length) but gathered by length across documents and embedded when enough of a length
    are waiting; the rest when the last document is in.

    Chunks are embedded as :func:`model_text`. A unit's vector is pooled from its chunk's
    token states in the same pass ("late chunking", see :func:`unit_spans`): units are
    two thirds of the texts and a quarter of the embedding time when embedded alone, and on
    the SEC questions the evidence selected from pooled vectors finds as many of the
    answers' figures. A unit that the model's window cut off, or whose words cannot be
    located, is embedded alone as :func:`unit_search_text`. Vectors are looked up by a
    hash of what they were computed from (in the previous version and in what this ingest
    embedded), so nothing is embedded twice. Leaving the ``with`` block embeds what is
    left, fills every submitted document's vectors and re-raises the worker's error; if
    conversion failed, it only stops the worker.
    """

    def __init__(
        self,
        embedder: Embedder,
        previous: IndexSnapshot | None,
        progress: IngestProgress,
        report: IngestReport,
    ) -> None:
        self._embedder = embedder
        self._progress = progress
        self._report = report
        self._previous = previous
        self._known: dict[str, np.ndarray] = {}  # the previous version's, read at the first document
        self._waiting: dict[int, dict[str, str]] = {}  # length class -> key -> text
        self._chunk_keys: set[str] = set()
        self._units_of: dict[str, dict[str, tuple[Span, ...]]] = {}  # waiting chunk -> its units' ranges
        self._alone: dict[str, str] = {}  # unit key -> the text it is embedded as if pooling fails
        self._aliases: dict[str, str] = {}  # unit key -> key of the text it was embedded alone as
        self._wanted: list[_Wanted] = []  # every submitted text's place
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="docfinder-embed")
        self._pending: list[Future[None]] = []
        self._busy = 0.0

    def __enter__(self) -> EmbeddingWorker:
        self._progress.start("embeddings", None)
        return self

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        try:
            if exc_type is None:
                self._pending.append(self._pool.submit(self._embed_the_rest))
                for pending in self._pending:
                    pending.result()  # the worker's error, if any, is the ingest's
                for target, row, key in self._wanted:
                    target[row] = self._known[self._aliases.get(key, key)]  # units embedded alone: aliased
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._report.embedding_seconds = round(self._busy, 3)

    def submit(self, document: IngestedDocument) -> None:
        """Queue ``document``'s chunks and units for embedding (its vectors are filled on exit).

        Raises the error of an earlier embedding, so a failed embedder stops the ingest at
        the next document rather than after converting every file."""
        for done in (f for f in self._pending if f.done()):
            done.result()
        self._pending.append(self._pool.submit(self._gather, document))

    def _gather(self, document: IngestedDocument) -> None:
        began = time.perf_counter()
        if self._previous is not None:
            self._known = _known_vectors(self._previous)
            self._previous = None
        members: dict[str, list[tuple[int, EvidenceUnit]]] = {}
        for row, unit in enumerate(document.units):
            members.setdefault(unit.chunk_id, []).append((row, unit))
        for row, chunk in enumerate(document.chunks):
            text, key = model_text(chunk), chunk.content_hash
            self._wanted.append((document.embeddings, row, key))
            pooled: dict[str, tuple[Span, ...]] = {}
            units = members.get(chunk.chunk_id, [])
            located = unit_spans(chunk, [u for _, u in units]) if units else []
            for (unit_row, unit), spans in zip(units, located, strict=True):
                unit_key = _unit_key(text, unit)
                self._wanted.append((document.unit_embeddings, unit_row, unit_key))
                if unit_key in self._known:
                    self._report.reused_embeddings += 1
                    continue
                self._alone[unit_key] = unit_search_text(unit, chunk.heading_path)
                pooled[unit_key] = spans
            if key in self._known:  # embedded before: units it did not bring are embedded alone
                self._report.reused_embeddings += 1
                for unit_key in pooled:
                    self._embed_alone(unit_key)
                continue
            self._units_of.setdefault(key, {}).update(pooled)
            self._chunk_keys.add(key)
            self._queue(key, text)
        self._busy += time.perf_counter() - began

    def _embed_alone(self, unit_key: str) -> None:
        """Embed a unit as its own text; units of the same text share one vector."""
        text = self._alone[unit_key]
        self._aliases[unit_key] = text_key = _text_key(text)
        if text_key not in self._known:
            self._queue(text_key, text)

    def _queue(self, key: str, text: str) -> None:
        """Wait for texts of about ``text``'s length, then embed them together."""
        length_class = len(text) // LENGTH_CLASS_CHARS
        waiting = self._waiting.setdefault(length_class, {})
        waiting[key] = text
        if len(waiting) >= EMBED_BATCH:
            self._embed(self._waiting.pop(length_class))

    def _embed_the_rest(self) -> None:
        began = time.perf_counter()
        while self._waiting:  # a chunk's units its window cut off come back as texts of their own
            rest = {
                k: t for length_class in sorted(self._waiting) for k, t in self._waiting[length_class].items()
            }
            self._waiting.clear()
            keys = list(rest)
            for start in range(0, len(keys), EMBED_BATCH):
                self._embed({k: rest[k] for k in keys[start : start + EMBED_BATCH]})
        self._busy += time.perf_counter() - began

    def _embed(self, batch: dict[str, str]) -> None:
        units = [self._units_of.pop(key, {}) for key in batch]
        vectors = self._embedder.embed_spans(list(batch.values()), [tuple(u.values()) for u in units])
        for key, vector in zip(batch, vectors.passages):
            self._known[key] = vector
        for spans_of, unit_vectors, pooled in zip(units, vectors.spans, vectors.pooled, strict=True):
            for unit_key, vector, ok in zip(spans_of, unit_vectors, pooled, strict=True):
                if ok:
                    self._known[unit_key] = vector
                    self._report.pooled_units += 1
                else:
                    self._embed_alone(unit_key)
        chunks = sum(1 for key in batch if key in self._chunk_keys)
        self._report.embedded_chunks += chunks
        self._report.embedded_units += len(batch) - chunks
        self._progress.advance("embeddings", len(batch))


# Where a vector goes: a document's list of chunk or unit vectors, a row of it, the vector's key.
_Wanted = tuple[list[np.ndarray | None], int, str]


def _known_vectors(previous: IndexSnapshot) -> dict[str, np.ndarray]:
    """The previous version's vectors by key: an unchanged passage keeps its vector."""
    known: dict[str, np.ndarray] = {}
    for collection in previous.collections.values():
        texts = {}
        for chunk, vector in zip(collection.chunks, collection.embeddings):
            known[chunk.content_hash] = vector
            texts[chunk.chunk_id] = model_text(chunk)
        for unit, vector in zip(collection.units, collection.unit_embeddings):
            known[_unit_key(texts[unit.chunk_id], unit)] = vector
    return known


def _unit_key(chunk_text: str, unit: EvidenceUnit) -> str:
    """What a unit's vector is computed from: its chunk as the model reads it and the unit."""
    return _text_key("\0".join((chunk_text, unit.kind, unit.row_group, unit.text)))


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _stack(vectors: list[np.ndarray | None]) -> np.ndarray | None:
    return np.vstack(vectors) if vectors else None


@dataclass(frozen=True, slots=True)
class VersionPart:
    """One document as written into a version: its record, chunks and units with their embeddings."""

    record: FileRecord
    chunks: Sequence[Chunk]
    embeddings: np.ndarray
    units: Sequence[EvidenceUnit] = ()
    unit_embeddings: np.ndarray | None = None


def write_version(
    index_dir: Path,
    parts: Sequence[VersionPart],
    embedder: Embedder,
    options: IngestOptions,
) -> str:
    """Write the documents' parts as a new version and make it live.

    The caller holds the writer lock. Returns the new version's id.
    """
    version_id = new_version_id()
    build = building_dir(index_dir, version_id)
    collections: dict[str, CollectionData] = {}
    vectors: dict[str, list[np.ndarray]] = {}
    unit_vectors: dict[str, list[np.ndarray]] = {}
    for part in parts:
        data = collections.setdefault(part.record.collection, CollectionData(part.record.collection))
        data.chunks.extend(part.chunks)
        data.units.extend(part.units)
        vectors.setdefault(part.record.collection, []).append(part.embeddings)
        if part.unit_embeddings is not None and len(part.units):
            unit_vectors.setdefault(part.record.collection, []).append(part.unit_embeddings)
    sparse = {}
    for name, data in collections.items():
        data.embeddings = np.vstack(vectors[name]).astype(np.float32)
        if name in unit_vectors:
            data.unit_embeddings = np.vstack(unit_vectors[name]).astype(np.float32)
        sparse[name] = write_collection(
            build / COLLECTIONS / name, data, options.bm25, options.sparse_threshold
        )
    write_manifest(
        build,
        version_id=version_id,
        embedder=embedder_manifest(embedder),
        chunking=chunking_manifest(options),
        bm25=options.bm25,
        files=[part.record for part in parts],
        collections={name: len(data.chunks) for name, data in collections.items()},
        sparse=sparse,
        units={name: len(data.units) for name, data in collections.items()},
    )
    publish(index_dir, build, version_id)
    prune_versions(index_dir, options.keep_versions)
    return version_id
