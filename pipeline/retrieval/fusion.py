"""Fusion of the BM25 and dense branches into one ranking. Pure functions over small records.

Each method is a module of :mod:`pipeline.retrieval.fusions` registered by name in :data:`FUSIONS`,
chosen by setting and compared in ``docfinder eval retrieval``: ``reference`` (the reference
documentation assistant's formula, for reranker scores), ``rrf`` (reciprocal rank fusion) and
``convex`` (min-max normalised scores, weighted). Collection boosts multiply the fused score
in ``rrf`` and ``convex`` (in ``reference`` they weight the dense term, as the formula says).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pipeline.registry import Registry

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class BranchHit:
    """A candidate as one branch saw it: its key, score and 0-based rank in that branch."""

    key: str
    score: float
    rank: int


def reciprocal_rank_fusion(rankings: Sequence[Sequence[K]], k: int) -> list[tuple[K, float]]:
    """Reciprocal rank fusion: score(d) = Σ over lists of 1 / (k + rank(d)), rank 1-based.

    Ties keep the order in which keys were first seen, so the result is deterministic.
    """
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def min_max(scores: Mapping[str, float]) -> dict[str, float]:
    """Scale scores to [0, 1] for this list; all-equal scores map to 1."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return {key: 1.0 for key in scores}
    return {key: (value - low) / (high - low) for key, value in scores.items()}


@dataclass(frozen=True, slots=True)
class FusionParams:
    """The knobs a fusion may read; their defaults live in the settings
    (:class:`pipeline.retrieval.search.RetrievalConfig`)."""

    alpha: float
    dense_weight: float
    rrf_k: int


Boost = Callable[[str], float]  # a candidate's key → its collection weight (w_coll)
# A fusion: the BM25 and dense branches' candidates, the boosts and the knobs → score per key.
Fusion = Callable[[Sequence[BranchHit], Sequence[BranchHit], Boost, FusionParams], dict[str, float]]
FUSIONS: Registry[Fusion] = Registry("fusion method", "pipeline.retrieval.fusions")


def fuse(
    method: str,
    bm25: Sequence[BranchHit],
    dense: Sequence[BranchHit],
    params: FusionParams,
    *,
    boosts: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """Fuse the two branches; returns (key, score) best first. ``boosts`` maps key → w_coll."""
    boost = (lambda key: boosts.get(key, 1.0)) if boosts else (lambda key: 1.0)
    scores = FUSIONS[method](bm25, dense, boost, params)
    return sorted(scores.items(), key=lambda item: -item[1])


def merge_variants(rankings: Sequence[Sequence[tuple[str, float]]]) -> list[tuple[str, float]]:
    """Merge the rankings of several query variants by key, keeping each key's best score."""
    best: dict[str, float] = {}
    for ranking in rankings:
        for key, score in ranking:
            if key not in best or score > best[key]:
                best[key] = score
    return sorted(best.items(), key=lambda item: -item[1])


def threshold_and_cap(
    ranking: Sequence[tuple[str, float]], min_score: float, cap: int
) -> list[tuple[str, float]]:
    """Drop results scoring under ``min_score`` and keep at most ``cap``."""
    return [item for item in ranking if item[1] >= min_score][:cap]
