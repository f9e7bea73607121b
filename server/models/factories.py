"""Factories that pick and build the heavy components the settings name (the embedder, the
reranker, the glossary); the pipeline's configurations are settings sections themselves."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import partial
from pathlib import Path

from index_build.embedding import SentenceTransformerEmbedder, default_embedder_path
from pipeline.errors import ConfigurationError
from pipeline.protocols import Embedder
from pipeline.retrieval.expansion import Glossary, load_glossary
from pipeline.retrieval.search import Reranker
from server.settings import Settings
from server.settings.sections import EmbedderSettings


def make_embedder(settings: Settings, threads: int | None = None) -> Embedder:
    """The configured embedder (the packaged MiniLM by default) on the configured backend;
    ``threads`` bounds the ONNX backends' threads (default: every core)."""
    return build_embedder(settings.embedder, settings.index.dir, threads)


def build_embedder(section: EmbedderSettings, index_dir: Path, threads: int | None = None) -> Embedder:
    """The embedder of the ``embedder`` settings section, its ONNX export kept under
    ``index_dir`` unless the section names a folder. What a Ray worker is sent to build its
    own (:func:`embedder_factory`): the section, not the settings and their secrets."""
    model_dir = section.path or default_embedder_path()
    if section.backend == "torch":
        if importlib.util.find_spec("sentence_transformers") is None:
            raise ConfigurationError(
                "embedder.backend torch runs the model with sentence-transformers, which this install "
                "lacks: pip install 'docfinder[pytorch]' (or use the onnx-int8 default)"
            )
        return SentenceTransformerEmbedder(model_dir)
    from index_build.onnx_embedding import OnnxEmbedder

    return OnnxEmbedder(
        model_dir,
        section.cache_dir or index_dir / ".embedders",
        quantized=section.backend == "onnx-int8",
        threads=threads,
    )


def embedder_factory(settings: Settings) -> Callable[..., Embedder]:
    """A picklable recipe for the configured embedder, for workers on other processes or nodes."""
    return partial(build_embedder, settings.embedder, settings.index.dir)


def make_reranker(settings: Settings) -> Reranker | None:
    """The configured cross-encoder, or None when no reranker folder is set."""
    if settings.retrieval.reranker_path is None:
        return None
    from server.models.reranker import CrossEncoderReranker

    return CrossEncoderReranker(settings.retrieval.reranker_path)


def make_glossary(settings: Settings) -> Glossary | None:
    """The query-expansion glossary, or None when none is configured."""
    return load_glossary(settings.retrieval.glossary_path) if settings.retrieval.glossary_path else None
