"""``mmr``: Maximal Marginal Relevance under the budget, optionally windowed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.retrieval.context import SELECTIONS, ContextPiece, SelectionInput, choose_passages
from pipeline.retrieval.selection import Item, normalised


@SELECTIONS.register("mmr")
def mmr(selection: SelectionInput) -> list[ContextPiece]:
    config = selection.config
    return choose_passages(
        selection, lambda items, budget: select_mmr(items, budget, config.mmr_alpha, config.mmr_window)
    )


def select_mmr(items: Sequence[Item], budget: int, alpha: float, window: int | None = None) -> list[Item]:
    """MMR under a budget: each step takes ``argmax α·score − (1−α)·max sim(item, recent)``.

    ``recent`` is the last ``window`` selections (all of them when ``window`` is None), as in
    the windowed MMR of the seed paper. ``alpha = 1`` is :func:`select_topk`.
    """
    if not items:
        return []
    scores = normalised(np.array([i.score for i in items], dtype=np.float64))
    vectors = np.vstack([i.vector for i in items])
    similarity = vectors @ vectors.T
    remaining = set(range(len(items)))
    chosen: list[int] = []
    used = 0
    while remaining:
        recent = chosen[-window:] if window else chosen
        best, best_value = -1, -np.inf
        for i in sorted(remaining):
            redundancy = max((similarity[i, j] for j in recent), default=0.0)
            value = alpha * scores[i] - (1 - alpha) * redundancy
            if value > best_value:
                best, best_value = i, value
        remaining.discard(best)
        if used + items[best].tokens <= budget:
            chosen.append(best)
            used += items[best].tokens
    return [items[i] for i in chosen]
