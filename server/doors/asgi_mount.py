"""Serve an ASGI application (the MCP streamable HTTP endpoint) from the aiohttp server.

docfinder's HTTP server is aiohttp (the Slack and Teams SDKs plug into it); the MCP SDK's
streamable HTTP transport is an ASGI (Starlette) app. This bridge translates one aiohttp
request into an ASGI ``http`` scope and streams the ASGI response back as it is produced,
which server-sent events need. The same API keys as the REST API guard the mount; the
caller a key belongs to travels in the ASGI scope's state, where the MCP tools read it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from aiohttp import web

from pipeline.answers import Caller
from server.doors.auth import Authenticator

ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]],
    Awaitable[None],
]
BODY_CHUNK = 64 * 1024


CALLER_STATE = "docfinder_caller"


def asgi_handler(
    app: ASGIApp, authenticator: Authenticator
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """An aiohttp handler that authenticates the caller's API key, then runs ``app`` for the request."""

    async def handle(request: web.Request) -> web.StreamResponse:
        caller = await authenticator.caller(request.headers.get("Authorization", ""))
        if caller is None:
            return web.json_response(
                {"error": "missing or invalid API key"},
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="docfinder"'},
            )
        return await _run(app, request, caller)

    return handle


async def _run(app: ASGIApp, request: web.Request, caller: Caller) -> web.StreamResponse:
    finished = asyncio.Event()
    body_done = False
    response: web.StreamResponse | None = None
    pending: dict[str, Any] = {}

    async def receive() -> dict:
        nonlocal body_done
        if not body_done:
            chunk = await request.content.read(BODY_CHUNK)
            body_done = request.content.at_eof()
            return {"type": "http.request", "body": chunk, "more_body": not body_done}
        # The body is consumed: the next message is the disconnect, when the response ends
        # or the client goes away (polled: aiohttp does not signal a closed socket here).
        ended = asyncio.ensure_future(finished.wait())
        try:
            while not ended.done() and request.transport is not None and not request.transport.is_closing():
                await asyncio.wait({ended}, timeout=1.0)
        finally:
            ended.cancel()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            pending["status"] = message["status"]
            pending["headers"] = [
                (k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])
            ]
            return
        if message["type"] != "http.response.body":
            return
        if response is None:
            response = web.StreamResponse(status=pending.get("status", 200))
            for name, value in pending.get("headers", []):
                response.headers.add(name, value)
            await response.prepare(request)
        body = message.get("body", b"")
        if body:
            await response.write(body)
        if not message.get("more_body", False):
            await response.write_eof()
            finished.set()

    try:
        await app(_scope(request, caller), receive, send)
    finally:
        finished.set()
    if response is None:
        return web.Response(status=pending.get("status", 500))
    return response


def _scope(request: web.Request, caller: Caller) -> dict[str, Any]:
    peer = request.transport.get_extra_info("peername") if request.transport else None
    host, _, port = (request.host or "localhost").partition(":")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": _raw(request.raw_path.split("?", 1)[0]),
        "query_string": _raw(request.query_string),
        "root_path": "",
        "headers": [(_raw(k.lower()), _raw(v)) for k, v in request.headers.items()],
        "client": (peer[0], peer[1]) if isinstance(peer, tuple) and len(peer) >= 2 else None,
        "server": (host, int(port) if port.isdigit() else (443 if request.scheme == "https" else 80)),
        "state": {CALLER_STATE: caller},
    }


def _raw(text: str) -> bytes:
    """A header, path or query as the bytes the client sent: aiohttp decodes them as UTF-8 with
    surrogate escapes, so a byte that is no UTF-8 (a non-ASCII Latin-1 byte) comes back as it was,
    where encoding to Latin-1 failed on it (round three of hardening: a 500)."""
    return text.encode("utf-8", "surrogateescape")
