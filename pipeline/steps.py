"""The steps of answering a question, by one name each: the agent's trace, the HTTP API's
status events, MCP progress, the bots' placeholders and the step metric all use these.

A :class:`Step` is a string (``Step.RETRIEVE == "retrieve"``), so traces and JSON keep their
shape; being one closed set, a step name is also safe as a metric label.
"""

from __future__ import annotations

from enum import StrEnum


class Step(StrEnum):
    # The service, before and around the agent.
    RECEIVED = "received"
    QUEUED = "queued"
    LLM_RESTARTED = "llm_restarted"
    LLM_UNAVAILABLE = "llm_unavailable"
    # Understanding the question.
    UNDERSTAND_SKIPPED = "understand_skipped"
    CONDENSE = "condense"
    CLASSIFY_QUERY = "classify_query"
    REVIEW_QUERY = "review_query"
    # Searching (one search's own trace: pipeline/retrieval/search.py, context.py, evidence.py).
    SCOPE = "scope"
    SELECT = "select"
    BM25 = "bm25"
    ENCODE_QUERY = "encode_query"
    SPARSE = "sparse"
    DENSE = "dense"
    COMPLETE_SCORES = "complete_scores"
    RERANK = "rerank"
    FUSE = "fuse"
    DEEPEN = "deepen"
    SENTENCES = "sentences"
    SELECT_CONTEXT = "select_context"
    ORDER_CONTEXT = "order_context"
    # Finding the evidence.
    RETRIEVE = "retrieve"
    SPARSE_FALLBACK = "sparse_fallback"
    TRANSFORM_QUERY = "transform_query"
    GRADE_DOCUMENTS = "grade_documents"
    EVIDENCE = "evidence"
    # Writing and checking the answer.
    GENERATE = "generate"
    GENERATE_SKIPPED = "generate_skipped"
    CITE_SENTENCES = "cite_sentences"
    CITE_FIGURES = "cite_figures"
    COMPOSE = "compose"
    SUPPORTED = "supported"
    USEFUL = "useful"
    QUOTE_EVIDENCE = "quote_evidence"
