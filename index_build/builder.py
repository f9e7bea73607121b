"""Ingest: files → docling → chunks → embeddings → a new index version, made live atomically.

Incremental: a file whose content hash and collection are unchanged keeps its chunks and
embeddings; a changed file is converted and chunked again (chunks whose text did not change
keep their embeddings); files that vanished from an ingested folder leave the index. Files
ingested from other folders are kept as they are. Bad files are reported and skipped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import numpy as np

from index_build.chunking import CHUNKERS
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
from index_build.embedding_worker import (
    EmbeddingWorker,
    stacked_vectors,
)
from index_build.ingest_report import (
    DocumentsOf,
    EngineOutcomes,
    Enricher,
    Failure,
    IngestedDocument,
    IngestEngine,
    IngestProgress,
    IngestReport,
    NoProgress,
)
from index_build.layout import (
    building_dir,
    new_version_id,
    prune_versions,
    publish,
    remove_stale_builds,
    writer_lock,
)
from index_build.limits import MB, IngestLimits, expanded_bytes
from index_build.manifests import built_by, chunking_manifest, embedder_manifest
from index_build.options import IngestOptions
from index_build.snapshot import IndexSnapshot, open_live
from index_build.sources import SourceFile, discover, file_sha256
from index_build.version import (
    COLLECTIONS,
    SEARCH_FIELDS_VERSION,
    CollectionData,
    FileRecord,
    write_collection,
    write_manifest,
)
from pipeline.errors import ConfigurationError, DocumentError, IndexCorruptError, IndexNotFoundError
from pipeline.protocols import Embedder, Tokenizer
from pipeline.types import (
    Chunk,
    EvidenceUnit,
)

log = logging.getLogger(__name__)


def _worth_a_child(path: Path, limits: IngestLimits) -> bool:
    if path.suffix.lower() == ".pdf":
        return True
    try:
        return expanded_bytes(path) > limits.convert_here_max_mb * MB
    except (DocumentError, OSError):
        return True  # its conversion reports what is wrong with it


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
        # An index whose search fields an older docfinder wrote is written again, from what it holds.
        stale = live is not None and live.manifest.get("search_fields_version", 1) != SEARCH_FIELDS_VERSION
        if (converted or removed or previous is None or stale) and all_documents:
            writing = time.perf_counter()
            parts = [
                VersionPart(
                    d.record, d.chunks, np.vstack(d.embeddings), d.units, stacked_vectors(d.unit_embeddings)
                )
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
