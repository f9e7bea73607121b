"""Assemble the LLM's context from retrieved hits: select under a token budget, then order.

Selection (:mod:`pipeline.selection`) works on whole passages (``topk``, ``mmr``, ``fps``)
or, with ``sentences``, on the passages' sentences: they are taken in retrieval order,
near-duplicates dropped, optionally only the top-n by a scorer kept, until the budget is
full. Ordering (:mod:`pipeline.ordering`) then arranges what was selected. Each piece keeps
its chunk, so citations still point at document, page and heading.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from pipeline.ordering import ContextOrder, Sentence, cluster_order, dedupe, order_ping_pong, split_sentences
from pipeline.protocols import Tokenizer
from pipeline.selection import Item, select
from pipeline.types import Chunk, SearchHit

ContextSelection = Literal["topk", "mmr", "fps", "sentences"]
CONTEXT_SELECTIONS: tuple[str, ...] = ("topk", "mmr", "fps", "sentences")


@dataclass(frozen=True, slots=True)
class ContextConfig:
    """How context is selected and ordered; the service builds one from the settings."""

    selection: ContextSelection = "topk"
    order: ContextOrder = "score"
    budget_tokens: int = 2000
    mmr_alpha: float = 0.7
    mmr_window: int | None = None
    fps_weight: float = 0.5
    pingpong_front: int = 1
    pingpong_back: int = 1
    dedupe_threshold: float = 0.9
    top_sentences: int | None = None
    cluster_within: Literal["aggregation", "score"] = "aggregation"


@dataclass(frozen=True, slots=True)
class ContextPiece:
    """A passage, or a sentence of one, placed in the context."""

    chunk: Chunk
    text: str
    score: float
    group: int = 0


@dataclass(frozen=True, slots=True)
class Context:
    """The ordered context, its size in tokens, and what each stage did."""

    pieces: list[ContextPiece]
    tokens: int
    trace: list[dict[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in self.pieces)


def build_context(
    hits: Sequence[SearchHit],
    config: ContextConfig,
    *,
    tokenizer: Tokenizer,
    chunk_vector: Callable[[Chunk], np.ndarray],
    embed_texts: Callable[[Sequence[str]], np.ndarray],
    query_vector: np.ndarray,
    sentence_scorer: Callable[[Sequence[str]], Sequence[float]] | None = None,
) -> Context:
    """Select from ``hits`` (best first) within the budget, then order; see the module docstring."""
    trace: list[dict[str, Any]] = []
    started = time.perf_counter()
    if config.selection == "sentences":
        pieces = _select_sentences(hits, config, tokenizer, sentence_scorer, trace)
    else:
        items = [
            Item(
                h.chunk.chunk_id, h.chunk.text, tokenizer.count(h.chunk.text), h.score, chunk_vector(h.chunk)
            )
            for h in hits
        ]
        params = {"alpha": config.mmr_alpha, "window": config.mmr_window or 0, "weight": config.fps_weight}
        chosen = select(config.selection, items, config.budget_tokens, **params)
        by_key = {h.chunk.chunk_id: h for h in hits}
        pieces = [ContextPiece(by_key[i.key].chunk, i.text, i.score) for i in chosen]
    tokens = sum(tokenizer.count(p.text) for p in pieces)
    trace.append(
        {
            "step": "select_context",
            "ms": round((time.perf_counter() - started) * 1000, 3),
            "strategy": config.selection,
            "budget_tokens": config.budget_tokens,
            "tokens": tokens,
            "candidates": len(hits),
            "selected": [p.chunk.chunk_id for p in pieces],
        }
    )
    started = time.perf_counter()
    ordered = _order(pieces, config, embed_texts, query_vector)
    trace.append(
        {
            "step": "order_context",
            "ms": round((time.perf_counter() - started) * 1000, 3),
            "order": config.order,
            "groups": len({p.group for p in ordered}),
        }
    )
    return Context(ordered, tokens, trace)


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


def _order(
    pieces: list[ContextPiece],
    config: ContextConfig,
    embed_texts: Callable[[Sequence[str]], np.ndarray],
    query_vector: np.ndarray,
) -> list[ContextPiece]:
    if config.order == "score":
        return sorted(pieces, key=lambda p: -p.score)
    if config.order == "document":
        # Chunk ids are "<doc id>-<ordinal>", so sorting them restores each document's order.
        return sorted(pieces, key=lambda p: p.chunk.chunk_id)
    if config.order == "pingpong":
        ranked = sorted(pieces, key=lambda p: -p.score)
        return order_ping_pong(ranked, config.pingpong_front, config.pingpong_back)
    if config.order == "cluster":
        if not pieces:
            return []
        units = pieces if config.selection == "sentences" else _as_sentences(pieces)
        sentences = [Sentence(p.text, p.chunk.chunk_id, i, p.score) for i, p in enumerate(units)]
        vectors = embed_texts([s.text for s in sentences])
        groups = cluster_order(sentences, vectors, query_vector, within=config.cluster_within)
        return [
            ContextPiece(units[s.position].chunk, s.text, s.score, group)
            for group, members in enumerate(groups)
            for s in members
        ]
    raise ValueError(f"unknown context order {config.order!r}")


def _as_sentences(pieces: list[ContextPiece]) -> list[ContextPiece]:
    return [ContextPiece(p.chunk, s, p.score) for p in pieces for s in split_sentences(p.text)]
