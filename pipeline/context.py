"""Assemble the LLM's context from retrieved hits: select under a token budget, then order.

Selection (:mod:`pipeline.selection`) works on whole passages (``topk``, ``mmr``, ``fps``)
or, with ``sentences``, on the passages' sentences: they are taken in retrieval order,
near-duplicates dropped, optionally only the top-n by a scorer kept, until the budget is
full. With ``evidence``, it takes the evidence units (sentences and table rows, with their
table headers) that in-document deepening found, covering every document the question
needs first (:mod:`pipeline.evidence`). Ordering (:mod:`pipeline.ordering`) then arranges
what was selected. Each piece keeps its chunk, so citations still point at document, page
and heading; pieces of one chunk are shown together as one numbered passage.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pipeline.evidence import EvidenceSearch, select_evidence
from pipeline.ordering import ContextOrder, Sentence, cluster_order, dedupe, order_ping_pong, split_sentences
from pipeline.protocols import Tokenizer
from pipeline.selection import Item, select
from pipeline.types import Chunk, EvidenceUnit, SearchHit, place_label

ContextSelection = Literal["topk", "mmr", "fps", "sentences", "evidence"]
CONTEXT_SELECTIONS: tuple[str, ...] = ("topk", "mmr", "fps", "sentences", "evidence")


class ContextConfig(BaseModel):
    """How context is selected and ordered, with the product's defaults: the ``context`` settings section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    selection: ContextSelection = Field(
        "evidence",
        description="How the LLM's context is chosen under the token budget; evidence: sentences and "
        "table rows of the documents the question needs, each document covered first.",
    )
    order: ContextOrder = Field(
        "document",
        description="How the selected context is ordered (document: by document, then reading order).",
    )
    budget_tokens: int = Field(
        2000, ge=64, description="Token budget of the context (T_max) for `search --context` and evaluation."
    )
    candidates: int = Field(40, ge=1, description="Retrieved passages that context selection chooses from.")
    mmr_alpha: float = Field(0.7, ge=0, le=1, description="MMR relevance/diversity trade-off.")
    mmr_window: int | None = Field(None, ge=1, description="MMR compares with the last w selections only.")
    fps_weight: float = Field(0.5, ge=0, le=1, description="FPS: weight of the score against spread.")
    pingpong: tuple[int, int] = Field((1, 1), description="Ping-pong placement m:n (front:back).")
    dedupe_threshold: float = Field(
        0.9, gt=0, le=1, description="Sentences at least this similar to one kept are dropped as duplicates."
    )
    top_sentences: int | None = Field(None, ge=1, description="Keep only the top-n sentences (reranker).")
    cluster_within: Literal["aggregation", "score"] = Field(
        "aggregation", description="Order inside a sentence cluster."
    )


@dataclass(frozen=True, slots=True)
class ContextPiece:
    """A passage, a sentence of one, or an evidence unit, placed in the context.

    ``group`` is the topic cluster (``cluster`` order) or, for evidence, the rank of the
    piece's document among those the question needs.
    """

    chunk: Chunk
    text: str
    score: float
    group: int = 0
    unit: EvidenceUnit | None = None

    @property
    def key(self) -> str:
        return self.unit.unit_id if self.unit is not None else f"{self.chunk.chunk_id}:{self.text[:64]}"


def render_pieces(pieces: Sequence[ContextPiece]) -> str:
    """Pieces as the LLM reads them: a table row under its table header and group label, shown once."""
    lines: list[str] = []
    header = group = None
    for piece in pieces:
        unit = piece.unit
        if unit is not None and unit.kind == "row":
            if (piece.chunk.chunk_id, unit.table_header) != header:
                header, group = (piece.chunk.chunk_id, unit.table_header), None
                if unit.table_header:
                    lines.append(unit.table_header)
            if unit.row_group and unit.row_group != group:
                group = unit.row_group
                lines.append(unit.row_group)
        else:
            header = group = None
        lines.append(piece.text)
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Passage:
    """The pieces of one chunk in the context: what the LLM sees under one citation number.

    ``period`` is the document's period or version ("2023 Q1"), shown beside its title so
    that evidence from several periods cannot be confused.
    """

    chunk: Chunk
    pieces: tuple[ContextPiece, ...]
    period: str = ""

    def label(self) -> str:
        """``title (period) — heading › subheading, pages``: where the passage is, for people."""
        return place_label(self._title(), self.chunk.heading_path, self.chunk.pages)

    def evidence_label(self) -> str:
        """``title (period) — innermost heading, pages``: the label the LLM reads above the passage.

        The outer headings of a long path ("FORM 10-Q › NVIDIA CORPORATION › Page › ...") cost
        tokens above every passage of a prompt and tell the model nothing the innermost does not.
        """
        return place_label(self._title(), self.chunk.heading_path[-1:], self.chunk.pages)

    def _title(self) -> str:
        title = self.chunk.title or self.chunk.source
        return f"{title} ({self.period})" if self.period and self.period not in title else title

    @property
    def text(self) -> str:
        return render_pieces(self.pieces)

    @property
    def score(self) -> float:
        return max(p.score for p in self.pieces)


def group_passages(pieces: Sequence[ContextPiece]) -> list[Passage]:
    """Pieces grouped by chunk, chunks in order of first appearance, pieces in reading order."""
    grouped: dict[str, list[ContextPiece]] = {}
    for piece in pieces:
        grouped.setdefault(piece.chunk.chunk_id, []).append(piece)
    return [
        Passage(group[0].chunk, tuple(sorted(group, key=_reading_order) if group[0].unit else group))
        for group in grouped.values()
    ]


def whole_passages(hits: Sequence[SearchHit]) -> list[Passage]:
    """Each hit's chunk as one passage, whole (no selection)."""
    return [Passage(h.chunk, (ContextPiece(h.chunk, h.chunk.text, h.score),)) for h in hits]


@dataclass(frozen=True, slots=True)
class Retrieved:
    """What a retrieval hands the agent: numbered passages, and details for the trace."""

    passages: list[Passage]
    details: dict[str, Any] = field(default_factory=dict)


def _reading_order(piece: ContextPiece) -> str:
    return piece.unit.unit_id if piece.unit is not None else ""


@dataclass(frozen=True, slots=True)
class Context:
    """The ordered context, its size in tokens, and what each stage did."""

    pieces: list[ContextPiece]
    tokens: int
    trace: list[dict[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in group_passages(self.pieces))

    def passages(self) -> list[Passage]:
        """The context as numbered passages (one per chunk)."""
        return group_passages(self.pieces)


def build_context(
    hits: Sequence[SearchHit],
    config: ContextConfig,
    *,
    tokenizer: Tokenizer,
    chunk_vector: Callable[[Chunk], np.ndarray],
    query_vector: np.ndarray,
    stored_vectors: Callable[[Sequence[ContextPiece]], list[np.ndarray | None]] | None = None,
    sentence_scorer: Callable[[Sequence[str]], Sequence[float]] | None = None,
    evidence: EvidenceSearch | None = None,
) -> Context:
    """Select from ``hits`` (best first) within the budget, then order; see the module docstring.

    The cluster order needs each sentence's vector: ``stored_vectors`` gives those computed
    at ingest (a sentence or row that is an evidence unit); a piece that is no unit (a table
    fragment, a heading line) takes its chunk's vector, so nothing is embedded per question.

    The ``evidence`` strategy selects from ``evidence`` (the in-document search's candidates);
    when the index holds no evidence units it falls back to ``topk`` and says so in the trace.
    """
    trace: list[dict[str, Any]] = []
    started = time.perf_counter()
    selection = config.selection
    if selection == "evidence" and (evidence is None or not evidence.units):
        trace.append(
            {"step": "select_context", "note": "no evidence units in the index: top-k passages used"}
        )
        selection = "topk"
    if selection == "evidence" and evidence is not None:
        trace.append(evidence.trace)
        chosen = select_evidence(evidence, config.budget_tokens, tokenizer)
        pieces = [ContextPiece(c.chunk, c.unit.text, c.score, c.document_rank, c.unit) for c in chosen]
    elif selection == "sentences":
        pieces = _select_sentences(hits, config, tokenizer, sentence_scorer, trace)
    else:
        items = [
            Item(
                h.chunk.chunk_id, h.chunk.text, tokenizer.count(h.chunk.text), h.score, chunk_vector(h.chunk)
            )
            for h in hits
        ]
        params = {"alpha": config.mmr_alpha, "window": config.mmr_window or 0, "weight": config.fps_weight}
        chosen = select(selection, items, config.budget_tokens, **params)
        by_key = {h.chunk.chunk_id: h for h in hits}
        pieces = [ContextPiece(by_key[i.key].chunk, i.text, i.score) for i in chosen]
    tokens = sum(tokenizer.count(p.text) for p in pieces) + sum(
        tokenizer.count(p.unit.table_header) for p in _first_of_each_table(pieces)
    )
    trace.append(
        {
            "step": "select_context",
            "ms": round((time.perf_counter() - started) * 1000, 3),
            "strategy": selection,
            "budget_tokens": config.budget_tokens,
            "tokens": tokens,
            "candidates": len(evidence.units) if selection == "evidence" and evidence else len(hits),
            "selected": [p.key if p.unit else p.chunk.chunk_id for p in pieces],
        }
    )
    started = time.perf_counter()
    ordered = (
        _order_evidence(pieces, config)
        if selection == "evidence"
        else _order(pieces, config, _SentenceVectors(chunk_vector, stored_vectors), query_vector)
    )
    trace.append(
        {
            "step": "order_context",
            "ms": round((time.perf_counter() - started) * 1000, 3),
            "order": config.order,
            "groups": len({p.group for p in ordered}),
        }
    )
    return Context(ordered, tokens, trace)


def _first_of_each_table(pieces: Sequence[ContextPiece]) -> list[ContextPiece]:
    seen: set[tuple[str, str]] = set()
    first = []
    for piece in pieces:
        if piece.unit is not None and piece.unit.kind == "row":
            key = (piece.chunk.chunk_id, piece.unit.table_header)
            if key not in seen:
                seen.add(key)
                first.append(piece)
    return first


def _order_evidence(pieces: list[ContextPiece], config: ContextConfig) -> list[ContextPiece]:
    """Evidence by document (the needed order) and reading order, or by score; passages stay whole."""
    if config.order == "score":
        return sorted(pieces, key=lambda p: -p.score)
    return sorted(pieces, key=lambda p: (p.group, p.key))


def _select_sentences(
    hits: Sequence[SearchHit],
    config: ContextConfig,
    tokenizer: Tokenizer,
    scorer: Callable[[Sequence[str]], Sequence[float]] | None,
    trace: list[dict[str, Any]],
) -> list[ContextPiece]:
    pool = [
        (hit, sentence, position)
        for hit in hits
        for position, sentence in enumerate(split_sentences(hit.chunk.text))
    ]
    kept = [pool[i] for i in dedupe([s for _, s, _ in pool], config.dedupe_threshold)]
    scores = [hit.score for hit, _, _ in kept]
    if scorer is not None and config.top_sentences:
        scores = list(scorer([s for _, s, _ in kept]))
        best = sorted(range(len(kept)), key=lambda i: -scores[i])[: config.top_sentences]
        keep = sorted(best)
        kept, scores = [kept[i] for i in keep], [scores[i] for i in keep]
    trace.append({"step": "sentences", "pooled": len(pool), "after_dedupe": len(kept)})
    pieces, used = [], 0
    for (hit, sentence, _), score in zip(kept, scores):
        size = tokenizer.count(sentence)
        if used + size <= config.budget_tokens:
            pieces.append(ContextPiece(hit.chunk, sentence, score))
            used += size
    return pieces


@dataclass(frozen=True, slots=True)
class _SentenceVectors:
    """Vectors of context pieces: those stored at ingest, else the vector of the piece's chunk."""

    chunk_vector: Callable[[Chunk], np.ndarray]
    stored: Callable[[Sequence[ContextPiece]], list[np.ndarray | None]] | None

    def __call__(self, pieces: Sequence[ContextPiece]) -> np.ndarray:
        found = self.stored(pieces) if self.stored is not None else [None] * len(pieces)
        vectors = [
            v if v is not None else self.chunk_vector(p.chunk) for p, v in zip(pieces, found, strict=True)
        ]
        return np.vstack(vectors) if vectors else np.zeros((0, 0), np.float32)


def _order(
    pieces: list[ContextPiece],
    config: ContextConfig,
    sentence_vectors: _SentenceVectors,
    query_vector: np.ndarray,
) -> list[ContextPiece]:
    if config.order == "score":
        return sorted(pieces, key=lambda p: -p.score)
    if config.order == "document":
        # Chunk ids are "<doc id>-<ordinal>", so sorting them restores each document's order.
        return sorted(pieces, key=lambda p: p.chunk.chunk_id)
    if config.order == "pingpong":
        ranked = sorted(pieces, key=lambda p: -p.score)
        return order_ping_pong(ranked, *config.pingpong)
    if config.order == "cluster":
        if not pieces:
            return []
        units = pieces if config.selection == "sentences" else _as_sentences(pieces)
        sentences = [Sentence(p.text, p.chunk.chunk_id, i, p.score) for i, p in enumerate(units)]
        vectors = sentence_vectors(units)
        groups = cluster_order(sentences, vectors, query_vector, within=config.cluster_within)
        return [
            ContextPiece(units[s.position].chunk, s.text, s.score, group)
            for group, members in enumerate(groups)
            for s in members
        ]
    raise ValueError(f"unknown context order {config.order!r}")


def _as_sentences(pieces: list[ContextPiece]) -> list[ContextPiece]:
    return [ContextPiece(p.chunk, s, p.score) for p in pieces for s in split_sentences(p.text)]
