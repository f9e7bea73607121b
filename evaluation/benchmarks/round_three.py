"""The attacks of hardening round three against the real ``docfinder serve http`` (part of
``make bench ONLY=hardening``); each result says what was sent and what came back.

1. Collection scope: a key limited to one collection, and a key whose only collection the index
   lacks, send ``"collections": []`` and no list at all to REST search, ask and ask/stream and
   to MCP search and ask; a private collection's secret must never come back.
2. A server without keys: a foreign ``Host`` and ``Origin`` (DNS rebinding), a ``text/plain`` body.
3. An LLM server that refuses (401, 400, 404) or answers garbage: what /v1/ask, the stream and
   /healthz say.
4. A runaway generation: a one-slot LLM server writing slowly past the LLM timeout; the next
   question's first token must come as if nothing had happened.
5. A Teams token endpoint that accepts connections and never answers: /healthz and /v1/search
   latencies while the bot's token is being fetched (in process, on the server's event loop).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp

from evaluation.benchmarks.load_fault import server_env, start_server
from evaluation.doubles.fake_llm import FakeLLMServer
from server.core.ingest import run_ingest
from server.settings import Settings

SECRET = "The director's salary is 212,345 euros a year."
SCOPED_KEY = "s" * 40  # reads the docs collection only
GHOST_KEY = "g" * 40  # scoped to a collection the index lacks
QUESTION = "What is the director's salary?"


def bench_round_three(settings: Settings, work: Path, corpus: Path) -> dict[str, Any]:
    """Every attack of the module docstring; ``corpus`` is the docs the server answers from."""
    private = work / "private"
    private.mkdir()
    (private / "salaries.md").write_text(f"# Salaries\n\n## Director\n\n{SECRET}\n")
    index = work / "round-three-index"
    run_ingest(settings.changed({"index.dir": index}), [corpus], collection="docs")
    run_ingest(settings.changed({"index.dir": index}), [private], collection="private")
    with FakeLLMServer() as llm:
        scope = asyncio.run(_scope(work, index, llm.url))
        keyless = asyncio.run(_keyless(work, index, llm.url))
    return {
        "collection_scope": scope,
        "keyless_server": keyless,
        "llm_errors": asyncio.run(_llm_errors(work, index)),
        "runaway_generation": asyncio.run(_runaway(work, index)),
        "silent_token_endpoint": asyncio.run(_silent_token_endpoint(work, index)),
    }


def _keys() -> str:
    return json.dumps(
        {
            "scoped": {"key": SCOPED_KEY, "collections": ["docs"]},
            "ghost": {"key": GHOST_KEY, "collections": ["nowhere"]},
        }
    )


async def _scope(work: Path, index: Path, llm_url: str) -> dict[str, Any]:
    env = {**server_env(work, index, llm_url), "DOCFINDER_ACCESS__API_KEYS": _keys()}
    process, url = await asyncio.to_thread(start_server, env)
    leaks, statuses = 0, {}
    try:
        async with aiohttp.ClientSession() as session:
            for name, key in (("scoped", SCOPED_KEY), ("ghost", GHOST_KEY)):
                for listed in ({"collections": []}, {}):
                    for route, body in (
                        ("/v1/search", {"query": "director salary euros"}),
                        ("/v1/ask", {"question": QUESTION}),
                        ("/v1/ask/stream", {"question": QUESTION}),
                    ):
                        headers = {"Authorization": f"Bearer {key}"}
                        async with session.post(
                            f"{url}{route}", json={**body, **listed}, headers=headers
                        ) as r:
                            text = await r.text()
                        label = f"{name} {route} {'[]' if listed else 'absent'}"
                        statuses[label] = r.status
                        leaks += "212,345" in text
            leaks += await _mcp_leaks(url)
    finally:
        process.terminate()
        await asyncio.to_thread(process.wait, 30)
    return {"leaks": leaks, "statuses": statuses}


async def _mcp_leaks(url: str) -> int:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    leaks = 0
    for key in (SCOPED_KEY, GHOST_KEY):
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
        async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            for tool, arguments in (
                ("search", {"query": "director salary euros", "collections": []}),
                ("ask", {"question": QUESTION, "collections": []}),
            ):
                result = await client.call_tool(tool, arguments)
                shown = json.dumps(result.structured_content) + " ".join(
                    getattr(c, "text", "") for c in result.content
                )
                leaks += "212,345" in shown
    return leaks


async def _keyless(work: Path, index: Path, llm_url: str) -> dict[str, Any]:
    process, url = await asyncio.to_thread(start_server, server_env(work, index, llm_url))
    found: dict[str, int] = {}
    try:
        async with aiohttp.ClientSession() as session:
            search = {"query": "proposal"}
            for label, headers in (
                ("loopback", {}),
                ("foreign Host", {"Host": "rebound.example"}),
                ("foreign Origin", {"Origin": "http://rebound.example"}),
            ):
                async with session.post(f"{url}/v1/search", json=search, headers=headers) as r:
                    found[label] = r.status
            plain = {"Content-Type": "text/plain"}
            async with session.post(f"{url}/v1/search", data=json.dumps(search), headers=plain) as r:
                found["text/plain body"] = r.status
    finally:
        process.terminate()
        await asyncio.to_thread(process.wait, 30)
    return found


async def _llm_errors(work: Path, index: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for label, misbehaving in (
        ("401", {"error_status": 401}),
        ("400", {"error_status": 400}),
        ("404", {"error_status": 404}),
        ("garbage", {"garbage": True}),
    ):
        with FakeLLMServer(**misbehaving) as llm:
            process, url = await asyncio.to_thread(start_server, server_env(work, index, llm.url))
            try:
                async with aiohttp.ClientSession() as session:
                    async with session.post(f"{url}/v1/ask", json={"question": QUESTION}) as r:
                        asked = r.status, (await r.json()).get("outcome")
                    async with session.post(f"{url}/v1/ask/stream", json={"question": QUESTION}) as r:
                        last = (await r.text()).strip().split("\n\n")[-1].split("\n")[0]
                    async with session.get(f"{url}/healthz") as r:
                        health = (await r.json()).get("llm")
            finally:
                process.terminate()
                await asyncio.to_thread(process.wait, 30)
        found[label] = {"ask": list(asked), "stream_ends_with": last, "healthz_llm": health}
    return found


async def _runaway(work: Path, index: Path) -> dict[str, Any]:
    """The first call writes for about 8 s against a 1.5 s limit; then the model is fast again."""
    with FakeLLMServer(one_slot=True, token_delay_s=0.2) as llm:
        env = {**server_env(work, index, llm.url), "DOCFINDER_LLM__TIMEOUT_S": "1.5"}
        process, url = await asyncio.to_thread(start_server, env)
        try:
            async with aiohttp.ClientSession() as session:
                async with session.post(f"{url}/v1/ask", json={"question": QUESTION}) as r:
                    first = (await r.json()).get("outcome")
                llm.token_delay_s = 0.0
                started = time.perf_counter()
                async with session.post(f"{url}/v1/ask/stream", json={"question": QUESTION}) as r:
                    first_token = None
                    async for line in r.content:
                        if line.startswith(b"event: token") and first_token is None:
                            first_token = time.perf_counter() - started
                    second = "answered" if first_token is not None else "no token"
        finally:
            process.terminate()
            await asyncio.to_thread(process.wait, 30)
    return {
        "first_outcome": first,
        "abandoned_at_the_server": llm.abandoned,
        "next_question": second,
        "next_first_token_s": round(first_token, 3) if first_token is not None else None,
    }


async def _silent_token_endpoint(work: Path, index: Path) -> dict[str, Any]:
    """The bot's token fetched from an endpoint that never answers, on the event loop of an
    in-process HTTP API: the largest gap of the loop and /healthz's latency meanwhile."""
    from aiohttp.test_utils import TestClient, TestServer
    from botframework.connector.auth import MicrosoftAppCredentials

    from bots.teams_auth import FetchedOffTheLoop
    from server.doors.launch import http_app
    from server.service import open_service
    from server.settings import load_settings

    class Silent:
        def __init__(self, authority: str) -> None:
            self.authority = authority

        async def is_valid_app_id(self, app_id: str) -> bool:
            return True

        async def is_authentication_disabled(self) -> bool:
            return False

        async def create_credentials(self, *args: Any) -> Any:
            credentials = MicrosoftAppCredentials(
                "00000000-0000-0000-0000-000000000001", "pw", oauth_scope="x"
            )
            credentials.oauth_endpoint = self.authority
            return credentials

    hold = await asyncio.start_server(lambda r, w: asyncio.sleep(3600), "127.0.0.1", 0)
    port = hold.sockets[0].getsockname()[1]
    settings = load_settings(
        index__dir=index, stores__conversations_path=work / "token-conversations.sqlite3"
    )
    async with (
        open_service(settings) as service,
        TestClient(TestServer(http_app(service, settings))) as client,
    ):
        fetching = asyncio.create_task(
            FetchedOffTheLoop(Silent(f"https://127.0.0.1:{port}/tenant"), 10.0).create_credentials(
                "a", "s", "l", True
            )
        )
        health, search = [], []
        while not fetching.done() and len(health) < 20:
            started = time.perf_counter()
            await (await client.get("/healthz")).read()
            health.append(time.perf_counter() - started)
            started = time.perf_counter()
            await (await client.post("/v1/search", json={"query": "proposal"})).read()
            search.append(time.perf_counter() - started)
            await asyncio.sleep(0.2)
        fetching.cancel()
        outcome = "still waiting" if not fetching.done() or fetching.cancelled() else "failed"
    hold.close()
    return {
        "token_fetch": outcome,
        "healthz_max_s": round(max(health), 3),
        "search_max_s": round(max(search), 3),
        "probes": len(health),
    }
