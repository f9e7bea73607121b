"""The web page's server side, attacked over a real loopback server: the page and its files
with a strict Content-Security-Policy and nothing else served, a key's own conversations
only, passages only from the key's collections, and the feedback summary and export for
admin keys only. The browser walk-through is in tests/test_web_browser.py."""

from __future__ import annotations

import json
import re

import pytest

from server.doors.web_page import ASSETS
from tests import test_security
from tests.test_security import ALPHA, BETA, SECRET_FACT, bearer

llm, index, settings, server = (
    test_security.llm,
    test_security.index,
    test_security.settings,
    test_security.server,
)
ADMIN = "admin-key-" + "2" * 30
KEYS = {
    "alpha": {"key": ALPHA},
    "beta": {"key": BETA, "collections": ["handbook"]},
    "boss": {"key": ADMIN, "scopes": ["admin"]},
}
QUESTION = "When are proposals due?"


@pytest.fixture
async def client(server):
    client, _ = await server(access__api_keys=KEYS)
    return client


async def test_the_page_and_only_its_files_are_served_under_a_policy_without_inline_script(client):
    for path in ("/", "/admin", *(f"/static/{name}" for name in ASSETS)):
        response = await client.get(path)
        assert response.status == 200, path
        policy = response.headers["Content-Security-Policy"]
        assert (
            "script-src 'self'" in policy
            and "unsafe-inline" not in policy
            and "frame-ancestors 'none'" in policy
        )
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    page = await (await client.get("/")).text()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page), "every script comes from a file"
    assert not re.search(r"\son[a-z]+=", page), "no inline event handlers"
    for attack in (
        "/static/../server/settings/__init__.py",
        "/static/%2e%2e/pyproject.toml",
        "/static/app.py",
    ):
        assert (await client.get(attack)).status == 404, attack


async def test_a_key_lists_and_reads_only_its_own_conversations(client):
    asked = await client.post("/v1/ask", json={"question": QUESTION}, headers=bearer(ALPHA))
    answer = await asked.json()
    mine = await (await client.get("/v1/conversations", headers=bearer(ALPHA))).json()
    [entry] = mine["conversations"]
    assert entry["conversation_id"] == answer["conversation_id"] and entry["title"] == QUESTION
    assert entry["turns"] == 2
    turns = (
        await (
            await client.get(f"/v1/conversations/{entry['conversation_id']}", headers=bearer(ALPHA))
        ).json()
    )["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant"] and turns[1]["answer_id"] == answer[
        "answer_id"
    ]
    theirs = await (await client.get("/v1/conversations", headers=bearer(BETA))).json()
    assert theirs["conversations"] == [], "another key's conversations are not listed"
    stolen = await client.get(f"/v1/conversations/{entry['conversation_id']}", headers=bearer(BETA))
    assert stolen.status == 404, "another key's conversation is not found, as no conversation is"
    for bad in ("../../etc/passwd", "x" * 65, "a%00b"):
        assert (await client.get(f"/v1/conversations/{bad}", headers=bearer(ALPHA))).status == 404
    assert (await client.get("/v1/conversations")).status == 401
    assert (await client.get("/v1/conversations?limit=0", headers=bearer(ALPHA))).status == 400
    assert (await client.get("/v1/conversations?owner=alpha", headers=bearer(BETA))).status == 400


async def test_a_citation_opens_a_passage_only_from_the_keys_collections(client):
    found = await client.post("/v1/search", json={"query": "director salary"}, headers=bearer(ALPHA))
    [secret] = [p for p in (await found.json())["passages"] if SECRET_FACT in p["text"]]
    opened = await client.get("/v1/passage", params={"id": secret["passage_id"]}, headers=bearer(ALPHA))
    assert opened.status == 200 and SECRET_FACT in (await opened.json())["text"]
    hidden = await client.get("/v1/passage", params={"id": secret["passage_id"]}, headers=bearer(BETA))
    assert hidden.status == 404 and SECRET_FACT not in await hidden.text()
    assert (await client.get("/v1/passage", headers=bearer(ALPHA))).status == 400


async def test_the_feedback_summary_and_export_are_for_admin_keys_only(client):
    asked = await (await client.post("/v1/ask", json={"question": QUESTION}, headers=bearer(ALPHA))).json()
    rated = await client.post(
        "/v1/feedback",
        json={"answer_id": asked["answer_id"], "rating": 2, "label": "Correct, but missing information"},
        headers=bearer(ALPHA),
    )
    assert rated.status == 201
    for path in ("/v1/feedback/summary", "/v1/feedback/export"):
        assert (await client.get(path, headers=bearer(ALPHA))).status == 403, path
    summary = await (await client.get("/v1/feedback/summary", headers=bearer(ADMIN))).json()
    assert summary["records"] == 1 and summary["ratings"]["2"] == 1
    assert summary["labels"]["Correct, but missing information"] == 1 and len(summary["by_day"]) == 1
    [worst] = summary["worst_questions"]
    assert worst["question"] and worst["answer"] == asked["answer"]
    assert worst["sources"] == ["handbook/observing.md"], "by its public name, never the server's path"
    export = await client.get("/v1/feedback/export", headers=bearer(ADMIN))
    [line] = (await export.text()).splitlines()
    assert json.loads(line)["rating"] == 2 and json.loads(line)["good"] is False
