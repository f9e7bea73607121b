"""API keys as admins expect them: made and revoked with `docfinder keys` while the server runs,
scopes per action, expiry, several keys per client, and /metrics only with the metrics scope.

Each test attacks a running server (real aiohttp over loopback, a real MCP client session)
with keys the CLI wrote into the store the server reads.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from server.doors.cli import main
from tests import test_security
from tests.test_security import ALPHA, bearer

# The security tests' server: the sample index, a fake LLM and two configured keys.
llm, index, settings, server = (
    test_security.llm,
    test_security.index,
    test_security.settings,
    test_security.server,
)

QUESTION = "When are proposals due?"


def create_key(capsys, *arguments: str) -> str:
    """A key made by `docfinder keys create` (its only line on standard output)."""
    assert main(["keys", "create", *arguments]) == 0
    return capsys.readouterr().out.strip()


def key_id(key: str) -> str:
    return key.split("_")[1]


async def test_a_key_the_cli_makes_works_at_once_within_its_scopes_and_stops_when_revoked(server, capsys):
    client, _ = await server()  # started before the key exists
    key = create_key(capsys, "--client", "portal", "--scope", "search")
    searched = await client.post("/v1/search", json={"query": "proposal deadline"}, headers=bearer(key))
    assert searched.status == 200 and (await searched.json())["passages"]
    for route, body in (
        ("/v1/ask", {"question": QUESTION}),
        ("/v1/feedback", {"answer_id": "x", "rating": 5}),
    ):
        refused = await client.post(route, json=body, headers=bearer(key))
        assert refused.status == 403, route
        assert "lacks the" in (await refused.json())["error"]
    assert (await client.get("/metrics", headers=bearer(key))).status == 403

    assert main(["keys", "revoke", key_id(key)]) == 0
    again = await client.post("/v1/search", json={"query": "proposal deadline"}, headers=bearer(key))
    assert again.status == 401, "revoked: refused at the next request, without a restart"
    listed = capsys.readouterr()
    assert main(["keys", "list", "--json"]) == 0
    assert '"status": "revoked"' in capsys.readouterr().out and key not in listed.out


async def test_metrics_need_the_metrics_scope(server, capsys):
    client, _ = await server()
    assert (await client.get("/metrics", headers=bearer(ALPHA))).status == 403, "a default key: no metrics"
    watcher = create_key(capsys, "--client", "prometheus", "--scope", "metrics")
    scraped = await client.get("/metrics", headers=bearer(watcher))
    assert scraped.status == 200 and "docfinder_" in await scraped.text()
    refused = await client.post("/v1/search", json={"query": "x"}, headers=bearer(watcher))
    assert refused.status == 403, "a metrics key cannot search"
    admin = create_key(capsys, "--client", "ops", "--scope", "admin")
    assert (await client.get("/metrics", headers=bearer(admin))).status == 200
    assert (await client.post("/v1/search", json={"query": "x"}, headers=bearer(admin))).status == 200


async def test_an_expired_key_is_refused_whether_made_by_the_cli_or_configured(server, capsys):
    soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
    old = create_key(capsys, "--client", "intern", "--expires", soon)  # an expiry already past is refused
    lasting = create_key(capsys, "--client", "intern", "--days", "30")
    await asyncio.sleep(2.1)
    configured = "c" * 40
    client, _ = await server(
        access__api_keys={"legacy": {"key": configured, "expires": "2021-06-30"}, "alpha": {"key": ALPHA}}
    )
    for key in (old, configured):
        response = await client.post("/v1/search", json={"query": "x"}, headers=bearer(key))
        assert response.status == 401, key[:8]
    assert (await client.post("/v1/search", json={"query": "x"}, headers=bearer(lasting))).status == 200
    assert main(["keys", "list", "--json"]) == 0
    assert '"status": "expired"' in capsys.readouterr().out


async def test_a_client_rotates_keys_and_keeps_its_conversation_another_client_cannot_read_it(server, capsys):
    client, _ = await server()
    first = create_key(capsys, "--client", "portal")
    asked = await (await client.post("/v1/ask", json={"question": QUESTION}, headers=bearer(first))).json()
    conversation = asked["conversation_id"]
    second = create_key(capsys, "--client", "portal")
    assert main(["keys", "revoke", key_id(first)]) == 0
    follow_up = {"question": "And who reviews them?", "conversation_id": conversation}
    continued = await client.post("/v1/ask", json=follow_up, headers=bearer(second))
    assert continued.status == 200, "the new key continues the client's conversation"
    stranger = create_key(capsys, "--client", "other-team")
    assert (await client.post("/v1/ask", json=follow_up, headers=bearer(stranger))).status == 404


async def test_over_mcp_a_key_takes_only_the_actions_of_its_scopes(server, capsys):
    client, _ = await server()
    key = create_key(capsys, "--client", "assistant", "--scope", "search")
    url = str(client.make_url("/mcp"))
    session = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    async with session, Client(streamable_http_client(url, http_client=session)) as mcp:
        searched = await mcp.call_tool("search", {"query": "proposal deadline"})
        asked = await mcp.call_tool("ask", {"question": QUESTION})
        rated = await mcp.call_tool("submit_feedback", {"answer_id": "x", "rating": 4})
    assert not searched.is_error
    for refused in (asked, rated):
        assert refused.is_error and "lacks the" in refused.content[0].text


def test_revoking_a_key_that_does_not_exist_says_so(capsys):
    assert main(["keys", "revoke", "0123456789ab"]) != 0
    assert "no API key with id" in capsys.readouterr().err


def test_a_client_name_with_control_characters_is_refused(capsys):
    assert main(["keys", "create", "--client", "ops\x1b]0;pwned\x07"]) != 0
    assert "no control characters" in capsys.readouterr().err
