"""docfinder's HTTP server on loopback in a thread of its own, for clients that block
(schemathesis, a browser driven by Selenium): the tests' and ``make bench ONLY=web``'s server."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from aiohttp import web

from server.doors.launch import http_app
from server.service import DocfinderService


class LiveServer:
    """``with LiveServer(settings, embedder) as server:`` then call ``server.url``."""

    def __init__(self, settings: Any, embedder: Any = None, start_llm: bool = False) -> None:
        self.settings = settings
        self.embedder = embedder
        self.start_llm = start_llm
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._service: DocfinderService | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        started.result(timeout=900 if self.start_llm else 120)  # the embedded model may be joined first
        return self

    def __exit__(self, *exc_info: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _start(self) -> None:
        self._service = DocfinderService(self.settings, embedder=self.embedder)
        await self._service.__aenter__()
        if self.start_llm:
            await self._service.start_llm()
        self._runner = web.AppRunner(http_app(self._service, self.settings))
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._service is not None:
            await self._service.__aexit__(None, None, None)
