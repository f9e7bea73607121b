"""Passage selection under a token budget: the shared pieces of the ``topk``, ``mmr`` and
``fps`` strategies (:mod:`pipeline.retrieval.selections`).

The retrieval stage ranks candidates; selection decides which of them reach the LLM, so
that a budget of ``T_max`` tokens is spent on relevant *and* different information. Seed
papers measured that diversity-aware selection (MMR, FPS) puts 2–10 points more of the
answers into the selected context than plain top-k by score.

The passage strategies walk the candidates greedily and skip any that would overflow the
budget, stopping when nothing else fits. Scores are the fused retrieval scores, min-max
scaled so the trade-off parameters mean the same thing for every query.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Item:
    """A piece of context: a passage or a sentence, with its score, size and embedding."""

    key: str
    text: str
    tokens: int
    score: float
    vector: np.ndarray


def normalised(scores: np.ndarray) -> np.ndarray:
    """Scores min-max scaled to [0, 1] (all ones when they are equal)."""
    low, high = float(scores.min()), float(scores.max())
    return np.ones_like(scores) if high == low else (scores - low) / (high - low)
