"""The HTTP API (aiohttp): ask, ask with streamed status (server-sent events), search, feedback,
health, and the MCP streamable HTTP endpoint at ``/mcp`` when a token is configured.

Handlers only parse, call the one service object, and render. Errors become JSON bodies with
a clear message: 400 for bad input, 404 for unknown ids, 413 for oversized requests, 503 when
a dependency (the LLM, the index) is unavailable for now.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from pipeline.answers import Feedback
from pipeline.errors import (
    ConfigurationError,
    DocfinderError,
    InvalidRequestError,
    NotFoundError,
    TransientError,
)
from server.chat_bots import mount_configured_bots
from server.logs import current_request_id, set_request_id
from server.openapi import OPENAPI
from server.render import answer_to_json, hit_to_json
from server.service import DocfinderService
from server.settings import Settings

log = logging.getLogger(__name__)

SERVICE = web.AppKey("service", DocfinderService)
MAX_REQUEST_BYTES = 64 * 1024


def create_app(
    service: DocfinderService, settings: Settings | None = None, host: str = "127.0.0.1"
) -> web.Application:
    """The aiohttp application around an entered service.

    With ``settings``, also ``/mcp`` when an MCP token is set, ``/slack/events`` when Slack
    credentials are set and ``/api/messages`` when a Teams app id is set.
    """
    app = web.Application(client_max_size=MAX_REQUEST_BYTES, middlewares=[_observe, _errors])
    app[SERVICE] = service
    app.router.add_get("/healthz", _health)
    app.router.add_get("/metrics", _metrics)
    app.router.add_get("/openapi.json", _openapi)
    app.router.add_post("/v1/ask", _ask)
    app.router.add_post("/v1/ask/stream", _ask_stream)
    app.router.add_post("/v1/search", _search)
    app.router.add_post("/v1/feedback", _feedback)
    if settings is None:
        return app
    if settings.mcp_token.get_secret_value():
        mount_mcp(app, service, settings, host)
    else:
        log.info("/mcp is not served: set mcp_token (DOCFINDER_MCP_TOKEN) to enable it")
    mount_configured_bots(app, service, settings)
    return app


def mount_mcp(app: web.Application, service: DocfinderService, settings: Settings, host: str) -> None:
    """Serve the MCP streamable HTTP transport at ``/mcp``, behind the bearer token from settings."""
    from server.asgi_mount import asgi_handler
    from server.mcp_server import build_mcp_server

    mcp = build_mcp_server(service, settings)
    asgi_app = mcp.streamable_http_app(host=host)  # creates the session manager run below

    async def sessions(_: web.Application):
        async with mcp.session_manager.run():
            yield

    app.cleanup_ctx.append(sessions)
    app.router.add_route("*", "/mcp", asgi_handler(asgi_app, settings.mcp_token.get_secret_value()))


@web.middleware
async def _observe(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
    """Request id (from ``X-Request-ID`` or new) for logs and trace; request count and latency."""
    request_id = request.headers.get("X-Request-ID", "")[:64] or uuid.uuid4().hex[:16]
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
    except NotFoundError as exc:
        return _error(404, str(exc))
    except InvalidRequestError as exc:
        return _error(400, str(exc))
    except (TransientError, ConfigurationError) as exc:
        return _error(503, str(exc))
    except DocfinderError as exc:
        return _error(400, str(exc))


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _body(request: web.Request, required: str) -> dict[str, Any]:
    try:
        body = await request.json()
    except web.HTTPRequestEntityTooLarge:
        raise
    except json.JSONDecodeError as exc:
        raise InvalidRequestError(f"the body is not valid JSON: {exc.msg}") from exc
    if not isinstance(body, dict) or not isinstance(body.get(required), str):
        raise InvalidRequestError(f"the body must be a JSON object with a string {required!r}")
    collections = body.get("collections")
    if collections is not None and not (
        isinstance(collections, list) and all(isinstance(c, str) for c in collections)
    ):
        raise InvalidRequestError("'collections' must be a list of collection names")
    return body


async def _health(request: web.Request) -> web.Response:
    info = await request.app[SERVICE].index_info()
    return web.json_response({"status": "ok", "index_version": info["version"], "chunks": info["chunks"]})


async def _metrics(request: web.Request) -> web.Response:
    body = request.app[SERVICE].metrics.render()
    return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


async def _openapi(request: web.Request) -> web.Response:
    return web.json_response(OPENAPI)


async def _ask(request: web.Request) -> web.Response:
    body = await _body(request, "question")
    result = await request.app[SERVICE].ask(
        body["question"], conversation_id=body.get("conversation_id"), collections=body.get("collections")
    )
    return web.json_response(answer_to_json(result))


async def _ask_stream(request: web.Request) -> web.StreamResponse:
    """Server-sent events: ``status`` for each agent step as it happens, then ``answer`` (or ``error``)."""
    body = await _body(request, "question")
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Request-ID": current_request_id(),
        }
    )
    await response.prepare(request)

    async def send(event: str, data: dict[str, Any]) -> None:
        await response.write(f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode())

    try:
        result = await request.app[SERVICE].ask(
            body["question"],
            conversation_id=body.get("conversation_id"),
            collections=body.get("collections"),
            on_status=lambda event: send("status", event),
        )
        await send("answer", answer_to_json(result, trace=False))
    except DocfinderError as exc:
        await send("error", {"error": str(exc), "transient": isinstance(exc, TransientError)})
    except asyncio.CancelledError:
        log.info("client left the stream before the answer")
        raise
    await response.write_eof()
    return response


async def _search(request: web.Request) -> web.Response:
    body = await _body(request, "query")
    k = body.get("k", 10)
    if not isinstance(k, int) or not 1 <= k <= 100:
        raise InvalidRequestError("'k' must be an integer from 1 to 100")
    result = await request.app[SERVICE].search(
        body["query"], k=k, mode=body.get("mode", "hybrid"), collections=body.get("collections")
    )
    return web.json_response(
        {
            "query": result.query,
            "mode": result.mode,
            "version": result.version,
            "hits": [hit_to_json(h) for h in result.hits],
        }
    )


async def _feedback(request: web.Request) -> web.Response:
    body = await _body(request, "answer_id")
    rating, label, comment = body.get("rating"), body.get("label"), body.get("comment", "")
    if rating is not None and not isinstance(rating, int):
        raise InvalidRequestError("'rating' must be an integer from 1 to 5")
    if (label is not None and not isinstance(label, str)) or not isinstance(comment, str):
        raise InvalidRequestError("'label' and 'comment' must be strings")
    record = await request.app[SERVICE].record_feedback(
        Feedback(
            body["answer_id"], "http", user=body.get("user", ""), rating=rating, label=label, comment=comment
        )
    )
    return web.json_response({"feedback_id": record.feedback_id, "answer_id": record.answer_id}, status=201)
