"""BEIR-format datasets: read them, and index a corpus as one collection (one chunk per document).

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``) and ``qrels/<split>.tsv`` (query-id, corpus-id, score). Each document
becomes one chunk whose id is the BEIR id, as the benchmark's published figures assume
(the embedder truncates long abstracts at its window). The index is cached: a later run with
the same corpus file and embedder reuses it.
"""

from __future__ import annotations

import csv
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from index_build.builder import VersionPart, write_version
from index_build.embedding_worker import EMBED_BATCH
from index_build.ingest_report import IngestProgress, NoProgress
from index_build.layout import writer_lock
from index_build.manifests import built_by
from index_build.options import IngestOptions
from index_build.snapshot import IndexSnapshot, open_live
from index_build.sources import collection_name, file_sha256
from index_build.version import FileRecord
from pipeline.errors import ConfigurationError, IndexCorruptError, IndexNotFoundError
from pipeline.protocols import Embedder
from pipeline.types import Chunk, model_text

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BeirDataset:
    """Queries and relevance judgements of one split."""

    name: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_split(dataset_dir: Path, split: str) -> BeirDataset:
    """The queries that have judgements in ``qrels/<split>.tsv``, with those judgements."""
    qrels_path = dataset_dir / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        raise ConfigurationError(f"{dataset_dir} has no qrels/{split}.tsv")
    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_path, encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    queries = {}
    with open(dataset_dir / "queries.jsonl", encoding="utf-8") as handle:
        for line in handle:
            query = json.loads(line)
            if query["_id"] in qrels:
                queries[query["_id"]] = query["text"]
    return BeirDataset(name=dataset_dir.name, queries=queries, qrels=qrels)


def index_corpus(
    dataset_dir: Path,
    index_dir: Path,
    *,
    embedder: Embedder,
    options: IngestOptions = IngestOptions(),
    progress: IngestProgress = NoProgress(),
) -> IndexSnapshot:
    """Index the BEIR corpus as one collection, or reuse the cached index of the same corpus."""
    corpus = dataset_dir / "corpus.jsonl"
    if not corpus.is_file():
        raise ConfigurationError(f"{dataset_dir} is not a BEIR folder: corpus.jsonl is missing")
    sha = file_sha256(corpus)
    try:
        cached = open_live(index_dir, memory_map=True)
        if cached.files and cached.files[0].sha256 == sha and built_by(cached.manifest, embedder):
            return cached
    except (IndexNotFoundError, IndexCorruptError) as exc:
        log.info("no usable cached index for %s (%s): building one", dataset_dir.name, exc)

    name = collection_name(dataset_dir.name)
    with open(corpus, encoding="utf-8") as handle:
        documents = [json.loads(line) for line in handle]
    chunks = [
        Chunk(
            chunk_id=str(doc["_id"]),
            doc_id=str(doc["_id"]),
            collection=name,
            source=f"{corpus}#{doc['_id']}",
            title=doc.get("title", ""),
            heading_path=(),
            pages=(0, 0),
            text=doc.get("text", ""),
            content_hash="",
        )
        for doc in documents
    ]
    progress.start("embeddings", len(chunks))
    vectors = []
    for start in range(0, len(chunks), EMBED_BATCH):
        batch = chunks[start : start + EMBED_BATCH]
        vectors.append(embedder.embed([model_text(c) for c in batch]))
        progress.advance("embeddings", len(batch))
    record = FileRecord(
        path=str(corpus), collection=name, doc_id=name, sha256=sha, title=name, pages=0, chunks=len(chunks)
    )
    with writer_lock(index_dir):
        write_version(index_dir, [VersionPart(record, chunks, np.vstack(vectors))], embedder, options)
    return open_live(index_dir, memory_map=True)
