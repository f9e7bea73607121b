"""Local stand-ins for the chat platforms' APIs: the Slack Web API and the Bot Framework connector.

Each records every call it receives, so a test can check what the bot posted, where, and in
which order, and answers the way the real API does for the calls docfinder makes.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer


class FakeSlackAPI:
    """``auth.test``, ``chat.postMessage`` and ``chat.update``, at ``{url}/api/``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.times: list[float] = []  # when each call arrived
        self._ts = itertools.count(1)
        app = web.Application()
        app.router.add_post("/api/{method}", self._call)
        self.server = TestServer(app)

    @property
    def url(self) -> str:
        return str(self.server.make_url("/api/"))

    async def __aenter__(self) -> FakeSlackAPI:
        await self.server.start_server()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.server.close()

    def made(self, method: str) -> list[dict[str, Any]]:
        return [params for name, params in self.calls if name == method]

    async def wait_for(self, predicate, timeout: float = 60.0) -> None:
        """Poll until ``predicate(self)`` holds (the bot replies after acknowledging the event)."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; calls so far: {self.calls}")
            await asyncio.sleep(0.05)

    async def _call(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.content_type == "application/json":
            params = await request.json()
        else:
            params = dict(await request.post())
        if not request.headers.get("Authorization", "").startswith("Bearer xoxb-"):
            return web.json_response({"ok": False, "error": "not_authed"})
        self.calls.append((method, params))
        self.times.append(time.monotonic())
        if method == "auth.test":
            return web.json_response(
                {
                    "ok": True,
                    "user_id": "UBOT",
                    "bot_id": "BBOT",
                    "team_id": "T1",
                    "user": "docfinder",
                    "team": "Obs",
                }
            )
        if method == "chat.postMessage":
            ts = f"1700000000.{next(self._ts):06d}"
            return web.json_response({"ok": True, "channel": params["channel"], "ts": ts, "message": params})
        if method == "chat.update":
            return web.json_response({"ok": True, "channel": params["channel"], "ts": params["ts"]})
        return web.json_response({"ok": False, "error": "unknown_method"})


class FakeConnector:
    """The Bot Framework connector's ``/v3/conversations/{id}/activities[/{replyToId}]``."""

    def __init__(self) -> None:
        self.activities: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        app = web.Application()
        app.router.add_post("/v3/conversations/{conversation}/activities", self._post)
        app.router.add_post("/v3/conversations/{conversation}/activities/{reply_to}", self._post)
        app.router.add_put("/v3/conversations/{conversation}/activities/{activity_id}", self._put)
        self.server = TestServer(app)
        self.updates: list[dict[str, Any]] = []  # each update as sent; the activity itself is replaced
        # How long an update's reply takes after the message shows: on a slow link people see (and
        # react to) a card before the bot hears that it was delivered.
        self.update_reply_delay_s = 0.0

    @property
    def url(self) -> str:
        return str(self.server.make_url("/")).rstrip("/")

    async def __aenter__(self) -> FakeConnector:
        await self.server.start_server()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.server.close()

    def messages(self) -> list[dict[str, Any]]:
        return [a for a in self.activities if a.get("type") == "message"]

    async def wait_for(self, predicate, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; activities so far: {json.dumps(self.activities)[:2000]}")
            await asyncio.sleep(0.05)

    async def _post(self, request: web.Request) -> web.Response:
        activity = await request.json()
        activity["_conversation"] = request.match_info["conversation"]
        activity["_reply_to"] = request.match_info.get("reply_to")
        activity["id"] = f"reply-{next(self._ids)}"
        self.activities.append(activity)
        return web.json_response({"id": activity["id"]})

    async def _put(self, request: web.Request) -> web.Response:
        """UpdateActivity: the message with that id is replaced (404 for an id never sent)."""
        activity = await request.json()
        activity_id = request.match_info["activity_id"]
        at = next((i for i, a in enumerate(self.activities) if a["id"] == activity_id), None)
        if at is None:
            return web.json_response({"error": {"code": "NotFound"}}, status=404)
        previous = self.activities[at]
        activity.update(
            {
                "id": activity_id,
                "_conversation": previous["_conversation"],
                "_reply_to": previous["_reply_to"],
            }
        )
        activity["_replaces"] = previous.get("text")
        self.activities[at] = activity
        self.updates.append(activity)
        await asyncio.sleep(self.update_reply_delay_s)
        return web.json_response({"id": activity_id})
