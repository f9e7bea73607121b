"""Reciprocal rank fusion: ``Σ 1 / (k + rank)`` over both branches with 1-based ranks, times the
candidate's collection boost."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.retrieval.fusion import FUSIONS, Boost, BranchHit, FusionParams, reciprocal_rank_fusion


@FUSIONS.register("rrf")
def rrf(
    bm25: Sequence[BranchHit], dense: Sequence[BranchHit], boost: Boost, params: FusionParams
) -> dict[str, float]:
    fused = reciprocal_rank_fusion([[h.key for h in bm25], [h.key for h in dense]], k=params.rrf_k)
    return {key: value * boost(key) for key, value in fused}
