"""The OpenAPI 3.1 description of the HTTP API, served at ``/openapi.json``.

Request bodies come from the models the handlers parse with (:mod:`server.http_models`);
responses are described here.
"""

from __future__ import annotations

from typing import Any

from server.http_models import AskBody, FeedbackBody, SearchBody, request_schema

_CITATION = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "description": "the [n] used in the answer text"},
        "title": {"type": "string"},
        "source": {"type": "string", "description": "file path or URL of the document"},
        "pages": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "first and last page (0: no pages)",
        },
        "heading_path": {"type": "array", "items": {"type": "string"}},
        "passage_id": {"type": "string"},
        "link": {"type": "string", "description": "opens the document at the cited page"},
    },
}
_EVIDENCE = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "description": "the citation number of the passage the quote is from"},
        "text": {"type": "string", "description": "the document's own words: a sentence or a table row"},
        "context": {"type": "string", "description": "a row's table caption, column labels and group"},
        "source": {"type": "string"},
        "pages": {"type": "array", "items": {"type": "integer"}},
        "heading_path": {"type": "array", "items": {"type": "string"}},
        "passage_id": {"type": "string"},
        "link": {"type": "string", "description": "opens the document at the quote's page"},
    },
}
_ANSWER = {
    "type": "object",
    "properties": {
        "answer_id": {"type": "string"},
        "conversation_id": {"type": "string", "description": "send it back to ask a follow-up question"},
        "question": {"type": "string", "description": "the standalone question the agent answered"},
        "answer": {"type": "string", "description": "a short answer with [n] citations"},
        "outcome": {"type": "string", "enum": ["answered", "no_documents", "unverified", "llm_unavailable"]},
        "domain": {"type": ["string", "null"]},
        "citations": {"type": "array", "items": _CITATION},
        "evidence": {
            "type": "array",
            "items": _EVIDENCE,
            "description": "the 1–5 quotes the answer rests on, verbatim from the documents",
        },
        "verdicts": {"type": "object", "properties": {"supported": {}, "useful": {}}},
        "trace": {"type": "array", "items": {"type": "object"}, "description": "every agent step, in order"},
        "index_version": {
            "type": "string",
            "description": "the index version every search of this answer read",
        },
        "request_id": {"type": "string", "description": "also in the logs and every trace step"},
    },
}
_ERROR = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
_HEALTH = {
    "type": "object",
    "required": ["status", "index_version", "live_version"],
    "properties": {
        "status": {"type": "string", "enum": ["ok", "starting"]},
        "index_version": {"type": ["string", "null"]},
        "live_version": {"type": ["string", "null"]},
        "searches_waiting": {"type": "integer"},
    },
}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


_ERRORS = {
    "400": {"description": "invalid request", **_json(_ERROR)},
    "401": {"description": "no valid API key (when keys are configured)", **_json(_ERROR)},
    "403": {"description": "a collection this API key may not read", **_json(_ERROR)},
    "404": {"description": "an unknown id (or another caller's conversation)", **_json(_ERROR)},
    "413": {"description": "request body too large"},
    "503": {
        "description": "the LLM, the index, the database or the search queue is unavailable right now; "
        "retry after the Retry-After seconds",
        **_json(_ERROR),
    },
}
_ASK = request_schema(AskBody)

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "docfinder",
        "version": "0.1.0",
        "description": "Cited answers from your documentation.",
    },
    "paths": {
        "/v1/ask": {
            "post": {
                "summary": "Answer a question with citations",
                "requestBody": {"required": True, **_json(_ASK)},
                "responses": {"200": {"description": "the answer", **_json(_ANSWER)}, **_ERRORS},
            }
        },
        "/v1/ask/stream": {
            "post": {
                "summary": "Answer a question, streaming each agent step as server-sent events",
                "description": "Events: `status` (one per agent step, as it happens), then `answer` "
                "(the answer object without its trace) or `error`.",
                "requestBody": {"required": True, **_json(_ASK)},
                "responses": {
                    "200": {"description": "an event stream", "content": {"text/event-stream": {}}},
                    **_ERRORS,
                },
            }
        },
        "/v1/search": {
            "post": {
                "summary": "Rank passages for a query",
                "requestBody": {"required": True, **_json(request_schema(SearchBody))},
                "responses": {"200": {"description": "ranked passages"}, **_ERRORS},
            }
        },
        "/v1/feedback": {
            "post": {
                "summary": "Judge an answer (stored with the feedback from Slack, Teams and MCP)",
                "requestBody": {"required": True, **_json(request_schema(FeedbackBody))},
                "responses": {"201": {"description": "stored (committed)"}, **_ERRORS},
            }
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus metrics",
                "responses": {
                    "200": {"description": "text exposition format", "content": {"text/plain": {}}},
                    "401": _ERRORS["401"],
                },
            }
        },
        "/healthz": {
            "get": {
                "summary": "Liveness, the loaded and the live index version (no API key needed)",
                "security": [],
                "responses": {"200": {"description": "ok", **_json(_HEALTH)}},
            }
        },
    },
    "components": {
        "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer", "description": "an API key"}}
    },
    "security": [{"apiKey": []}],
}
