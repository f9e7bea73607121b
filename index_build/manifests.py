"""What a version's manifest says built it (the chunking and the embedder), and whether a
build may reuse it."""

from __future__ import annotations

from typing import Any

from index_build.evidence import EVIDENCE_VERSION
from index_build.options import IngestOptions
from pipeline.protocols import Embedder
from pipeline.types import (
    MODEL_TEXT_VERSION,
)

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
