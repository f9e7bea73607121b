"""Small interfaces behind which heavy libraries load lazily.

Stages and services depend on these, not on sentence-transformers or torch: tests can hand
in a small deterministic implementation, and production code picks a real one by factory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Tokenizer(Protocol):
    """The embedder's own tokenizer, used to size chunks in the units the embedder sees."""

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (special tokens excluded)."""
        ...

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of each token, in order (special tokens excluded)."""
        ...


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors (cosine similarity = dot product)."""

    name: str
    backend: str  # how the model runs ("torch", "onnx-int8"): vectors of two backends differ slightly
    dimensions: int
    max_tokens: int
    tokenizer: Tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages; shape ``(len(texts), dimensions)``, rows L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query; shape ``(dimensions,)``, L2-normalised."""
        ...

    def forget_queries(self) -> None:
        """Drop any remembered query vectors, so the next queries are embedded (benchmarks time them)."""
        ...
