"""docfinder's HTTP server on loopback in a thread of its own, for clients that block (schemathesis)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from aiohttp import web

from server.doors.launch import http_app
from server.service import DocfinderService


class LiveServer:
    """``with LiveServer(settings, embedder) as server:`` then call ``server.url``."""

    def __init__(self, settings: Any, embedder: Any) -> None:
        self.settings = settings
        self.embedder = embedder
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
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=120)
        return self

    def __exit__(self, *exc_info: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _start(self) -> None:
        self._service = DocfinderService(self.settings, embedder=self.embedder)
        await self._service.__aenter__()
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
