"""``score``: the best-scoring pieces first."""

from __future__ import annotations

from pipeline.retrieval.context import ORDERINGS, ContextPiece, OrderInput


@ORDERINGS.register("score")
def by_score(order: OrderInput) -> list[ContextPiece]:
    return sorted(order.pieces, key=lambda p: -p.score)
