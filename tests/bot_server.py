"""A chat bot on an aiohttp test server over the real service and a fresh sample index."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from tests.samples import write_sample_corpus


class BotServer:
    """A bot mounted on an aiohttp test server over the real service and a fresh sample index.

    ``await harness.start(**settings)`` returns ``(client, service)``; everything it started is
    closed when the harness's ``async with`` block ends.
    """

    def __init__(self, tmp_path: Path, embedder: Any, llm_url: str, mount: Any) -> None:
        from index_build.builder import ingest

        self.tmp_path = tmp_path
        self.embedder = embedder
        self.llm_url = llm_url
        self.mount = mount
        self._stack = AsyncExitStack()
        ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)

    async def __aenter__(self) -> BotServer:
        await self._stack.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._stack.__aexit__(*exc_info)

    async def start(self, **overrides: Any) -> tuple[TestClient, Any]:
        from server.service import open_service
        from server.settings import load_settings

        settings = load_settings(
            index__dir=self.tmp_path / "index",
            stores__conversations_path=self.tmp_path / "conversations.sqlite3",
            stores__feedback_path=self.tmp_path / "feedback.sqlite3",
            llm__api_base=self.llm_url,
            **overrides,
        )
        service = await self._stack.enter_async_context(open_service(settings, embedder=self.embedder))
        app = web.Application()
        self.mount(app, service, settings)
        client = await self._stack.enter_async_context(TestClient(TestServer(app)))
        return client, service
