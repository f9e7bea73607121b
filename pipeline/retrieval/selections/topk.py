"""``topk``: the best-scoring passages that fit the budget, in score order."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.retrieval.context import SELECTIONS, ContextPiece, SelectionInput, choose_passages
from pipeline.retrieval.selection import Item


@SELECTIONS.register("topk")
def topk(selection: SelectionInput) -> list[ContextPiece]:
    return choose_passages(selection, select_topk)


def select_topk(items: Sequence[Item], budget: int) -> list[Item]:
    """The best-scoring items that fit in ``budget`` tokens, in score order."""
    chosen, used = [], 0
    for item in sorted(items, key=lambda i: -i.score):
        if used + item.tokens <= budget:
            chosen.append(item)
            used += item.tokens
    return chosen
