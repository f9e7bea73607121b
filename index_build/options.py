"""The ``ingest`` settings section: what shapes a build, and where the Ray engine runs."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from index_build.chunking import ChunkingOptions
from index_build.limits import IngestLimits
from index_build.version import (
    Bm25Params,
)
from pipeline.retrieval.sparse import DEFAULT_THRESHOLD


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
