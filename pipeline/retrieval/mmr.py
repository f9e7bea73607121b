"""Maximal Marginal Relevance: relevant candidates that are not near-copies of each other."""

from __future__ import annotations

import numpy as np


def mmr_select(query: np.ndarray, candidates: np.ndarray, k: int, lam: float) -> list[int]:
    """Indices of ``k`` rows of ``candidates`` chosen by MMR, in selection order.

    Each step takes argmax of ``lam · sim(q, d) − (1 − lam) · max sim(d, s)`` over the chosen
    ``s`` (cosine similarity; rows and query are unit vectors). ``lam = 1`` is plain top-k by
    similarity; smaller values trade relevance for diversity. Ties go to the earlier row.
    """
    n = len(candidates)
    k = min(k, n)
    if k <= 0:
        return []
    relevance = candidates @ query
    if lam >= 1.0:
        return [int(i) for i in np.argsort(-relevance, kind="stable")[:k]]
    pairwise = candidates @ candidates.T
    chosen: list[int] = []
    redundancy = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    for _ in range(k):
        penalty = np.where(np.isfinite(redundancy), redundancy, 0.0)
        scores = lam * relevance - (1.0 - lam) * penalty
        scores[~available] = -np.inf
        best = int(np.argmax(scores))
        chosen.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, pairwise[best])
    return chosen
