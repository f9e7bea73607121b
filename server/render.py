"""JSON renderings shared by every front door (CLI, HTTP, MCP), so scripts see one shape."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from pipeline.answers import AskResult
from pipeline.context import Context
from pipeline.types import SearchHit


def hit_to_json(hit: SearchHit, public_source: Callable[[str], str] | None = None) -> dict[str, Any]:
    """The stable JSON shape of a search hit that scripts rely on.

    ``public_source`` rewrites the server's file path for remote callers (see
    :meth:`DocfinderService.public_source`).
    """
    chunk = hit.chunk
    return {
        "chunk_id": chunk.chunk_id,
        "score": round(hit.score, 6),
        "text": chunk.text,
        "source": public_source(chunk.source) if public_source else chunk.source,
        "title": chunk.title,
        "pages": list(chunk.pages),
        "heading_path": list(chunk.heading_path),
        "collection": chunk.collection,
        "branch_scores": {k: round(v, 6) for k, v in hit.branch_scores.items()},
    }


def context_to_json(context: Context) -> dict[str, Any]:
    """The assembled context: pieces in order, each with its citation fields."""
    return {
        "tokens": context.tokens,
        "pieces": [
            {
                "chunk_id": p.chunk.chunk_id,
                "text": p.text,
                "score": round(p.score, 6),
                "group": p.group,
                "source": p.chunk.source,
                "pages": list(p.chunk.pages),
                "heading_path": list(p.chunk.heading_path),
            }
            for p in context.pieces
        ],
    }


def answer_to_json(result: AskResult, trace: bool = True) -> dict[str, Any]:
    """The stable JSON shape of an answer (CLI ``ask --json``, HTTP, MCP)."""
    agent = result.agent
    payload: dict[str, Any] = {
        "answer_id": result.answer_id,
        "conversation_id": result.conversation_id,
        "question": agent.question,
        "answer": agent.answer,
        "outcome": agent.outcome,
        "domain": agent.domain,
        "citations": [
            {**asdict(c), "pages": list(c.pages), "heading_path": list(c.heading_path)}
            for c in agent.citations
        ],
        "evidence": [
            {**asdict(q), "pages": list(q.pages), "heading_path": list(q.heading_path)}
            for q in agent.evidence
        ],
        "verdicts": agent.verdicts,
        "index_version": result.index_version,
        "request_id": result.request_id,
    }
    if trace:
        payload["trace"] = agent.trace
    return payload
