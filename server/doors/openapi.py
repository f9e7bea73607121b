"""The OpenAPI 3.1 description of the HTTP API, served at ``/openapi.json``.

Every body's schema is generated from the model the code uses: requests from the models the
handlers parse with (:mod:`server.doors.request_models`), responses from the models they reply
with (:mod:`server.doors.responses`). Only the paths, summaries and status codes are written
here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from server.doors.request_models import AskBody, FeedbackBody, SearchBody
from server.doors.responses import (
    AnswerOut,
    AuditOut,
    ConversationOut,
    ConversationsOut,
    ErrorOut,
    FeedbackOut,
    FeedbackSummaryOut,
    HealthOut,
    PassageOut,
    SearchOut,
)

REQUESTS: tuple[type[BaseModel], ...] = (AskBody, SearchBody, FeedbackBody)
RESPONSES: tuple[type[BaseModel], ...] = (
    AnswerOut,
    SearchOut,
    FeedbackOut,
    HealthOut,
    ErrorOut,
    AuditOut,
    ConversationsOut,
    ConversationOut,
    PassageOut,
    FeedbackSummaryOut,
)


def component_schemas() -> dict[str, Any]:
    """Every request model's validation schema and every response model's serialisation schema,
    under ``#/components/schemas/``."""
    pairs = [(m, "validation") for m in REQUESTS] + [(m, "serialization") for m in RESPONSES]
    _, document = models_json_schema(pairs, ref_template="#/components/schemas/{model}")  # type: ignore[arg-type]
    return document["$defs"]


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


_ERROR = _ref(ErrorOut)
_ERRORS = {
    "400": {"description": "invalid request", **_json(_ERROR)},
    "401": {"description": "no valid API key (when keys are configured)", **_json(_ERROR)},
    "403": {
        "description": "an action outside this API key's scopes, or a collection it may not read",
        **_json(_ERROR),
    },
    "404": {"description": "an unknown id (or another caller's conversation)", **_json(_ERROR)},
    "408": {"description": "the request body did not arrive in time", **_json(_ERROR)},
    "413": {"description": "request body too large"},
    "415": {"description": "a body that is not sent as application/json", **_json(_ERROR)},
    "421": {
        "description": "a server without API keys asked under another name than its loopback names",
        **_json(_ERROR),
    },
    "503": {
        "description": "the LLM, the index, the database or the search queue is unavailable right now; "
        "retry after the Retry-After seconds",
        **_json(_ERROR),
    },
}
_ASK = _ref(AskBody)

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
                "responses": {"200": {"description": "the answer", **_json(_ref(AnswerOut))}, **_ERRORS},
            }
        },
        "/v1/ask/stream": {
            "post": {
                "summary": "Answer a question, streaming each agent step as server-sent events",
                "description": "Events: `status` (one per agent step, as it happens), `token` "
                '(`{"text", "draft"}`: the answer as the LLM writes it; a new draft number means a '
                "check failed and the text so far is replaced), then `answer` (the final answer "
                "object without its trace) or `error`.",
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
                "requestBody": {"required": True, **_json(_ref(SearchBody))},
                "responses": {"200": {"description": "ranked passages", **_json(_ref(SearchOut))}, **_ERRORS},
            }
        },
        "/v1/feedback": {
            "post": {
                "summary": "Judge an answer (stored with the feedback from Slack, Teams and MCP)",
                "requestBody": {"required": True, **_json(_ref(FeedbackBody))},
                "responses": {
                    "201": {"description": "stored (committed)", **_json(_ref(FeedbackOut))},
                    **_ERRORS,
                },
            }
        },
        "/v1/audit": {
            "get": {
                "summary": "Audit the documentation: contradictions, stale statements, drifted copies, "
                "links to nothing, unanswered questions (an API key with the admin scope)",
                "parameters": [
                    {
                        "name": "collection",
                        "in": "query",
                        "description": "audit only this collection (repeatable); absent: all",
                        "schema": {
                            "type": "array",
                            "items": {"type": "string", "minLength": 1, "maxLength": 64},
                        },
                        "style": "form",
                        "explode": True,
                    },
                    {
                        "name": "since",
                        "in": "query",
                        "description": "only statements changed since this index version",
                        "schema": {"type": "string", "pattern": r"^\d{8}T\d{6}(?:\.\d{6})?-[0-9a-f]{4}$"},
                    },
                    {
                        "name": "limit",
                        "in": "query",
                        "description": "the most severe findings to return (default 100)",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
                    },
                ],
                "responses": {"200": {"description": "the findings", **_json(_ref(AuditOut))}, **_ERRORS},
            }
        },
        "/v1/conversations": {
            "get": {
                "summary": "This API key's conversations, the latest first",
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "description": "how many (default 50)",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 200},
                    }
                ],
                "responses": {
                    "200": {"description": "the conversations", **_json(_ref(ConversationsOut))},
                    **_ERRORS,
                },
            }
        },
        "/v1/conversations/{conversation_id}": {
            "get": {
                "summary": "One of this API key's conversations, turn by turn (another key's: 404)",
                "parameters": [
                    {
                        "name": "conversation_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                    }
                ],
                "responses": {"200": {"description": "its turns", **_json(_ref(ConversationOut))}, **_ERRORS},
            }
        },
        "/v1/passage": {
            "get": {
                "summary": "A passage by id, as a citation opens it (outside the key's collections: 404)",
                "parameters": [
                    {
                        "name": "id",
                        "in": "query",
                        "required": True,
                        "schema": {"type": "string", "minLength": 1, "maxLength": 256},
                    }
                ],
                "responses": {"200": {"description": "the passage", **_json(_ref(PassageOut))}, **_ERRORS},
            }
        },
        "/v1/feedback/summary": {
            "get": {
                "summary": "Every judgement summed up: ratings, labels, by collection, domain and day, "
                "the worst-rated questions (an API key with the admin scope)",
                "responses": {
                    "200": {"description": "the summary", **_json(_ref(FeedbackSummaryOut))},
                    **_ERRORS,
                },
            }
        },
        "/v1/feedback/export": {
            "get": {
                "summary": "Every judgement, one JSON object per line: an evaluation set (admin scope)",
                "responses": {
                    "200": {"description": "JSON lines", "content": {"application/x-ndjson": {}}},
                    **_ERRORS,
                },
            }
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus metrics (an API key with the metrics scope)",
                "responses": {
                    "200": {"description": "text exposition format", "content": {"text/plain": {}}},
                    "401": _ERRORS["401"],
                    "403": {"description": "this API key lacks the metrics scope", **_json(_ERROR)},
                },
            }
        },
        "/healthz": {
            "get": {
                "summary": "Liveness, the loaded and the live index version (no API key needed)",
                "security": [],
                "responses": {"200": {"description": "ok", **_json(_ref(HealthOut))}},
            }
        },
    },
    "components": {
        "schemas": component_schemas(),
        "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer", "description": "an API key"}},
    },
    "security": [{"apiKey": []}],
}
