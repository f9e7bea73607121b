"""Convex fusion: ``w · norm(s_dense) + (1 − w) · norm(s_bm25)``, each branch min-max normalised
over this query's candidates (a candidate missing from a branch gets 0 there), times the
candidate's collection boost."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.retrieval.fusion import FUSIONS, Boost, BranchHit, FusionParams, min_max


@FUSIONS.register("convex")
def convex(
    bm25: Sequence[BranchHit], dense: Sequence[BranchHit], boost: Boost, params: FusionParams
) -> dict[str, float]:
    dense_norm = min_max({h.key: h.score for h in dense})
    bm25_norm = min_max({h.key: h.score for h in bm25})
    keys = dict.fromkeys([h.key for h in dense] + [h.key for h in bm25])
    weight = params.dense_weight
    return {
        key: (weight * dense_norm.get(key, 0.0) + (1 - weight) * bm25_norm.get(key, 0.0)) * boost(key)
        for key in keys
    }
