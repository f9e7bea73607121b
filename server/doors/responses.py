"""The one JSON shape of every reply, as pydantic models: HTTP, ``--json`` and MCP return these.

The HTTP handlers and the MCP tools build their replies from these models, the CLI prints
them with ``--json``, MCP derives its tools' output schemas from them and ``/openapi.json``
its response schemas (:mod:`server.doors.openapi`), so a field has one name everywhere
(``passage_id``, ``index_version``, ``passages``) and the documents cannot drift from what
is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.answers import AskResult, Outcome
from pipeline.retrieval.context import Context
from pipeline.types import Chunk

if TYPE_CHECKING:
    from server.core.search import SearchResult


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PassageOut(_Reply):
    """A passage of a document: a search hit (with its score) or one read by id."""

    passage_id: str = Field(description="Pass to get_passage (MCP) for the full passage.")
    score: float | None = Field(None, description="the fused search score; null when read by id")
    text: str
    title: str
    source: str = Field(description="the document's path or URL as ingested (public form for remote callers)")
    pages: list[int] = Field(description="first and last page (0 for formats without pages)")
    heading_path: list[str]
    collection: str
    doc_id: str
    branch_scores: dict[str, float] = Field(
        default_factory=dict, description="each retrieval branch's score (bm25, dense, rerank)"
    )


class ContextPieceOut(_Reply):
    """One piece of the LLM's context, in the order the LLM reads them."""

    passage_id: str
    text: str
    score: float
    group: int = Field(description="pieces of one group sit together (clustered ordering)")
    source: str
    pages: list[int]
    heading_path: list[str]


class ContextOut(_Reply):
    """The context assembled for the LLM under its token budget."""

    tokens: int
    pieces: list[ContextPieceOut]


class SearchOut(_Reply):
    """Ranked passages for a query, all from one index version."""

    query: str
    mode: str
    index_version: str
    passages: list[PassageOut]
    context: ContextOut | None = Field(None, description="the assembled context, when asked for (CLI)")
    trace: list[dict[str, Any]] | None = Field(None, description="the retrieval steps, when asked for")


class CitationOut(_Reply):
    n: int = Field(description="the number the answer cites as [n]")
    title: str
    source: str = Field(description="the document's path or URL as ingested")
    link: str = Field(description="opens the document at the cited page")
    pages: list[int] = Field(description="first and last page of the passage (0 for formats without pages)")
    heading_path: list[str]
    passage_id: str = Field(description="Pass to get_passage (MCP) for the full passage.")


class EvidenceOut(_Reply):
    n: int = Field(description="the citation number of the passage the quote comes from")
    text: str = Field(description="the document's own words: a sentence, or a table row (Markdown)")
    context: str = Field(description="a table row's caption, column labels and group; empty for sentences")
    source: str
    link: str = Field(description="opens the document at the quote's page")
    pages: list[int]
    heading_path: list[str]
    passage_id: str


class AnswerOut(_Reply):
    """A cited answer, its evidence, the checks' verdicts and the ids to continue or judge it."""

    answer_id: str = Field(description="Pass to feedback (submit_feedback over MCP) to judge this answer.")
    conversation_id: str = Field(description="Send it back as conversation_id to ask a follow-up question.")
    question: str = Field(description="the standalone question that was answered")
    answer: str = Field(description="a short answer with [n] citations")
    outcome: Outcome
    domain: str | None
    citations: list[CitationOut]
    evidence: list[EvidenceOut] = Field(description="the 1–5 quotes the answer rests on, verbatim")
    verdicts: dict[str, str | None] = Field(description="the grounded ('supported') and 'useful' checks")
    index_version: str = Field(description="the index version every search of this answer read")
    request_id: str = Field(description="also in the logs and every trace step")
    trace: list[dict[str, Any]] | None = Field(None, description="every agent step, in order, when asked for")


class DocumentOut(_Reply):
    doc_id: str
    title: str
    source: str
    collection: str
    pages: int
    index_version: str
    passages: list[PassageOut]


class CollectionOut(_Reply):
    name: str
    description: str
    documents: int
    chunks: int


class CollectionsOut(_Reply):
    index_version: str
    collections: list[CollectionOut]


class FeedbackOut(_Reply):
    feedback_id: int
    answer_id: str
    stored: bool = Field(True, description="committed before this reply was sent")


class HealthOut(_Reply):
    status: Literal["ok", "starting"]
    index_version: str | None = Field(description="the version this process serves")
    live_version: str | None = Field(description="the version live on disk (served from the next search on)")
    searches_waiting: int
    llm: str = Field(
        description="a server LLM: 'ready' (it answered within the last 30 s, or answers a probe now) or "
        "'unavailable'; the embedded model: 'not started', 'ready', 'restarting' or 'cannot run'"
    )
    llm_reason: str | None = Field(None, description="why the LLM is unavailable (no address is given)")
    program: str = Field(description="the answering program: 'built-in' or a compiled program's name")


class ErrorOut(_Reply):
    error: str


class AuditPassageOut(_Reply):
    key: str = Field(description="the evidence unit's id")
    doc_id: str
    chunk_id: str
    collection: str
    text: str = Field(description="the document's own words")
    title: str
    heading: str
    page: int
    source: str
    link: str = Field(description="opens the passage (empty where the source has no published URL)")
    subject: str = Field(
        description="what the statement was read with: a row's header, a short sentence's heading"
    )


class FindingOut(_Reply):
    kind: Literal["contradiction", "stale", "near_duplicate", "broken_link", "unanswered"]
    severity: Literal["high", "medium", "low"]
    confidence: float
    why: str
    passages: list[AuditPassageOut]
    diff: str = Field(description="the words that differ: [-removed-] {+added+}")
    asked: list[str] = Field(description="an unanswered-demand finding's questions")
    count: int = Field(description="how often it was asked, or how many pairs share the drift")
    collections: list[str]


class AuditOut(_Reply):
    about: dict[str, Any] = Field(description="index version, collections, statements compared, seconds")
    counts: dict[str, dict[str, int]] = Field(description="findings per collection and kind")
    findings: list[FindingOut] = Field(description="most severe first")


Public = Callable[[str], str]


def _same(source: str) -> str:
    return source


def passage_out(
    chunk: Chunk,
    score: float | None = None,
    public: Public = _same,
    branch_scores: dict[str, float] | None = None,
) -> PassageOut:
    """A chunk as a passage; ``public`` rewrites the server's file path for remote callers."""
    return PassageOut(
        passage_id=chunk.chunk_id,
        score=round(score, 6) if score is not None else None,
        text=chunk.text,
        title=chunk.title,
        source=public(chunk.source),
        pages=list(chunk.pages),
        heading_path=list(chunk.heading_path),
        collection=chunk.collection,
        doc_id=chunk.doc_id,
        branch_scores={k: round(v, 6) for k, v in (branch_scores or {}).items()},
    )


def context_out(context: Context) -> ContextOut:
    """The assembled context: pieces in order, each with its citation fields."""
    return ContextOut(
        tokens=context.tokens,
        pieces=[
            ContextPieceOut(
                passage_id=p.chunk.chunk_id,
                text=p.text,
                score=round(p.score, 6),
                group=p.group,
                source=p.chunk.source,
                pages=list(p.chunk.pages),
                heading_path=list(p.chunk.heading_path),
            )
            for p in context.pieces
        ],
    )


def search_out(result: SearchResult, public: Public = _same, trace: bool = False) -> SearchOut:
    """A search result; its context, when one was assembled, and its trace when asked for."""
    return SearchOut(
        query=result.query,
        mode=result.mode,
        index_version=result.version,
        passages=[passage_out(h.chunk, h.score, public, h.branch_scores) for h in result.hits],
        context=context_out(result.context) if result.context is not None else None,
        trace=result.trace if trace else None,
    )


def answer_out(result: AskResult, trace: bool = True) -> AnswerOut:
    """An answer (CLI ``ask --json``, HTTP, MCP); the trace only when asked for."""
    agent = result.agent
    return AnswerOut(
        answer_id=result.answer_id,
        conversation_id=result.conversation_id,
        question=agent.question,
        answer=agent.answer,
        outcome=agent.outcome,
        domain=agent.domain,
        citations=[CitationOut.model_validate(asdict(c)) for c in agent.citations],
        evidence=[EvidenceOut.model_validate(asdict(q)) for q in agent.evidence],
        verdicts=agent.verdicts,
        index_version=result.index_version,
        request_id=result.request_id,
        trace=agent.trace if trace else None,
    )


def audit_out(findings: Any, about: dict[str, Any], limit: int) -> AuditOut:
    """An audit's most severe ``limit`` findings, with the counts of all of them."""
    from pipeline.audit.findings import counts
    from pipeline.audit.report import report_json

    document = report_json(
        findings[:limit], {**about, "findings": len(findings), "returned": min(limit, len(findings))}
    )
    return AuditOut.model_validate({**document, "counts": counts(findings)})


def to_json(reply: BaseModel) -> dict[str, Any]:
    """A reply as JSON-ready data, every field present (null where not asked for), as MCP sends it."""
    return reply.model_dump(mode="json")


class ConversationEntryOut(_Reply):
    conversation_id: str
    title: str = Field(description="its first question")
    updated_at: str
    turns: int


class ConversationsOut(_Reply):
    """This API key's conversations, the latest first."""

    conversations: list[ConversationEntryOut]


class TurnOut(_Reply):
    role: Literal["user", "assistant"]
    text: str
    answer_id: str | None = Field(description="the answer's id, to judge it (assistant turns)")
    created_at: str


class ConversationOut(_Reply):
    """One of this API key's conversations, turn by turn, oldest first."""

    conversation_id: str
    turns: list[TurnOut]


class GroupOut(_Reply):
    records: int
    mean_rating: float | None
    labels: dict[str, int]


class FeedbackSummaryOut(_Reply):
    """Every judgement summed up: what the admin page charts."""

    records: int
    ratings: dict[str, int] = Field(description="answers per star rating, 1 to 5")
    mean_rating: float | None
    labels: dict[str, int]
    by_platform: dict[str, int]
    by_domain: dict[str, GroupOut]
    by_collection: dict[str, GroupOut]
    by_day: dict[str, GroupOut] = Field(description="per day (YYYY-MM-DD, UTC)")
    worst_questions: list[dict[str, Any]] = Field(
        description="question, mean_rating, judgements, labels, answer, sources; the worst first"
    )
