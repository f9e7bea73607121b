"""Fusion of the BM25 and dense branches into one ranking. Pure functions over small records.

Three methods, chosen by setting and compared in ``docfinder eval retrieval``:

- ``reference``: the formula of the reference documentation assistant,
  ``s = α · s_vec · w_coll + (1 − α) · 0.1 · s_bm25 / (r_bm25 + 1)``, where ``s_vec`` and
  ``s_bm25`` are the (reranker, else branch) scores of candidates found by the dense and the
  BM25 branch, ``r_bm25`` the candidate's 0-based BM25 rank and ``w_coll`` its collection
  boost. It assumes reranker scores on both branches.
- ``rrf``: reciprocal rank fusion, ``Σ 1 / (k + rank)`` with 1-based ranks and ``k = 60``.
- ``convex``: ``w · norm(s_dense) + (1 − w) · norm(s_bm25)``, each branch min-max
  normalised over this query's candidates; a candidate missing from a branch gets 0 there.

Collection boosts multiply the fused score in ``rrf`` and ``convex`` (in ``reference`` they
weight the dense term, as the formula says).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

K = TypeVar("K", bound=Hashable)

FusionMethod = Literal["reference", "rrf", "convex"]
FUSION_METHODS: tuple[str, ...] = ("reference", "rrf", "convex")
RRF_K = 60
REFERENCE_ALPHA = 0.7


@dataclass(frozen=True, slots=True)
class BranchHit:
    """A candidate as one branch saw it: its key, score and 0-based rank in that branch."""

    key: str
    score: float
    rank: int


def reciprocal_rank_fusion(rankings: Sequence[Sequence[K]], k: int = RRF_K) -> list[tuple[K, float]]:
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


def fuse(
    method: FusionMethod,
    bm25: Sequence[BranchHit],
    dense: Sequence[BranchHit],
    *,
    boosts: Mapping[str, float] | None = None,
    alpha: float = REFERENCE_ALPHA,
    dense_weight: float = 0.5,
    rrf_k: int = RRF_K,
) -> list[tuple[str, float]]:
    """Fuse the two branches; returns (key, score) best first. ``boosts`` maps key → w_coll."""
    boost = (lambda key: boosts.get(key, 1.0)) if boosts else (lambda key: 1.0)
    if method == "reference":
        scores: dict[str, float] = {}
        for hit in dense:
            scores[hit.key] = scores.get(hit.key, 0.0) + alpha * hit.score * boost(hit.key)
        for hit in bm25:
            scores[hit.key] = scores.get(hit.key, 0.0) + (1 - alpha) * 0.1 * hit.score / (hit.rank + 1)
    elif method == "rrf":
        fused = reciprocal_rank_fusion([[h.key for h in bm25], [h.key for h in dense]], k=rrf_k)
        scores = {key: value * boost(key) for key, value in fused}
    elif method == "convex":
        dense_norm = min_max({h.key: h.score for h in dense})
        bm25_norm = min_max({h.key: h.score for h in bm25})
        keys = list(dict.fromkeys([h.key for h in dense] + [h.key for h in bm25]))
        scores = {
            key: (dense_weight * dense_norm.get(key, 0.0) + (1 - dense_weight) * bm25_norm.get(key, 0.0))
            * boost(key)
            for key in keys
        }
    else:
        raise ValueError(f"unknown fusion method {method!r}; choose one of {', '.join(FUSION_METHODS)}")
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
