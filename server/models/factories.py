"""Factories that pick and build the heavy components the settings name (the embedder, the
reranker, the glossary); the pipeline's configurations are settings sections themselves."""

from __future__ import annotations

import importlib.util

from index_build.embedding import SentenceTransformerEmbedder, default_embedder_path
from pipeline.errors import ConfigurationError
from pipeline.expansion import Glossary, load_glossary
from pipeline.protocols import Embedder
from pipeline.retrieval import Reranker
from server.settings import Settings


def make_embedder(settings: Settings, threads: int | None = None) -> Embedder:
    """The configured embedder (the packaged MiniLM by default) on the configured backend;
    ``threads`` bounds the ONNX backends' threads (default: every core)."""
    model_dir = settings.embedder.path or default_embedder_path()
    if settings.embedder.backend == "torch":
        if importlib.util.find_spec("sentence_transformers") is None:
            raise ConfigurationError(
                "embedder.backend torch runs the model with sentence-transformers, which this install "
                "lacks: pip install 'docfinder[pytorch]' (or use the onnx-int8 default)"
            )
        return SentenceTransformerEmbedder(model_dir)
    from index_build.onnx_embedding import OnnxEmbedder

    return OnnxEmbedder(
        model_dir,
        settings.embedder.cache_dir or settings.index.dir / ".embedders",
        quantized=settings.embedder.backend == "onnx-int8",
        threads=threads,
    )


def make_reranker(settings: Settings) -> Reranker | None:
    """The configured cross-encoder, or None when no reranker folder is set."""
    if settings.retrieval.reranker_path is None:
        return None
    from server.models.reranker import CrossEncoderReranker

    return CrossEncoderReranker(settings.retrieval.reranker_path)


def make_glossary(settings: Settings) -> Glossary | None:
    """The query-expansion glossary, or None when none is configured."""
    return load_glossary(settings.retrieval.glossary_path) if settings.retrieval.glossary_path else None
