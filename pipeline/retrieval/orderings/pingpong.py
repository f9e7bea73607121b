"""``pingpong``: the strongest pieces at both ends and the weakest in the middle, ``m:n`` at a
time (the LLM reads the start and the end of its context best: "lost in the middle")."""

from __future__ import annotations

from pipeline.retrieval.context import ORDERINGS, ContextPiece, OrderInput
from pipeline.retrieval.ordering import order_ping_pong


@ORDERINGS.register("pingpong")
def ping_pong(order: OrderInput) -> list[ContextPiece]:
    ranked = sorted(order.pieces, key=lambda p: -p.score)
    return order_ping_pong(ranked, *order.config.pingpong)
