"""In-document deepening: the best evidence units of the documents a question needs.

Retrieval ranks chunks across the whole index; an answer needs the right rows and
sentences of the right documents. So, as Science Checker does, search twice:

1. decide which documents need evidence: the question's scope when it names documents
   (every period for a change over time, see :mod:`pipeline.retrieval.documents`), else the
   documents of the best retrieved chunks;
2. inside each of them, search with the question's content words only: the names and
   periods that chose the document, and words that only say what kind of answer is wanted
   ("what", "how", "have"), tell nothing inside it but favour long sentences that happen
   to contain them. Score every evidence unit, and every chunk, by BM25 and by dense
   similarity to each query variant (normalised over all candidates, so scores compare
   across documents); a unit's score mixes its own with its chunk's, because a chunk (a
   table with its heading, a paragraph) shows what a lone row or sentence cannot; a table
   row whose label the question names ("inventories", "total net sales") gains. When the
   question needs one document only, a table's rows are read together: each row takes a
   share of the gap to its table's best row, so the lines around the row that matched
   ("Sales and marketing" beside "Research and development") come with it. Across
   several documents this would let one document's long table crowd the others out.
   Science Checker's multihop, up to three dense hops from the document's best units (each
   anchor's neighbours gain; the chain is in the trace), is available but off by default
   (``hop_weight`` 0): it helps at some budgets and hurts at others (three hops at 0.1: SEC
   dev figure recall 0.647 → 0.625 at the agent's 1,300 tokens, 0.689 → 0.708 at 2,000;
   manual-qa dev must-have phrases 0.884 → 0.903 and 0.986 → 0.972).

Measured on the 65 SEC 10-Q dev questions (figure recall of the context at 2,000 / 4,000
tokens): the weights dense 0.7, chunk 0.5, label 0.3 give 0.741 / 0.788 (every other
combination tried stayed lower at 2,000); with table 0.8, 0.759 / 0.804 (table 0.5: 0.741 /
0.797; pulling rows together in multi-document searches too: 0.741 / 0.799); skipping a unit
whose words were already chosen, 0.763 / 0.804 (0.757 / 0.802 on the int8 embedder).

Two more signals (on the int8 embedder, index rebuilt): a unit that states a figure (an
amount or a percentage, not a year or a date) gains ``figure_weight``, since an answer rests
on what the documents state, not on sentences about a topic; and a table row whose label
one of the document's 30 best sentences names moves ``mention_weight`` of the way up to
that sentence (narrative names the line item, the table holds its figures). Figure bonus
alone 0.779 / 0.846, row mentions alone (weight 1.0) 0.774 / 0.832; together 0.796 / 0.866
(1,000 tokens: 0.679), the same for any figure weight from 0.2 to 0.4 and mention weight
from 0.5 to 0.6.

:func:`select_evidence` then fills the token budget so that every needed document is
represented before any document gets a second unit, then by score, a row's table header
counted once per passage. A unit whose figures its document already stated is skipped: a
filing repeats its statements' rows in its notes and its discussion ("Inventories 4,779"
on the balance sheet, "Total inventories $4,779" in a note), and the room goes to evidence
not yet there (1,000 / 1,200 / 2,000 / 4,000 tokens: 0.679 / 0.699 / 0.796 / 0.866 →
0.688 / 0.733 / 0.800 / 0.875). The label line above each passage counts too, since the LLM
reads it: at the same figure recall the prompt is shorter (0.733 in 3,706 characters of
context at 1,350 tokens with labels counted, 3,998 at 1,200 without), and each setting now
gives what the LLM reads (1,000 / 2,000 / 4,000: 0.680 / 0.783 / 0.867; the agent's 1,300:
0.715 in 3,554 characters). Unit embeddings come from the index (computed at ingest):
only the query variants are embedded here.

On the three dev sets (context of the agent's blend at 1,300 tokens, LLM-free, tuned on the
tune halves), five documents instead of three and a chunk weight of 0.7 instead of 0.5 raise
the context's facts from 0.688 / 0.963 / 0.318 (techdocs / manual-qa / SEC) to 0.732 / 1.000 /
0.380; on the report halves 0.754 / 1.000 / 0.424 → 0.754 / 1.000 / 0.401.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from pipeline.figures import figures
from pipeline.protocols import Tokenizer
from pipeline.retrieval.documents import DocumentScope
from pipeline.retrieval.evidence_config import EvidenceConfig
from pipeline.retrieval.unit_lifts import (
    label_match,
    pull_mentioned_rows,
    pull_table_rows,
    states_figures,
)
from pipeline.steps import Step
from pipeline.text import analyze, is_contents_line
from pipeline.types import Chunk, EvidenceUnit, SearchHit


class EvidenceIndex(Protocol):
    """What in-document search needs from a loaded index version."""

    def units_of(self, doc_id: str) -> tuple[Sequence[EvidenceUnit], np.ndarray]: ...

    def unit_bm25(self, doc_id: str, terms: Sequence[str]) -> np.ndarray: ...

    def chunks_of(self, doc_id: str) -> tuple[Sequence[Chunk], np.ndarray]: ...

    def chunk_bm25(self, doc_id: str, terms: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class ScoredUnit:
    """An evidence unit, its chunk, its score and the rank of its document among those needed."""

    unit: EvidenceUnit
    chunk: Chunk
    score: float
    document_rank: int


@dataclass(frozen=True, slots=True)
class EvidenceSearch:
    """Candidate units of the needed documents (best first) and those documents in priority order.

    ``named``: the question names its documents (its scope narrowed the search to at most
    ``max_documents`` of them), so the answer lies somewhere in those, however deep.
    """

    units: list[ScoredUnit]
    documents: list[str]
    spread: bool = False
    named: bool = False
    trace: dict[str, Any] = field(default_factory=dict)


def needed_documents(hits: Sequence[SearchHit], scope: DocumentScope, config: EvidenceConfig) -> list[str]:
    """The documents to deepen, in priority order (see the module docstring)."""
    by_hits = list(dict.fromkeys(h.chunk.doc_id for h in hits))
    if scope.documents is None:
        return by_hits[: config.documents]
    if scope.spread or len(scope.documents) <= config.documents:
        return list(scope.documents[: config.max_documents])
    ranked = [d for d in by_hits if d in scope.documents]
    return (ranked + [d for d in scope.documents if d not in ranked])[: config.documents]


# Words that say what kind of answer is wanted, not what it is about.
_QUESTION_WORDS_TEXT = """
what which who whom whose when where why how does do did done doing has have had having can could would
should may might must shall about above after again against all also am any because been before being
below both during each few from further here its itself just me more most my nor now once only other our
ours out over own same she so some than them those through too under until up very we were while you your
way ways kind kinds there their these this that reported report reports
"""
_QUESTION_WORDS = frozenset(_QUESTION_WORDS_TEXT.split())
_PERIOD_WORDS = re.compile(
    r"\b(?:Q[1-4]|(?:19|20)\d\d|first|second|third|fourth|quarter(?:ly|s)?|fiscal|latest|most\s+recent|recent)\b",
    re.IGNORECASE,
)


def content_query(query: str, scope: DocumentScope) -> str:
    """``query`` without the names and periods that chose its documents, and without question words."""
    text = query
    for name in scope.names:
        text = re.sub(rf"(?<![\w.-]){re.escape(name)}(?:['’]s)?(?![\w-])", " ", text, flags=re.IGNORECASE)
    if scope.documents is not None:
        text = _PERIOD_WORDS.sub(" ", text)
    words = without_question_words(text)
    return " ".join(words) if any(re.search(r"[A-Za-z]{3}", w) for w in words) else query


def without_question_words(text: str) -> list[str]:
    """The words of ``text`` (as written) less those that only say what kind of answer is wanted."""
    return [w for w in re.findall(r"[\w&'’.-]+", text) if w.lower().strip(".'’") not in _QUESTION_WORDS]


def find_evidence(
    index: EvidenceIndex,
    embed_query: Callable[[str], np.ndarray],
    queries: Sequence[str],
    hits: Sequence[SearchHit],
    scope: DocumentScope,
    config: EvidenceConfig = EvidenceConfig(),
) -> EvidenceSearch:
    """Score the evidence units of the needed documents; see the module docstring."""
    started = time.perf_counter()
    documents = needed_documents(hits, scope, config)
    named = scope.documents is not None and len(scope.documents) <= config.max_documents
    contents = list(dict.fromkeys(content_query(q, scope) for q in queries))
    terms = [analyze(q) for q in contents]
    query_terms = {t for ts in terms for t in ts}
    query_vectors = [embed_query(q) for q in contents]

    found = []
    for doc_id in documents:
        units, unit_vectors = index.units_of(doc_id)
        if not len(units):
            continue
        chunks, chunk_vectors = index.chunks_of(doc_id)
        found.append(
            _Found(
                doc_id,
                units,
                unit_vectors,
                np.max([index.unit_bm25(doc_id, t) for t in terms], axis=0),
                np.max([unit_vectors @ v for v in query_vectors], axis=0),
                {c.chunk_id: i for i, c in enumerate(chunks)},
                chunks,
                np.max([index.chunk_bm25(doc_id, t) for t in terms], axis=0),
                np.max([chunk_vectors @ v for v in query_vectors], axis=0),
            )
        )
    if not found:
        return EvidenceSearch([], documents, scope.spread, named, _trace(started, documents, 0, contents))

    # One normalisation over every candidate, so that a score means the same in each document.
    unit_scale = _Scale([f.unit_bm25 for f in found], [f.unit_dense for f in found])
    chunk_scale = _Scale([f.chunk_bm25 for f in found], [f.chunk_dense for f in found])
    fused_of: dict[str, np.ndarray] = {}
    chains: dict[str, list[str]] = {}
    for f in found:
        unit_score = unit_scale.fuse(f.unit_bm25, f.unit_dense, config.dense_weight)
        chunk_score = chunk_scale.fuse(f.chunk_bm25, f.chunk_dense, config.dense_weight)
        of_chunk = np.array([chunk_score[f.chunk_rows[u.chunk_id]] for u in f.units])
        fused = (1 - config.chunk_weight) * unit_score + config.chunk_weight * of_chunk
        if config.label_weight:
            fused = fused + config.label_weight * np.array([label_match(u, query_terms) for u in f.units])
        if config.hop_weight:
            fused, chain = dense_hops(f.unit_vectors, fused, config.hop_weight, config.hops)
            chains[f.doc_id] = [f.units[i].text[:160] for i in chain]
        if config.figure_weight:
            fused = fused + config.figure_weight * np.array([states_figures(u.text) for u in f.units])
        if config.mention_weight:
            fused = pull_mentioned_rows(f.units, fused, config.mention_weight, config.mention_sentences)
        fused_of[f.doc_id] = fused
    if scope.documents is None:
        found = [f for f in found if f.doc_id in strong_documents(fused_of, config.document_floor)]
    scored: list[ScoredUnit] = []
    for f in found:
        fused = fused_of[f.doc_id]
        if config.table_weight and len(found) == 1:
            fused = pull_table_rows(f.units, fused, config.table_weight)
        rank = documents.index(f.doc_id)
        seen: set[str] = set()
        for i in np.argsort(-fused, kind="stable"):
            unit = f.units[int(i)]
            if unit.text in seen:
                continue
            seen.add(unit.text)
            chunk = f.chunks[f.chunk_rows[unit.chunk_id]]
            scored.append(ScoredUnit(unit, chunk, float(fused[i]), rank))
            if len(seen) >= config.candidates_per_document:
                break
    scored.sort(key=lambda s: -s.score)
    kept = [f.doc_id for f in found]
    trace = _trace(started, documents, len(scored), contents)
    if chains:
        trace["hops"] = chains
    if len(kept) < len(documents):
        trace["weaker_documents_left_out"] = [d for d in documents if d not in kept and d in fused_of]
    return EvidenceSearch(scored, documents, scope.spread, named, trace)


def dense_hops(
    vectors: np.ndarray, scores: np.ndarray, weight: float, hops: int
) -> tuple[np.ndarray, list[int]]:
    """Science Checker's multihop inside one document: ``hops`` times, the best unit not hopped
    from yet becomes the anchor, and every unit gains ``weight`` times its dense similarity to
    it (what the anchor says leads to the units that continue it). Returns the new scores and
    the chain of anchors, in order."""
    chain: list[int] = []
    for _ in range(min(hops, len(scores))):
        anchor = next(int(i) for i in np.argsort(-scores, kind="stable") if int(i) not in chain)
        chain.append(anchor)
        scores = scores + weight * np.clip(vectors @ vectors[anchor], 0.0, 1.0)
    return scores, chain


def strong_documents(fused_of: dict[str, np.ndarray], floor: float) -> set[str]:
    """The documents whose best unit scores at least ``floor`` times the best document's best.

    Depth before breadth: when the question names no document, the documents of the best
    retrieved chunks are searched, but one whose best evidence is clearly weaker than the
    best document's (an annual report's budget tables beside the accident report that was
    asked about) would only take room from the best document's further sentences, list
    items and rows. Two documents that answer a question together score alike.
    """
    best = {doc: float(scores.max()) for doc, scores in fused_of.items() if len(scores)}
    top = max(best.values(), default=0.0)
    return {doc for doc, score in best.items() if score >= floor * top}


@dataclass(frozen=True, slots=True)
class _Found:
    """One document's units and chunks with their raw BM25 and dense scores."""

    doc_id: str
    units: Sequence[EvidenceUnit]
    unit_vectors: np.ndarray
    unit_bm25: np.ndarray
    unit_dense: np.ndarray
    chunk_rows: dict[str, int]
    chunks: Sequence[Chunk]
    chunk_bm25: np.ndarray
    chunk_dense: np.ndarray


class _Scale:
    """Min-max scaling of dense similarities, and BM25 divided by its maximum, over all documents."""

    def __init__(self, bm25: list[np.ndarray], dense: list[np.ndarray]) -> None:
        self.bm25_top = max(float(b.max()) if len(b) else 0.0 for b in bm25) or 1.0
        every = np.concatenate(dense)
        self.dense_low, self.dense_top = float(every.min()), float(every.max())

    def fuse(self, bm25: np.ndarray, dense: np.ndarray, dense_weight: float) -> np.ndarray:
        spread = self.dense_top - self.dense_low
        scaled = (dense - self.dense_low) / spread if spread > 0 else np.ones_like(dense)
        return dense_weight * scaled + (1 - dense_weight) * bm25 / self.bm25_top


def _trace(started: float, documents: list[str], candidates: int, queries: list[str]) -> dict[str, Any]:
    return {
        "step": Step.DEEPEN,
        "ms": round((time.perf_counter() - started) * 1000, 3),
        "documents": documents,
        "queries": queries,
        "candidates": candidates,
    }


def label_cost(chunk: Chunk, tokenizer: Tokenizer) -> int:
    """Tokens of the line the LLM reads above a passage (``[n] title — innermost heading, p. N``),
    counted in the budget: a unit from a new chunk opens a passage, and the label is read too."""
    return tokenizer.count(" ".join((chunk.title, *chunk.heading_path[-1:]))) + 6


def select_evidence(search: EvidenceSearch, budget: int, tokenizer: Tokenizer) -> list[ScoredUnit]:
    """Fill ``budget`` tokens: one unit of each needed document first, then the rest by score.

    A row costs its own tokens plus, the first time its table appears in a passage, the
    table header and group label it is shown with. A unit whose words were already chosen
    (a row repeated in the next period's filing) is skipped, and so is one whose figures its
    own document already stated (the row restated in a note), and a table-of-contents entry.
    """
    by_document: dict[int, list[ScoredUnit]] = {}
    for candidate in search.units:
        by_document.setdefault(candidate.document_rank, []).append(candidate)
    chosen: list[ScoredUnit] = []
    stated: set[str] = set()
    figures_of_document: dict[str, set[str]] = {}
    headers: set[tuple[str, str]] = set()
    passages: set[str] = set()
    used = 0

    def take(candidate: ScoredUnit) -> bool:
        nonlocal used
        unit = candidate.unit
        said = " ".join(unit.text.split())
        if said in stated:  # the same row or sentence in another period's filing adds nothing
            return False
        if is_contents_line(unit.text):  # a contents entry points to the evidence; it is not any
            return False
        unit_figures = figures(unit.text)
        known = figures_of_document.setdefault(unit.doc_id, set())
        if unit_figures and unit_figures <= known:
            return False
        cost = tokenizer.count(unit.text) + 1
        if unit.chunk_id not in passages:
            cost += label_cost(candidate.chunk, tokenizer)
        header_key = (unit.chunk_id, unit.table_header)
        if unit.kind == "row" and header_key not in headers:
            cost += tokenizer.count(unit.table_header) + 1
        if unit.row_group:
            cost += tokenizer.count(unit.row_group) + 1
        if used + cost > budget:
            return False
        used += cost
        chosen.append(candidate)
        stated.add(said)
        known |= unit_figures
        passages.add(unit.chunk_id)
        if unit.kind == "row":
            headers.add(header_key)
        return True

    for rank in sorted(by_document):  # coverage first: every needed document gets its best unit
        for candidate in by_document[rank]:
            if take(candidate):
                break
    for candidate in search.units:  # a unit taken above is skipped: its words are stated
        take(candidate)
    return chosen
