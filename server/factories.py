"""Factories that pick and build the heavy components the settings name."""

from __future__ import annotations

from index_build.embedding import SentenceTransformerEmbedder, default_embedder_path
from pipeline.protocols import Embedder
from server.settings import Settings


def make_embedder(settings: Settings) -> Embedder:
    """The configured sentence-transformers embedder (the packaged MiniLM by default)."""
    return SentenceTransformerEmbedder(settings.embedder_path or default_embedder_path())
