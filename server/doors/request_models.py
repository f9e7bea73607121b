"""What a client may send, as strict pydantic models that REST and MCP both read.

The HTTP handlers parse every body through :func:`read_body`, the MCP tools take these
models as their argument models (:mod:`server.doors.mcp_server`), and ``/openapi.json`` and
the tools' input schemas are generated from them: one declaration per field, so the doors,
their documents and their behaviour cannot drift apart. The models are strict: no ``true``
for an integer, no number for a string, no unknown fields; an error names the field and the
rule, never the value sent (:func:`describe`). The HTTP reader turns everything a careless
or hostile client can send into a 400 with a clear message: a body that is not UTF-8 (or
declares another charset), not JSON, nested too deep, or holding a lone surrogate that no
database could store.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.answers import FEEDBACK_LABELS
from pipeline.errors import InvalidRequestError, RequestTimeoutError, UnsupportedMediaError
from pipeline.retrieval.search import MAX_SEARCH_K

MAX_TEXT_CHARS = 20_000  # the largest max_question_chars allows; the service applies the configured one
MAX_ID_CHARS = 256
MAX_COLLECTIONS = 50

CollectionName = Annotated[str, Field(min_length=1, max_length=64)]
Collections = Annotated[
    list[CollectionName] | None,
    Field(max_length=MAX_COLLECTIONS, description="search only these collections; absent or null: all"),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class AskBody(_Strict):
    """``POST /v1/ask`` and ``/v1/ask/stream``; the MCP tool ``ask``."""

    question: str = Field(
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        description="The question (the server's max_question_chars holds).",
    )
    conversation_id: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="Continue a conversation this client started (from an earlier answer).",
    )
    collections: Collections = None


class SearchBody(_Strict):
    """``POST /v1/search``; the MCP tool ``search``."""

    query: str = Field(
        min_length=1, max_length=MAX_TEXT_CHARS, description="Words or a question to search for."
    )
    k: int | None = Field(
        None,
        ge=1,
        le=MAX_SEARCH_K,
        description="How many passages to return; unset: the setting retrieval.k.",
    )
    mode: Literal["hybrid", "bm25", "dense", "sparse"] = Field(
        "hybrid", description="hybrid (default), bm25 (keywords), dense (meaning) or sparse (rare facts)."
    )
    collections: Collections = None


class FeedbackBody(_Strict):
    """``POST /v1/feedback``; the MCP tool ``submit_feedback``."""

    answer_id: str = Field(
        min_length=1, max_length=MAX_ID_CHARS, description="The answer_id that ask returned."
    )
    rating: int | None = Field(None, ge=1, le=5, description="1 (bad) to 5 (perfect).")
    label: Literal[FEEDBACK_LABELS] | None = Field(  # type: ignore[valid-type]
        None, description="What was right or wrong with the answer."
    )
    comment: str = Field("", max_length=2000, description="Free text.")
    user: str = Field("", max_length=MAX_ID_CHARS, description="Who judged; stored only as a pseudonym.")


class PassageRequest(_Strict):
    """The MCP tool ``get_passage``."""

    passage_id: str = Field(
        min_length=1, max_length=MAX_ID_CHARS, description="A passage id from ask's citations or search."
    )


class DocumentRequest(_Strict):
    """The MCP tool ``get_document``."""

    doc_id: str = Field(
        min_length=1, max_length=MAX_ID_CHARS, description="A document id (a passage's doc_id)."
    )
    page: int | None = Field(None, ge=1, le=1_000_000, description="Only the passages on this page.")


class AuditRequest(_Strict):
    """``GET /v1/audit`` (as query parameters: ``collection`` repeated, ``since``, ``limit``); the
    MCP tool ``audit``. Admin keys only."""

    collections: Collections = None
    since: str | None = Field(
        None,
        pattern=r"^\d{8}T\d{6}(?:\.\d{6})?-[0-9a-f]{4}$",
        description="Only statements changed since this index version (an id such as "
        "20261127T150725.127440-540b); absent: every statement.",
    )
    limit: int = Field(100, ge=1, le=1000, description="The most severe findings to return.")


class NoArguments(_Strict):
    """A tool without arguments (``list_collections``): any argument is refused."""


Body = TypeVar("Body", bound=BaseModel)


async def read_body(request: web.Request, model: type[Body], timeout_s: float) -> Body:
    """The request body as ``model``, or :class:`InvalidRequestError` saying what is wrong with it.

    The body must arrive within ``timeout_s`` (:class:`RequestTimeoutError` after it). Only a body
    sent as ``application/json`` is read: a web page may post ``text/plain`` to any
    address without asking the browser's leave (no CORS preflight), JSON it may not.
    """
    if request.content_type != "application/json":
        raise UnsupportedMediaError(
            f"send the body as JSON with Content-Type: application/json (not {request.content_type[:60]!r})"
        )
    charset = request.charset
    if charset is not None and charset.lower().replace("_", "-") not in {"utf-8", "utf8"}:
        raise InvalidRequestError(f"the body must be JSON in UTF-8, not {charset[:40]!r}")
    try:
        raw = await asyncio.wait_for(request.read(), timeout_s)  # beyond client_max_size: 413
    except TimeoutError as exc:
        raise RequestTimeoutError(f"the body did not arrive within {timeout_s:g} s") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(f"the body is not UTF-8 (byte {exc.start})") from exc
    try:
        data: Any = json.loads(text, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise InvalidRequestError(f"the body is not valid JSON: {exc.msg}") from exc
    except RecursionError as exc:
        raise InvalidRequestError("the body is nested too deeply") from exc
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequestError("the body holds text that is not valid Unicode (a lone surrogate)") from exc
    if not isinstance(data, dict):
        raise InvalidRequestError("the body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidRequestError(describe(exc)) from exc


MAX_INTEGER_DIGITS = 30  # every integer the API reads (k, limits) has a handful


def reject_unknown_parameters(query: Mapping[str, str], *allowed: str) -> None:
    """A 400 for a query parameter the route does not take: a misspelt one is never ignored."""
    unknown = set(query) - set(allowed)
    if unknown:
        raise InvalidRequestError(f"unknown query parameter {sorted(unknown)[0]!r}")


def _bounded_int(digits: str) -> int:
    """A JSON integer, refused beyond :data:`MAX_INTEGER_DIGITS` (Python itself refuses 4,300
    digits with a ValueError that would otherwise surface as a server error)."""
    if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise InvalidRequestError(f"the body holds an integer of more than {MAX_INTEGER_DIGITS} digits")
    return int(digits)


def describe(exc: ValidationError) -> str:
    """A validation error for people: ``field: problem`` per error (values are not echoed back)."""
    problems = []
    for error in exc.errors()[:5]:
        place = ".".join(str(p) for p in error["loc"]) or "body"
        problems.append(f"{place}: {error['msg']}")
    return "; ".join(problems)
