"""The cross-encoder reranker: a local sequence-classification model run with transformers."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigurationError


class CrossEncoderReranker:
    """A :class:`~pipeline.retrieval.search.Reranker` over a local cross-encoder (bge-reranker-base
    in production).

    The model loads on first use; a (query, passage) pair's score is the sigmoid of the
    model's one relevance logit, higher meaning more relevant (as sentence-transformers'
    ``CrossEncoder`` scores a single-label model). Thread-safe: callers run it in a worker
    thread.
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
    def _model(self) -> tuple[Any, Any]:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        with self._lock:
            tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir), local_files_only=True)
            model = AutoModelForSequenceClassification.from_pretrained(
                str(self.model_dir), local_files_only=True, dtype=torch.float32
            ).eval()
        if model.config.num_labels != 1:
            raise ConfigurationError(
                f"reranker {self.model_dir} scores {model.config.num_labels} labels; a cross-encoder "
                "for reranking scores one (relevance)"
            )
        return tokenizer, model

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        import torch

        tokenizer, model = self._model
        scores: list[float] = []
        for start in range(0, len(passages), self.batch_size):
            batch = list(passages[start : start + self.batch_size])
            encoded = tokenizer(
                [query] * len(batch),
                batch,
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
            with torch.inference_mode():
                logits = model(**encoded).logits[:, 0]
            scores.extend(torch.sigmoid(logits).tolist())
        return scores
