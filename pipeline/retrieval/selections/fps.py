"""``fps``: farthest point sampling under the budget, rewarded by the retrieval score."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.retrieval.context import SELECTIONS, ContextPiece, SelectionInput, choose_passages
from pipeline.retrieval.selection import Item, normalised


@SELECTIONS.register("fps")
def fps(selection: SelectionInput) -> list[ContextPiece]:
    weight = selection.config.fps_weight
    return choose_passages(selection, lambda items, budget: select_fps(items, budget, weight))


def select_fps(items: Sequence[Item], budget: int, weight: float = 0.5) -> list[Item]:
    """Farthest point sampling under a budget, rewarded by the retrieval score.

    Starts from the best-scoring item; each step takes the item maximising
    ``weight · score + (1 − weight) · d``, where ``d`` is its Euclidean distance to the
    nearest item already chosen, scaled to [0, 1]. ``weight = 0`` is pure FPS.
    """
    if not items:
        return []
    scores = normalised(np.array([i.score for i in items], dtype=np.float64))
    vectors = np.vstack([i.vector for i in items]).astype(np.float64)
    nearest = np.full(len(items), np.inf)
    remaining = np.ones(len(items), dtype=bool)
    chosen: list[int] = []
    used = 0
    while remaining.any():
        if not chosen:
            candidate = int(np.argmax(np.where(remaining, scores, -np.inf)))
        else:
            finite = np.where(np.isfinite(nearest), nearest, 0.0)
            spread = finite / finite.max() if finite.max() > 0 else finite
            value = weight * scores + (1 - weight) * spread
            candidate = int(np.argmax(np.where(remaining, value, -np.inf)))
        remaining[candidate] = False
        if used + items[candidate].tokens <= budget:
            chosen.append(candidate)
            used += items[candidate].tokens
            distance = np.linalg.norm(vectors - vectors[candidate], axis=1)
            nearest = np.minimum(nearest, distance)
    return [items[i] for i in chosen]
