"""Small interfaces behind which heavy libraries load lazily.

Stages and services depend on these, not on sentence-transformers or torch: tests can hand
in a small deterministic implementation, and production code picks a real one by factory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pipeline.types import Span


class Tokenizer(Protocol):
    """The embedder's own tokenizer, used to size chunks in the units the embedder sees."""

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (special tokens excluded)."""
        ...

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of each token, in order (special tokens excluded)."""
        ...


@dataclass(frozen=True, slots=True)
class PassageVectors:
    """Vectors of passages, and of ranges of characters within them, from one embedder pass.

    ``spans[i]`` holds one row per span group asked of passage ``i``; ``pooled[i]`` says
    which rows were pooled. A row is zeros where it was not: the model's window cut the
    passage before the span ended, or the model does not pool token states by their mean.
    """

    passages: np.ndarray
    spans: list[np.ndarray]
    pooled: list[np.ndarray]


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

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[Span, ...]]]
    ) -> PassageVectors:
        """Embed passages and, from the same pass, groups of character ranges within each: a
        group's vector is the mean of its tokens' states read in the whole passage's context
        ("late chunking"), so a sentence or a table row is embedded with its surroundings and
        at no extra cost."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query; shape ``(dimensions,)``, L2-normalised."""
        ...

    def forget_queries(self) -> None:
        """Drop any remembered query vectors, so the next queries are embedded (benchmarks time them)."""
        ...
