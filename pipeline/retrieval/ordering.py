"""Orderings of the selected context, and the sentence-clustering order.

- ``score``: best first.
- ``document``: as the passages stand in their documents ("index sort").
- ``pingpong``: the strongest items at both ends, the weakest in the middle, m at the
  front then n at the back in turn: [A,B,C,D,E] with 1:1 → [A,C,E,D,B].
- ``cluster``: passages split into sentences; near-duplicate sentences dropped (Jaccard ≥
  0.9 on bags of words); optionally only the top-n sentences by score kept; sentence
  embeddings clustered agglomeratively, the tree cut where the silhouette is highest;
  clusters placed by their best similarity to the query, descending; inside a cluster,
  sentences stand in the order in which the clustering aggregated them (the step of the
  merge that first took each in; the two of one merge in context order), or in score order.

A seed paper found the clustering order best and random order worst by far.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import numpy as np

T = TypeVar("T")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[“‘]?[A-Z0-9$])")
# A full stop that ends no sentence: an abbreviation ("U.S.C.", "e.g.", "et al.", "No."), an
# initial ("A.V.L."), a list marker standing alone ("Findings 1." before its item), or an
# ellipsis, which in a manual elides syntax ("INSERT ... ON CONFLICT") more often than it ends prose.
_NOT_AN_END = re.compile(
    r"(?:\.\.\.|\b(?:[A-Za-z]\.){2,}|\b[A-Z]\.|\b(?:e\.g|i\.e|et al|etc|vs|No|Nos|Inc|Co|Corp|Ltd|Dr|Mr|"
    r"Mrs|Ms|Prof|Fig|Figs|Sec|Art|Vol|approx|cf|viz|St|Jr|Sr)\.|(?:^|\s)\(?(?:\d{1,2}|[a-z]|[ivx]{1,4})[.)])$",
    re.IGNORECASE,
)
_INLINE_MARKER = re.compile(r"(?:(?<=\s)|^)(\d{1,2})[.)]\s+(?=\S)")
_INLINE_BULLET = re.compile(r"(?:(?<=\s)|^)[•▪◦]\s*(?=\S)")
_SENTENCE_CLOSE = re.compile(r"[.!?:;]\s*$")
_WORD = re.compile(r"\w+")


def order_ping_pong(ranked: Sequence[T], front: int = 1, back: int = 1) -> list[T]:
    """Place items (given best first) alternately ``front`` at the start and ``back`` at the end."""
    head: list[T] = []
    tail: list[T] = []
    i = 0
    while i < len(ranked):
        head.extend(ranked[i : i + front])
        i += front
        tail.extend(ranked[i : i + back])
        i += back
    return head + tail[::-1]


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage; each Markdown table row counts as one sentence."""
    sentences: list[str] = []
    for block in text.split("\n"):
        block = block.strip()
        if not block or set(block) <= set("|-: "):
            continue
        if block.startswith("|"):
            sentences.append(block)
        else:
            for item in _list_items(block):
                sentences.extend(_sentences_of(item))
    return sentences


def _sentences_of(text: str) -> list[str]:
    """``text`` cut at sentence ends, not after abbreviations, initials or list markers."""
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        before = text[start : match.start()]
        if _NOT_AN_END.search(before):
            continue
        pieces.append(before.strip())
        start = match.end()
    pieces.append(text[start:].strip())
    return [p for p in pieces if p]


def _list_items(block: str) -> list[str]:
    """A paragraph holding a list inline ("Findings 1. OBJECT - TREE(S) 2. (C) ...", "... days.
    • Answered 82 percent of calls. • Processed ...") cut before each item, so each item is a
    unit of its own; any other paragraph whole.

    Only markers numbered 1, 2, 3, ... in order count, so "Item 2." or "Note 4." in running
    text never starts an item; a bullet (•, ▪, ◦) starts one wherever it stands, unless it is
    the only one and follows unfinished text.
    """
    cuts: list[int] = []
    expected = 1
    for match in _INLINE_MARKER.finditer(block):
        if int(match.group(1)) == expected:
            cuts.append(match.start())
            expected += 1
    if len(cuts) < 2:
        cuts = [m.start() for m in _INLINE_BULLET.finditer(block)]
    if not cuts or (len(cuts) < 2 and cuts[0] > 0 and not _SENTENCE_CLOSE.search(block[: cuts[0]])):
        return [block]
    bounds = [0, *cuts, len(block)]
    return [block[a:b].strip() for a, b in zip(bounds, bounds[1:]) if block[a:b].strip()]


def is_list_item(text: str) -> bool:
    """Whether ``text`` is one item of a list ("1. ...", "- ...", "(c) ...")."""
    return bool(_LIST_ITEM.match(text))


_LIST_ITEM = re.compile(r"^(?:[-•▪◦*]\s|\(?(?:\d{1,2}|[a-z]|[ivx]{1,4})[.)]\s)", re.IGNORECASE)


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' sets of lower-cased words."""
    return _set_jaccard(_words_of(a), _words_of(b))


def _words_of(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _set_jaccard(x: set[str], y: set[str]) -> float:
    if not x and not y:
        return 1.0
    return len(x & y) / len(x | y)


def dedupe(texts: Sequence[str], threshold: float = 0.9) -> list[int]:
    """Indices of texts to keep: those under ``threshold`` Jaccard similarity to every earlier kept one.

    Each text's words are read once, and a pair whose sizes alone rule out ``threshold``
    (Jaccard is at most the smaller set's size over the larger's) is not compared.
    """
    words = [_words_of(text) for text in texts]
    kept: list[int] = []
    for i, mine in enumerate(words):
        if all(_similarity_below(mine, words[j], threshold) for j in kept):
            kept.append(i)
    return kept


def _similarity_below(x: set[str], y: set[str], threshold: float) -> bool:
    small, large = sorted((len(x), len(y)))
    if large and small < threshold * large:  # Jaccard ≤ small / large: no need to intersect
        return True
    return _set_jaccard(x, y) < threshold


@dataclass(frozen=True, slots=True)
class Clustering:
    """Cluster labels (0 … k-1) and, per point, the step of the merge that first took it in."""

    labels: np.ndarray
    merge_step: np.ndarray


def cluster_by_silhouette(vectors: np.ndarray, max_clusters: int = 10) -> Clustering:
    """Agglomerative (average-link, cosine) cluster labels, cut at the k with the best silhouette.

    Fewer than three points, or no cut with a positive silhouette, give one cluster. The
    distances are computed once and serve the tree and every cut's silhouette.
    """
    n = len(vectors)
    if n < 3:
        return Clustering(np.zeros(n, dtype=int), np.zeros(n, dtype=int))
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import pdist, squareform

    condensed = np.clip(pdist(vectors, metric="cosine"), 0.0, None)
    distances = squareform(condensed)
    tree = linkage(condensed, method="average")
    merge_step = np.zeros(n, dtype=int)
    for step, (left, right) in enumerate(tree[:, :2].astype(int)):
        for node in (left, right):
            if node < n:  # a point; a larger number is a cluster formed at an earlier step
                merge_step[node] = step
    best_labels, best_score = np.zeros(n, dtype=int), 0.0
    for k in range(2, min(max_clusters, n - 1) + 1):
        labels = fcluster(tree, k, criterion="maxclust") - 1
        if len(set(labels)) < 2:
            continue
        score = silhouette(distances, labels)
        if score > best_score:
            best_labels, best_score = labels, score
    return Clustering(best_labels, merge_step)


def silhouette(distances: np.ndarray, labels: np.ndarray) -> float:
    """The mean silhouette of ``labels`` (0 … k-1) over a square distance matrix.

    For each point, ``a`` is its mean distance to the rest of its cluster and ``b`` the least
    mean distance to another cluster; its silhouette is ``(b - a) / max(a, b)``, 0 for a point
    alone in its cluster (as scikit-learn defines it), computed for all points at once.
    """
    members = np.eye(labels.max() + 1, dtype=distances.dtype)[labels]  # one-hot, n × k
    sizes = members.sum(axis=0)
    totals = distances @ members  # each point's summed distance to each cluster
    own_size = sizes[labels]
    own = totals[np.arange(len(labels)), labels] / np.maximum(own_size - 1, 1)
    means = totals / sizes
    means[np.arange(len(labels)), labels] = np.inf
    nearest = means.min(axis=1)
    widest = np.maximum(own, nearest)
    scores = np.where((own_size > 1) & (widest > 0), (nearest - own) / np.where(widest > 0, widest, 1), 0.0)
    return float(scores.mean())


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence of the selected context, with where it came from and its scores."""

    text: str
    source_key: str
    position: int
    score: float


def cluster_order(
    sentences: Sequence[Sentence],
    vectors: np.ndarray,
    query: np.ndarray,
    *,
    within: Literal["aggregation", "score"] = "aggregation",
    max_clusters: int = 10,
) -> list[list[Sentence]]:
    """Group sentences by topic and order the groups by their best similarity to the query."""
    if not sentences:
        return []
    clustering = cluster_by_silhouette(vectors, max_clusters)
    similarity = vectors @ query
    groups: dict[int, list[int]] = {}
    for i, label in enumerate(clustering.labels):
        groups.setdefault(int(label), []).append(i)
    ordered = sorted(groups.values(), key=lambda members: -max(similarity[i] for i in members))
    result = []
    for members in ordered:
        if within == "score":
            members = sorted(members, key=lambda i: -sentences[i].score)
        else:
            members = sorted(members, key=lambda i: (clustering.merge_step[i], i))
        result.append([sentences[i] for i in members])
    return result
