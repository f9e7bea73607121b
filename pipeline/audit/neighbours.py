"""Pairs of near statements by their stored vectors: the candidates every audit check reads.

Each statement is compared with its nearest ``k`` others by cosine similarity of the unit
vectors made at ingest, in blocks so that memory stays bounded (a block of 1,024 rows against
75,000 statements is 300 MB of float32). Exact, not approximate: on two cores the whole
techdocs corpus (75,000 units of 384 dimensions) is one matrix product of about 2 TFLOP.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from pipeline.audit.statements import FIGURES

BLOCK_ROWS = 1024


def near_pairs(
    vectors: np.ndarray,
    eligible: np.ndarray,
    k: int,
    min_similarity: float,
    focus: np.ndarray | None = None,
    progress: Callable[[int], None] | None = None,
    groups: np.ndarray | None = None,
) -> list[tuple[int, int, float]]:
    """``(i, j, similarity)`` with ``i < j``: each eligible row's ``k`` nearest eligible rows at
    ``min_similarity`` or more, each pair once, best first.

    ``vectors`` are unit-normalised rows; ``eligible`` a boolean mask of the rows to compare;
    ``focus`` (a boolean mask) limits the pairs to those with at least one focused row (an
    incremental audit: the statements changed since a version, against all). ``progress`` is
    called with the number of rows done after each block. Rows of the same ``groups`` value
    (a chunk) are not each other's neighbours: a unit's vector is pooled from its chunk, so its
    nearest rows would be its own chunk's other sentences, and what an audit looks for (the same
    statement elsewhere) would never be among the ``k``.
    """
    rows = np.flatnonzero(eligible)
    if len(rows) < 2:
        return []
    matrix = np.ascontiguousarray(vectors[rows], dtype=np.float32)
    queries = rows if focus is None else np.flatnonzero(eligible & focus)
    position = {int(r): n for n, r in enumerate(rows)}
    members: dict[int, list[int]] = {}
    if groups is not None:
        for n, r in enumerate(rows):
            members.setdefault(int(groups[r]), []).append(n)
    found: dict[tuple[int, int], float] = {}
    take = min(k + 1, len(rows))
    for start in range(0, len(queries), BLOCK_ROWS):
        block = queries[start : start + BLOCK_ROWS]
        scores = matrix[[position[int(r)] for r in block]] @ matrix.T
        for n, row in enumerate(block):
            scores[n, position[int(row)]] = -1.0
            if groups is not None:
                scores[n, members[int(groups[row])]] = -1.0
        best = np.argpartition(-scores, take - 1, axis=1)[:, :take]
        for n, row in enumerate(block):
            for m in best[n]:
                similarity = float(scores[n, m])
                if similarity < min_similarity:
                    continue
                other = int(rows[m])
                pair = (min(int(row), other), max(int(row), other))
                found[pair] = max(found.get(pair, -1.0), similarity)
        if progress is not None:
            progress(len(block))
    return sorted(((i, j, s) for (i, j), s in found.items()), key=lambda p: -p[2])


MAX_SAME_KEY = 20  # a wording or a term shared by more statements is boilerplate ("CASCADE —")
_TERM = re.compile(r"[a-z]{3,}")  # a term names something in words, not only in marks or digits


def same_wording_pairs(
    texts: Sequence[str], vectors: np.ndarray, eligible: np.ndarray, focus: np.ndarray | None = None
) -> list[tuple[int, int, float]]:
    """``(i, j, similarity)`` of eligible statements worded alike but for their numbers ("every 5
    minutes" / "every 15 minutes"; "PostgreSQL 9.6" / "PostgreSQL 15"), however far apart their
    vectors: a unit's vector is pooled from its chunk, so the same sentence in two different
    passages can stand below the similarity threshold."""
    keys = [FIGURES.sub("#", text.lower()) for text in texts]
    return _pairs_by_key(keys, texts, vectors, eligible, focus)


def same_term_pairs(
    texts: Sequence[str], vectors: np.ndarray, eligible: np.ndarray, focus: np.ndarray | None = None
) -> list[tuple[int, int, float]]:
    """``(i, j, similarity)`` of eligible statements that define the same term: definition
    entries of one parameter ("work_mem (integer) — …") or table rows of one label, in two
    places, whatever else their words and vectors say."""
    return _pairs_by_key([defined_term(text) for text in texts], texts, vectors, eligible, focus)


def defined_term(text: str) -> str:
    """What a definition entry or a table row is about (its term, its first cell), lowercased;
    "" for a sentence."""
    stripped = text.strip()
    if stripped.startswith("|"):
        term = stripped.strip("|").split("|")[0]
    elif " — " in stripped:
        term = stripped.split(" — ")[0]
    else:
        return ""
    term = " ".join(term.lower().split())
    return term if _TERM.search(term) else ""


def _pairs_by_key(
    keys: Sequence[str],
    texts: Sequence[str],
    vectors: np.ndarray,
    eligible: np.ndarray,
    focus: np.ndarray | None,
) -> list[tuple[int, int, float]]:
    groups: dict[str, list[int]] = {}
    for i in np.flatnonzero(eligible):
        if keys[i]:
            groups.setdefault(keys[i], []).append(int(i))
    pairs = []
    for members in groups.values():
        if not 2 <= len(members) <= MAX_SAME_KEY:
            continue
        for n, i in enumerate(members):
            for j in members[n + 1 :]:
                if texts[i] != texts[j] and (focus is None or focus[i] or focus[j]):
                    pairs.append((i, j, float(vectors[i] @ vectors[j])))
    return pairs
