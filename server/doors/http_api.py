"""The HTTP API (aiohttp): ask, ask with streamed status (server-sent events), search, feedback,
health and metrics (:mod:`server.doors.launch` mounts the MCP endpoint ``/mcp`` and the bots).

With API keys configured, every request to ``/v1/*``, ``/metrics`` and ``/mcp`` must carry
one (``Authorization: Bearer <key>``, else 401); the key decides which collections and
conversations the caller sees. Without keys the server is for loopback only (the CLI
refuses another address). ``/healthz`` and ``/openapi.json`` are open, and the bots' routes
check their platforms' own signatures and tokens.

Handlers only parse (:mod:`server.doors.request_models`), call the one service object, and reply
with a model of :mod:`server.doors.responses`.
Errors become JSON bodies with a clear message: 400 for bad input, 401 without a valid key,
403 for a collection outside the key's scope, 404 for unknown ids (another caller's
conversation included), 413 for oversized requests, 503 with ``Retry-After`` when a
dependency (the LLM, the index, the database, the search queue) is unavailable for now.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import ClientConnectionResetError, web
from pydantic import ValidationError

from pipeline.answers import LOCAL_CALLER, Feedback
from pipeline.errors import (
    ConfigurationError,
    DocfinderError,
    ForbiddenError,
    InvalidRequestError,
    NotFoundError,
    RequestTimeoutError,
    TransientError,
    UnauthenticatedError,
    UnsupportedMediaError,
)
from pipeline.steps import Step
from server.core.access import require_scope
from server.doors.app_keys import CALLER, SERVICE
from server.doors.auth import Authenticator
from server.doors.http_history import add_history_routes
from server.doors.openapi import OPENAPI
from server.doors.request_models import (
    AskBody,
    AuditRequest,
    FeedbackBody,
    SearchBody,
    describe,
    read_body,
    reject_unknown_parameters,
)
from server.doors.responses import (
    ErrorOut,
    FeedbackOut,
    HealthOut,
    answer_out,
    audit_out,
    search_out,
    to_json,
)
from server.doors.web_page import add_page_routes
from server.runtime.logs import current_request_id, set_request_id
from server.service import DocfinderService

log = logging.getLogger(__name__)

AUTHENTICATOR = web.AppKey("authenticator", Authenticator)
MAX_REQUEST_BYTES = 1024 * 1024  # room for the longest text the models allow, JSON-escaped
RETRY_AFTER_S = 5
_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]+")


def create_app(service: DocfinderService, authenticator: Authenticator | None = None) -> web.Application:
    """The REST API around an entered service; ``authenticator`` (default: none, loopback only)
    decides who may call ``/v1/*`` and ``/metrics``. :mod:`server.doors.launch` adds ``/mcp``
    and the bots' routes to it."""
    app = web.Application(client_max_size=MAX_REQUEST_BYTES, middlewares=[_observe, _errors, _authenticate])
    app[SERVICE] = service
    app[AUTHENTICATOR] = authenticator if authenticator is not None else Authenticator([])
    app.on_cleanup.append(lambda app: app[AUTHENTICATOR].close())
    app.router.add_get("/healthz", _health)
    app.router.add_get("/metrics", _metrics)
    app.router.add_get("/openapi.json", _openapi)
    app.router.add_post("/v1/ask", _ask)
    app.router.add_post("/v1/ask/stream", _ask_stream)
    app.router.add_post("/v1/search", _search)
    app.router.add_post("/v1/feedback", _feedback)
    app.router.add_get("/v1/audit", _audit)
    add_history_routes(app)
    add_page_routes(app)
    return app


@web.middleware
async def _observe(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
    """Request id (from ``X-Request-ID`` or new) for logs and trace; request count and latency."""
    given = request.headers.get("X-Request-ID", "")
    request_id = given[:64] if _SAFE_ID.fullmatch(given[:64] or "-") else ""
    request_id = request_id or uuid.uuid4().hex[:16]
    set_request_id(request_id)
    route = request.match_info.route.resource.canonical if request.match_info.route.resource else "unmatched"
    metrics = request.app[SERVICE].metrics
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        if not response.prepared:
            response.headers["X-Request-ID"] = request_id
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    finally:
        metrics.requests.labels(route, str(status)).inc()
        metrics.request_seconds.labels(route).observe(time.perf_counter() - started)


@web.middleware
async def _errors(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except UnauthenticatedError as exc:
        return _error(401, str(exc), {"WWW-Authenticate": 'Bearer realm="docfinder"'})
    except ForbiddenError as exc:
        return _error(403, str(exc))
    except NotFoundError as exc:
        return _error(404, str(exc))
    except UnsupportedMediaError as exc:
        return _error(415, str(exc))
    except RequestTimeoutError as exc:
        return _error(408, str(exc))
    except InvalidRequestError as exc:
        return _error(400, str(exc))
    except (TransientError, ConfigurationError) as exc:
        return _error(503, str(exc), {"Retry-After": str(RETRY_AFTER_S)})
    except DocfinderError as exc:
        return _error(400, str(exc))


@web.middleware
async def _authenticate(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
):
    """The caller of ``/v1/*`` and ``/metrics``, from its API key (401 without a valid one).

    A server without keys answers only requests made to it by a loopback name (or a configured
    public host): a web page on a DNS-rebinding domain that the operator opens reaches the
    loopback address too, but under its own name, and gets 421.
    """
    if request.path.startswith("/v1/") or request.path == "/metrics":
        authenticator = request.app[AUTHENTICATOR]
        caller = await authenticator.caller(request.headers.get("Authorization", ""))
        if caller is None:
            raise UnauthenticatedError("a valid API key is required: send Authorization: Bearer <key>")
        if caller is LOCAL_CALLER and not _named_locally(request):
            return _error(421, "a server without API keys answers requests to its loopback address only")
        request[CALLER] = caller
    return await handler(request)


_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "[::1]", "::1"}


def _named_locally(request: web.Request) -> bool:
    """Whether the request names this server by a loopback name or a configured public host (its
    ``Host``, and its ``Origin`` when a browser sends one)."""
    allowed = _LOOPBACK_NAMES | {h.lower() for h in request.app[SERVICE].settings.access.public_hosts}
    names = [request.headers.get("Host", "")]
    if origin := request.headers.get("Origin"):
        names.append(origin.partition("://")[2] or origin)
    return all(_host_name(name) in allowed for name in names)


def _host_name(authority: str) -> str:
    """``host`` of ``host:port`` (``[::1]`` of ``[::1]:8080``), lower case."""
    authority = authority.strip().lower().rstrip("/")
    if authority.startswith("["):
        return authority.split("]", 1)[0] + "]"
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(to_json(ErrorOut(error=message)), status=status, headers=headers)


async def _health(request: web.Request) -> web.Response:
    # Answered on the event loop from what is loaded: a saturated search pool cannot delay it.
    return web.json_response(to_json(HealthOut(**await request.app[SERVICE].health())))


async def _metrics(request: web.Request) -> web.Response:
    require_scope(request[CALLER], "metrics")
    body = request.app[SERVICE].metrics.render()
    return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


async def _openapi(request: web.Request) -> web.Response:
    return web.json_response(OPENAPI)


async def _ask(request: web.Request) -> web.Response:
    body = await read_body(request, AskBody, request.app[SERVICE].settings.serving.body_timeout_s)
    result = await request.app[SERVICE].ask(
        body.question,
        conversation_id=body.conversation_id,
        collections=body.collections,
        caller=request[CALLER],
    )
    return web.json_response(to_json(answer_out(result)))


async def _ask_stream(request: web.Request) -> web.StreamResponse:
    """Server-sent events: ``status`` for each agent step as it happens, ``token`` for the answer's
    text as the LLM writes it (``{"text", "draft"}``: a new draft replaces the text so far), then
    ``answer`` (the final, checked answer) or ``error``.

    A request the question's admission refuses (a scope, a collection, a conversation not the
    caller's, an empty question) gets the status /v1/ask gives it (403, 404, 400): the stream
    starts with the first event, once the question is admitted.

    A client that goes away cancels its question (the LLM request included); one INFO line says so.
    """
    body = await read_body(request, AskBody, request.app[SERVICE].settings.serving.body_timeout_s)
    service = request.app[SERVICE]
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Request-ID": current_request_id(),
        }
    )

    async def send(event: str, data: dict[str, Any]) -> None:
        if not response.prepared:
            await response.prepare(request)
        await response.write(f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode())

    asking = asyncio.create_task(
        service.ask(
            body.question,
            conversation_id=body.conversation_id,
            collections=body.collections,
            on_status=lambda event: _status_and_evidence(send, event),
            on_token=lambda token: send(
                "token", {"text": token.text, "draft": token.draft, "composed": token.composed}
            ),
            caller=request[CALLER],
        )
    )
    watching = asyncio.create_task(_client_gone(request))
    try:
        await asyncio.wait({asking, watching}, return_when=asyncio.FIRST_COMPLETED)
        if not asking.done():
            raise ConnectionResetError("the client closed the connection")
        try:
            result = asking.result()
        except DocfinderError as exc:
            if not response.prepared:
                raise  # refused before the stream began: its HTTP status, as /v1/ask gives it
            await send("error", {"error": str(exc), "transient": isinstance(exc, TransientError)})
        else:
            await send("answer", to_json(answer_out(result, trace=False)))
        await response.write_eof()
    except (ConnectionResetError, ClientConnectionResetError, asyncio.CancelledError) as exc:
        # The client went away (the server may cancel this handler too): stop the question, LLM included.
        log.info(
            "client left the stream before the answer; the question was cancelled (%s)", type(exc).__name__
        )
        if isinstance(exc, asyncio.CancelledError):
            raise
    finally:
        watching.cancel()
        asking.cancel()
        await asyncio.gather(asking, watching, return_exceptions=True)
    return response


async def _client_gone(request: web.Request) -> None:
    """Returns when the client has closed its connection (aiohttp does not say so by itself)."""
    while request.transport is not None and not request.transport.is_closing():
        await asyncio.sleep(0.5)


async def _search(request: web.Request) -> web.Response:
    body = await read_body(request, SearchBody, request.app[SERVICE].settings.serving.body_timeout_s)
    service = request.app[SERVICE]
    result = await service.search(
        service.check_question(body.query),
        k=body.k or service.settings.retrieval.k,
        mode=body.mode,
        collections=body.collections,
        caller=request[CALLER],
    )
    public = service.public_source if request[CALLER] != LOCAL_CALLER else str
    return web.json_response(to_json(search_out(result, public)))


async def _feedback(request: web.Request) -> web.Response:
    body = await read_body(request, FeedbackBody, request.app[SERVICE].settings.serving.body_timeout_s)
    record = await request.app[SERVICE].record_feedback(
        Feedback(
            body.answer_id, "http", user=body.user, rating=body.rating, label=body.label, comment=body.comment
        ),
        caller=request[CALLER],
    )
    reply = FeedbackOut(feedback_id=record.feedback_id, answer_id=record.answer_id)
    return web.json_response(to_json(reply), status=201)


async def _status_and_evidence(
    send: Callable[[str, dict[str, Any]], Awaitable[None]], event: dict[str, Any]
) -> None:
    """A status event; the ``evidence`` step is also sent as an ``evidence`` event of its own, so
    a client shows the documents' words as soon as they are found (the ``answer`` event follows)."""
    await send("status", event)
    if event["step"] == Step.EVIDENCE:
        await send("evidence", {"quotes": event["quotes"], "request_id": event.get("request_id")})


async def _audit(request: web.Request) -> web.Response:
    """The documentation audit (admin keys): its most severe findings as JSON."""
    query = request.query
    reject_unknown_parameters(query, "collection", "since", "limit")
    limit = query.get("limit", "100")
    if not limit.isdigit() or len(limit) > 4:
        raise InvalidRequestError("limit: a whole number from 1 to 1000")
    try:
        asked = AuditRequest.model_validate(
            {
                "collections": query.getall("collection", []) or None,
                "since": query.get("since"),
                "limit": int(limit),
            }
        )
    except ValidationError as exc:
        raise InvalidRequestError(f"invalid audit query: {describe(exc)}") from exc
    report = await request.app[SERVICE].audit(request[CALLER], asked.collections, asked.since)
    return web.json_response(to_json(audit_out(report.findings, report.about, asked.limit)))
