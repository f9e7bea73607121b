"""Ingest on Ray: files converted in one actor pool, embedded in another, streamed to the driver.

Only the heavy middle of an ingest moves. The driver (the ``docfinder ingest`` process) lists
the files, keeps unchanged ones with their chunks and vectors, and writes and publishes the
new version with the same writer as the local engine; Ray Data runs the rest as two stages:

- converting actors, each with a warm converter: PDFs and larger files convert in the actor's
  own child process under the memory and time limits' watchdog, as on the local engine, so a
  file that crashes or hangs the parser is retried and then reported as a skip with its
  reason; small files convert in the actor;
- embedding actors, each with the embedder loaded, embed a few documents' chunks and units
  together with the local engine's :class:`~index_build.builder.EmbeddingWorker` (units
  pooled from their chunk's token states, texts batched by length), so the chunks, units and
  ids equal the local engine's, and the vectors too within float tolerance (on the int8
  backend a text's vector moves a little with its batch neighbours, on either engine). The
  embedding pool grows to twice the workers once conversion is done and its CPUs are free:
  embedding is the longer stage (on the SEC filings about six times conversion's CPU time).

Each document streams back to the driver when its embedding is done. A worker process that
dies (killed, out of memory) is restarted by Ray and its batch run again (Ray Data retries an
actor pool's batches), so nothing is lost; the driver places documents by their place in the
job list, so nothing is doubled either.

Documents reach the workers by path: every node must see the inputs at the driver's path (a
shared read-only volume, as docker/compose.yaml's ``scale`` profile mounts it), and the
embedder's ONNX export, which the driver makes before the workers start (under the index
folder by default). A node that cannot read a file reports it like any unreadable file.
Rows between the stages carry the jobs and documents pickled: they are Python dataclasses,
not table columns.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from index_build.builder import conversion_setup, conversions, converted_document
from index_build.chunking import CHUNKERS
from index_build.conversion import ConversionJob, ConversionPool
from index_build.embedding_worker import EmbeddingWorker
from index_build.ingest_report import (
    EngineOutcomes,
    IngestedDocument,
    IngestProgress,
    IngestReport,
    NoProgress,
)
from index_build.options import IngestOptions, RayOptions
from pipeline.errors import ClusterUnavailableError, ConfigurationError
from pipeline.protocols import Embedder

log = logging.getLogger(__name__)

DOCUMENTS_PER_EMBEDDING = 2  # documents an embedding actor embeds together (texts batch across them)
LOCAL_OBJECT_STORE_MB = 512  # a local cluster's object store: documents stream through, none piles up

# Builds the embedder on a worker; ``threads`` is what the worker may use (its CPUs on Ray).
EmbedderFactory = Callable[..., Embedder]


@dataclass(frozen=True, slots=True)
class _Embedded:
    """What an embedding actor sends back for a batch: documents by place, and its counts."""

    outcomes: list[tuple[int, IngestedDocument | str]]
    embedded_chunks: int
    embedded_units: int
    pooled_units: int
    seconds: float


class RayEngine:
    """An :class:`~index_build.builder.IngestEngine` on a Ray cluster (see the module docstring).

    ``embedder_factory`` builds the ingest's embedder on each worker (it must be picklable:
    a module-level function with its settings, say)."""

    def __init__(self, options: RayOptions, embedder_factory: EmbedderFactory) -> None:
        self.options = options
        self.embedder_factory = embedder_factory

    def __call__(
        self,
        jobs: list[ConversionJob],
        *,
        options: IngestOptions,
        report: IngestReport,
        progress: IngestProgress,
    ) -> EngineOutcomes:
        progress.start("embeddings", None)
        if not jobs:
            return
        ray = _ray()
        started_here = _connect(ray, self.options)
        try:
            for batch in _stream(ray, jobs, options, self.options.workers, self.embedder_factory):
                report.embedded_chunks += batch.embedded_chunks
                report.embedded_units += batch.embedded_units
                report.pooled_units += batch.pooled_units
                report.embedding_seconds = round(report.embedding_seconds + batch.seconds, 3)
                progress.advance("embeddings", batch.embedded_chunks + batch.embedded_units)
                yield from batch.outcomes
        except ray.exceptions.RayError as exc:
            raise ClusterUnavailableError(f"the Ray engine lost its work: {exc}") from exc
        finally:
            if started_here:
                ray.shutdown()


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise ConfigurationError(
            "ingest.engine ray needs Ray, which this install lacks: pip install 'docfinder[ray]' "
            "(or ingest with --engine local)"
        ) from exc
    return ray


def _connect(ray: Any, options: RayOptions) -> bool:
    """Join the configured cluster, or start a local one sized to the workers; returns whether
    this call started Ray (and so must stop it)."""
    if ray.is_initialized():
        return False
    quiet = {"logging_level": logging.ERROR, "log_to_driver": False}
    try:
        if options.address:
            ray.init(address=options.address, **quiet)
        else:
            ray.init(
                num_cpus=2 * options.workers,
                include_dashboard=False,
                object_store_memory=LOCAL_OBJECT_STORE_MB * 1024 * 1024,
                **quiet,
            )
    except ConnectionError as exc:
        raise ClusterUnavailableError(f"cannot join the Ray cluster at {options.address}: {exc}") from exc
    ray.data.DataContext.get_current().enable_progress_bars = False  # the CLI draws its own
    logging.getLogger("ray.data").setLevel(logging.ERROR)  # no execution plans on the terminal
    return True


def _stream(
    ray: Any,
    jobs: list[ConversionJob],
    options: IngestOptions,
    workers: int,
    embedder_factory: EmbedderFactory,
) -> Generator[_Embedded, None, None]:
    """The embedded batches as they finish: one block per file, so files spread over the actors."""
    rows = [{"place": place, "job": pickle.dumps(job)} for place, job in enumerate(jobs)]
    dataset = (
        ray.data.from_items(rows, override_num_blocks=len(rows))
        .map_batches(
            _Converting,
            batch_size=1,
            compute=ray.data.ActorPoolStrategy(size=workers),
            num_cpus=1,
            fn_constructor_kwargs={"options": options, "embedder_factory": embedder_factory},
        )
        .map_batches(
            _Embedding,
            batch_size=DOCUMENTS_PER_EMBEDDING,
            # Embedding is the longer stage: its pool grows onto the CPUs that conversion frees.
            compute=ray.data.ActorPoolStrategy(min_size=workers, max_size=2 * workers),
            num_cpus=1,
            fn_constructor_kwargs={"embedder_factory": embedder_factory},
        )
    )
    for row in dataset.iter_rows():
        yield pickle.loads(row["embedded"])


class _Converting:
    """A converting actor: converts and chunks each file it is given (see the module docstring)."""

    def __init__(self, options: IngestOptions, embedder_factory: EmbedderFactory) -> None:
        embedder = embedder_factory(threads=1)  # its tokenizer; the model itself loads on first use
        self.setup = conversion_setup(embedder.tokenizer, options)
        self.options = options
        self.embed = embedder.embed if CHUNKERS[options.chunking.method].needs_embedder else None
        # Children start at the first file worth one, and stay for the next (a warm converter).
        self.pool = ConversionPool(1, self.setup).__enter__()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        jobs = [pickle.loads(job) for job in batch["job"]]
        outcomes = conversions(jobs, self.setup, self.options, embed=self.embed, pool=self.pool)
        documents = [
            outcome if isinstance(outcome, str) else converted_document(outcome, enricher=None)
            for _, outcome in outcomes
        ]
        return {"place": batch["place"], "document": _objects([pickle.dumps(d) for d in documents])}

    def __del__(self) -> None:
        self.pool.__exit__(None, None, None)


class _Embedding:
    """An embedding actor: fills the vectors of a few documents' chunks and units at once."""

    def __init__(self, embedder_factory: EmbedderFactory) -> None:
        self.embedder = embedder_factory(threads=1)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        outcomes: list[tuple[int, IngestedDocument | str]] = [
            (int(place), pickle.loads(document)) for place, document in zip(batch["place"], batch["document"])
        ]
        counts = IngestReport(version="", published=False)
        with EmbeddingWorker(self.embedder, None, NoProgress(), counts) as worker:
            for _, document in outcomes:
                if not isinstance(document, str):
                    worker.submit(document)
        embedded = _Embedded(
            outcomes,
            counts.embedded_chunks,
            counts.embedded_units,
            counts.pooled_units,
            counts.embedding_seconds,
        )
        return {"embedded": _objects([pickle.dumps(embedded)])}


def _objects(values: list[bytes]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array
