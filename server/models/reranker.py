"""The cross-encoder reranker: sentence-transformers' ``CrossEncoder`` from a local folder."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from pipeline.errors import ConfigurationError


class CrossEncoderReranker:
    """A :class:`~pipeline.retrieval.Reranker` over a local cross-encoder (bge-reranker-base in production).

    The model loads on first use; scores are the model's relevance outputs (sigmoid for
    single-label models), higher meaning more relevant. Thread-safe: callers run it in a
    worker thread.
    """

    def __init__(self, model_dir: Path, batch_size: int = 32, max_length: int = 512) -> None:
        if not (model_dir / "config.json").is_file():
            raise ConfigurationError(f"reranker folder {model_dir} has no config.json")
        self.model_dir = model_dir
        self.name = model_dir.name
        self.batch_size = batch_size
        self.max_length = max_length
        self._lock = threading.Lock()

    @cached_property
    def _model(self):
        from sentence_transformers import CrossEncoder

        with self._lock:
            return CrossEncoder(
                str(self.model_dir), device="cpu", max_length=self.max_length, local_files_only=True
            )

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        scores = self._model.predict(
            [(query, p) for p in passages], batch_size=self.batch_size, show_progress_bar=False
        )
        return [float(s) for s in scores]
