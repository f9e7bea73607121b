"""Assemble the LLM's context from retrieved hits: select under a token budget, then order.

Selection (:mod:`pipeline.retrieval.selection`) works on whole passages (``topk``, ``mmr``, ``fps``)
or, with ``sentences``, on the passages' sentences: they are taken in retrieval order,
near-duplicates dropped, optionally only the top-n by a scorer kept, until the budget is
full. With ``evidence``, it takes the evidence units (sentences and table rows, with their
table headers) that in-document deepening found, covering every document the question
needs first (:mod:`pipeline.retrieval.evidence`). Ordering (:mod:`pipeline.retrieval.ordering`) then arranges
what was selected. Each piece keeps its chunk, so citations still point at document, page
and heading; pieces of one chunk are shown together as one numbered passage.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pipeline.errors import ConfigurationError
from pipeline.protocols import Tokenizer
from pipeline.registry import Registry
from pipeline.retrieval.evidence import EvidenceSearch
from pipeline.retrieval.ordering import order_ping_pong
from pipeline.retrieval.selection import Item
from pipeline.steps import Step
from pipeline.types import Chunk, EvidenceUnit, SearchHit, place_label

EVIDENCE_ORDERS = ("document", "score", "pingpong")  # the orders the evidence selection applies
UNIT_SELECTIONS = ("evidence", "blend")  # the selections that choose evidence units (in-document search)


class ContextConfig(BaseModel):
    """How context is selected and ordered, with the product's defaults: the ``context`` settings section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    selection: str = Field(
        "blend",
        description="How the LLM's context is chosen under the token budget (topk, mmr, fps, sentences, "
        "evidence, blend, or a registered one); evidence: sentences and table rows of the needed documents, "
        "each covered first; blend: the best passages whole in chunk_share, units in the rest (units_for).",
    )
    order: str = Field(
        "document",
        description="How the selected context is ordered (score, document, pingpong, cluster, or a "
        "registered one; document: by document, then reading order). The evidence selection "
        "applies document, score and pingpong (its passages) and refuses the others.",
    )
    budget_tokens: int = Field(
        1300,
        ge=64,
        description="Token budget (embedder tokens, passage labels included) of the evidence the answering "
        "LLM reads, and of `search --context`; the embedded model's 4,096-token window and speed set the "
        "default.",
    )
    candidates: int = Field(40, ge=1, description="Retrieved passages that context selection chooses from.")
    mmr_alpha: float = Field(0.7, ge=0, le=1, description="MMR relevance/diversity trade-off.")
    mmr_window: int | None = Field(None, ge=1, description="MMR compares with the last w selections only.")
    fps_weight: float = Field(0.5, ge=0, le=1, description="FPS: weight of the score against spread.")
    pingpong: tuple[int, int] = Field((1, 1), description="Ping-pong placement m:n (front:back).")
    dedupe_threshold: float = Field(
        0.9, gt=0, le=1, description="Sentences at least this similar to one kept are dropped as duplicates."
    )
    top_sentences: int | None = Field(
        None,
        ge=1,
        description="With the sentences selection, keep only the n sentences the cross-encoder "
        "(retrieval.reranker_path) scores best for the question; needs the reranker.",
    )
    cluster_within: Literal["aggregation", "score"] = Field(
        "aggregation", description="Order inside a sentence cluster."
    )
    chunk_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="The blend selection: the share of the budget given to the best passages whole; the "
        "rest goes to the best evidence units (sentences, table rows) of the documents the question needs.",
    )
    units_for: Literal["every", "focused"] = Field(
        "every",
        description="The blend selection's units: for every question, or focused (for one naming its "
        "documents or whose best passages share one; the others read top-k passages).",
    )

    @field_validator("selection")
    @classmethod
    def _known_selection(cls, selection: str) -> str:
        return SELECTIONS.check(selection)

    @field_validator("order")
    @classmethod
    def _known_order(cls, order: str) -> str:
        return ORDERINGS.check(order)

    @model_validator(mode="after")
    def _applied_together(self) -> ContextConfig:
        """Refuse a combination in which one setting would be silently ignored."""
        if self.selection in UNIT_SELECTIONS and self.order not in EVIDENCE_ORDERS:
            raise ValueError(
                f"order {self.order!r} is not applied to the evidence selection, whose units are "
                "already sentences and table rows shown under their passage: use one of "
                f"{', '.join(EVIDENCE_ORDERS)}, or another selection (the cluster order splits whole "
                "passages into sentences)"
            )
        if self.top_sentences is not None and self.selection != "sentences":
            raise ValueError(
                f"top_sentences keeps the best sentences of the sentences selection; the {self.selection!r} "
                "selection would ignore it: set selection = 'sentences' or leave top_sentences unset"
            )
        return self


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


@dataclass(frozen=True, slots=True)
class SelectionInput:
    """What a selection strategy chooses from: the retrieved hits (or, for ``evidence``, the
    in-document search's candidates), under ``config.budget_tokens`` as ``tokenizer`` counts;
    a strategy may add entries to ``trace``."""

    hits: Sequence[SearchHit]
    config: ContextConfig
    tokenizer: Tokenizer
    chunk_vector: Callable[[Chunk], np.ndarray]
    evidence: EvidenceSearch | None = None
    sentence_scorer: Callable[[Sequence[str]], Sequence[float]] | None = None
    trace: list[dict[str, Any]] = field(default_factory=list)


Selection = Callable[[SelectionInput], list["ContextPiece"]]
# The context selection strategies, one module each in pipeline/retrieval/selections/.
SELECTIONS: Registry[Selection] = Registry("context selection", "pipeline.retrieval.selections")


def choose_passages(
    selection: SelectionInput, choose: Callable[[list[Item], int], list[Item]]
) -> list[ContextPiece]:
    """Whole passages, chosen by ``choose`` (items, budget → the items kept, in context order)."""
    tokenizer, chunk_vector = selection.tokenizer, selection.chunk_vector
    hits = selection.hits
    items = [
        Item(h.chunk.chunk_id, h.chunk.text, tokenizer.count(h.chunk.text), h.score, chunk_vector(h.chunk))
        for h in hits
    ]
    by_key = {h.chunk.chunk_id: h for h in hits}
    return [
        ContextPiece(by_key[i.key].chunk, i.text, i.score)
        for i in choose(items, selection.config.budget_tokens)
    ]


@dataclass(frozen=True, slots=True)
class OrderInput:
    """What an ordering arranges: the pieces chosen, the configuration, their vectors, the query's."""

    pieces: list[ContextPiece]
    config: ContextConfig
    vectors: Callable[[Sequence[ContextPiece]], np.ndarray]
    query_vector: np.ndarray


Ordering = Callable[[OrderInput], list["ContextPiece"]]
# The context orderings, one module each in pipeline/retrieval/orderings/.
ORDERINGS: Registry[Ordering] = Registry("context order", "pipeline.retrieval.orderings")


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
    documents_name: Callable[[str], bool] | None = None  # whether a searched document names a word


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
    if config.top_sentences is not None and sentence_scorer is None:
        raise ConfigurationError(
            "context.top_sentences needs a sentence scorer: configure a cross-encoder "
            "(retrieval.reranker_path)"
        )
    trace: list[dict[str, Any]] = []
    started = time.perf_counter()
    selection = config.selection
    if selection in UNIT_SELECTIONS and (evidence is None or not evidence.units):
        trace.append(
            {"step": Step.SELECT_CONTEXT, "note": "no evidence units in the index: top-k passages used"}
        )
        selection = "topk"
    pieces = SELECTIONS[selection](
        SelectionInput(hits, config, tokenizer, chunk_vector, evidence, sentence_scorer, trace)
    )
    tokens = sum(tokenizer.count(p.text) for p in pieces) + sum(
        tokenizer.count(p.unit.table_header) for p in _first_of_each_table(pieces)
    )
    trace.append(
        {
            "step": Step.SELECT_CONTEXT,
            "ms": round((time.perf_counter() - started) * 1000, 3),
            "strategy": selection,
            "budget_tokens": config.budget_tokens,
            "tokens": tokens,
            "candidates": len(evidence.units) if selection in UNIT_SELECTIONS and evidence else len(hits),
            "selected": [p.key if p.unit else p.chunk.chunk_id for p in pieces],
        }
    )
    started = time.perf_counter()
    ordered = (
        _order_evidence(pieces, config)
        if selection in UNIT_SELECTIONS
        else ORDERINGS[config.order](
            OrderInput(pieces, config, SentenceVectors(chunk_vector, stored_vectors), query_vector)
        )
    )
    trace.append(
        {
            "step": Step.ORDER_CONTEXT,
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
    """Evidence by document (the needed order) and reading order, by score, or its passages
    (each ranked by its best unit) placed ping-pong, each passage's units in reading order."""
    if config.order == "score":
        return sorted(pieces, key=lambda p: -p.score)
    if config.order == "pingpong":
        of_passage: dict[str, list[ContextPiece]] = {}
        for piece in pieces:
            of_passage.setdefault(piece.chunk.chunk_id, []).append(piece)
        ranked = sorted(of_passage.values(), key=lambda group: -max(p.score for p in group))
        placed = order_ping_pong(ranked, *config.pingpong)
        return [p for group in placed for p in sorted(group, key=_reading_order)]
    return sorted(pieces, key=lambda p: (p.group, p.key))


@dataclass(frozen=True, slots=True)
class SentenceVectors:
    """Vectors of context pieces: those stored at ingest, else the vector of the piece's chunk."""

    chunk_vector: Callable[[Chunk], np.ndarray]
    stored: Callable[[Sequence[ContextPiece]], list[np.ndarray | None]] | None

    def __call__(self, pieces: Sequence[ContextPiece]) -> np.ndarray:
        found = self.stored(pieces) if self.stored is not None else [None] * len(pieces)
        vectors = [
            v if v is not None else self.chunk_vector(p.chunk) for p, v in zip(pieces, found, strict=True)
        ]
        return np.vstack(vectors) if vectors else np.zeros((0, 0), np.float32)
