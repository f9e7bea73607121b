"""The reference documentation assistant's fusion (Eq. 1): ``s = α · s_vec · w_coll +
(1 − α) · 0.1 · s_bm25 / (r_bm25 + 1)``, where ``s_vec`` and ``s_bm25`` are the (reranker,
else branch) scores of candidates the dense and the BM25 branch found, ``r_bm25`` a
candidate's 0-based BM25 rank and ``w_coll`` its collection boost. It assumes reranker scores
on both branches."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.retrieval.fusion import FUSIONS, Boost, BranchHit, FusionParams


@FUSIONS.register("reference")
def reference(
    bm25: Sequence[BranchHit], dense: Sequence[BranchHit], boost: Boost, params: FusionParams
) -> dict[str, float]:
    scores: dict[str, float] = {}
    for hit in dense:
        scores[hit.key] = scores.get(hit.key, 0.0) + params.alpha * hit.score * boost(hit.key)
    for hit in bm25:
        scores[hit.key] = scores.get(hit.key, 0.0) + (1 - params.alpha) * 0.1 * hit.score / (hit.rank + 1)
    return scores
