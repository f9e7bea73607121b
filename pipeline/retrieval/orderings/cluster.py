"""``cluster``: the sentences grouped by topic (agglomerative clustering, the number of
clusters by silhouette), the groups by their similarity to the query."""

from __future__ import annotations

from pipeline.retrieval.context import ORDERINGS, ContextPiece, OrderInput
from pipeline.retrieval.ordering import Sentence, cluster_order, split_sentences


@ORDERINGS.register("cluster")
def by_cluster(order: OrderInput) -> list[ContextPiece]:
    if not order.pieces:
        return []
    config = order.config
    units = order.pieces if config.selection == "sentences" else _as_sentences(order.pieces)
    sentences = [Sentence(p.text, p.chunk.chunk_id, i, p.score) for i, p in enumerate(units)]
    groups = cluster_order(sentences, order.vectors(units), order.query_vector, within=config.cluster_within)
    return [
        ContextPiece(units[s.position].chunk, s.text, s.score, group)
        for group, members in enumerate(groups)
        for s in members
    ]


def _as_sentences(pieces: list[ContextPiece]) -> list[ContextPiece]:
    return [ContextPiece(p.chunk, s, p.score) for p in pieces for s in split_sentences(p.text)]
