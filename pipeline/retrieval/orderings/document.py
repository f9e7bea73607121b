"""``document``: by document, then in reading order."""

from __future__ import annotations

from pipeline.retrieval.context import ORDERINGS, ContextPiece, OrderInput


@ORDERINGS.register("document")
def by_document(order: OrderInput) -> list[ContextPiece]:
    # Chunk ids are "<doc id>-<ordinal>", so sorting them restores each document's order.
    return sorted(order.pieces, key=lambda p: p.chunk.chunk_id)
