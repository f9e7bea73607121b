"""The sparse-information set: chunks whose facts appear nowhere else in the corpus.

Hybrid retrieval often misses a fact that is stated once, in one chunk, in words unlike the
question's. docfinder marks such chunks at index time so the agent can search them alone
when its first answer fails validation. A chunk is *sparse* when both hold:

1. it carries at least one distinctive token found in no other chunk of its collection —
   a number of two or more digits (compared without ``$``, ``,``, ``%`` and parentheses)
   or a capitalised word or acronym of three or more characters (a name, a product, a
   term), compared case-insensitively; and
2. no other chunk of the collection is a near-paraphrase of it: its nearest neighbour's
   cosine similarity is below ``threshold`` (0.85 by default).

The ``sparse`` retrieval mode ranks only these chunks by cosine similarity to the query;
ties go to the more isolated chunk (the larger cosine distance to its nearest neighbour).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_THRESHOLD = 0.85
_NUMBER = re.compile(r"\(?\$?\d[\d,]*(?:\.\d+)?%?\)?")
_NAME = re.compile(r"\b[A-Z][A-Za-z0-9\-]{2,}\b")


def distinctive_tokens(text: str) -> set[str]:
    """Numbers (two or more digits, normalised) and capitalised words of ``text``."""
    numbers = {re.sub(r"[$,%()]", "", n) for n in _NUMBER.findall(text)}
    numbers = {n for n in numbers if sum(c.isdigit() for c in n) >= 2}
    names = {n.lower() for n in _NAME.findall(text)}
    return numbers | names


def nearest_neighbour_similarity(embeddings: np.ndarray, block: int = 1024) -> np.ndarray:
    """Each row's highest cosine similarity to any *other* row (rows are unit vectors)."""
    n = len(embeddings)
    best = np.full(n, -1.0, dtype=np.float32)
    for start in range(0, n, block):
        similarity = embeddings[start : start + block] @ embeddings.T
        rows = np.arange(start, min(start + block, n))
        similarity[rows - start, rows] = -1.0
        best[start : start + block] = similarity.max(axis=1) if n > 1 else -1.0
    return best


@dataclass(frozen=True, slots=True)
class SparseSet:
    """Rows of the sparse chunks, with each row's nearest-neighbour similarity (for tie-breaks)."""

    rows: np.ndarray
    nearest: np.ndarray
    threshold: float


def find_sparse(
    texts: Sequence[str],
    embeddings: np.ndarray,
    threshold: float = DEFAULT_THRESHOLD,
    nearest: np.ndarray | None = None,
) -> SparseSet:
    """Apply the two rules of the module docstring to one collection.

    ``nearest`` (each row's highest similarity to another row) is computed exactly when not
    given; a large collection passes it from its vector index instead (the exact computation
    grows with the square of the rows: hours at a million).
    """
    tokens = [distinctive_tokens(t) for t in texts]
    frequency = Counter(token for chunk_tokens in tokens for token in chunk_tokens)
    if nearest is None:
        nearest = nearest_neighbour_similarity(embeddings) if len(texts) else np.zeros(0, np.float32)
    rows = [
        i
        for i, chunk_tokens in enumerate(tokens)
        if any(frequency[t] == 1 for t in chunk_tokens) and nearest[i] < threshold
    ]
    selected = np.array(rows, dtype=np.int64)
    return SparseSet(selected, nearest[selected] if len(rows) else np.zeros(0, np.float32), threshold)


def rank_sparse(
    query: np.ndarray, embeddings: np.ndarray, sparse: SparseSet, k: int
) -> list[tuple[int, float]]:
    """(row, cosine similarity) of the ``k`` sparse chunks nearest ``query``; ties go to the more isolated."""
    if len(sparse.rows) == 0:
        return []
    similarity = embeddings[sparse.rows] @ query
    order = np.lexsort((sparse.nearest, -similarity))  # primary: similarity desc; then nearest asc
    return [(int(sparse.rows[i]), float(similarity[i])) for i in order[:k]]
