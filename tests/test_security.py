"""Every front door locked, every bad request a clear 4xx: each test is an attack that worked before.

The server runs for real on loopback (aiohttp's test server), with API keys, two collections
(one of them private), SQLite stores and a deterministic OpenAI-compatible LLM.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import aiohttp
import jwt
import pytest
from aiohttp.test_utils import TestClient, TestServer

from evaluation.doubles.fake_llm import FakeLLMServer
from index_build.builder import ingest
from pipeline.answers import Caller
from pipeline.errors import OverloadedError
from server.doors.auth import check_bind
from server.doors.cli import main
from server.doors.launch import http_app
from server.runtime.admission import WorkPool
from server.service import DocfinderService, open_service
from server.settings import load_settings
from tests.samples import write_sample_corpus

REPO = Path(__file__).resolve().parent.parent

ALPHA = "alpha-key-" + "0" * 30  # reads everything
BETA = "beta-key-" + "1" * 30  # reads the handbook only
GHOST = "g" * 40  # scoped to a collection the index does not have
MIXED = "m" * 40  # scoped to one it has and one it does not
SECRET_FACT = "The director's salary is 212,345 euros a year."


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def llm():
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def index(tmp_path, embedder) -> Path:
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    private = tmp_path / "private"
    private.mkdir()
    (private / "salaries.md").write_text(f"# Salaries\n\n## Director\n\n{SECRET_FACT}\n")
    ingest(tmp_path / "index", [private], embedder=embedder)
    return tmp_path / "index"


@pytest.fixture
def settings(tmp_path, index, llm):
    def make(**overrides):
        values = {
            "index__dir": index,
            "stores__conversations_path": tmp_path / "conversations.sqlite3",
            "stores__feedback_path": tmp_path / "feedback.sqlite3",
            "llm__api_base": llm.url,
            "access__api_keys": {"alpha": {"key": ALPHA}, "beta": {"key": BETA, "collections": ["handbook"]}},
        }
        return load_settings(**{**values, **overrides})

    return make


@pytest.fixture
async def server(settings, embedder):
    """``await server(**settings)`` → (client, service) over a real loopback server."""
    async with open_service(settings(), embedder=embedder) as shared:
        clients = []

        async def start(**overrides):
            service = shared
            if overrides:
                service = DocfinderService(settings(**overrides), embedder=embedder)
                await service.__aenter__()
            client = TestClient(TestServer(http_app(service, service.settings)))
            await client.start_server()
            clients.append((client, service is not shared and service))
            return client, service

        yield start
        for client, own in clients:
            await client.close()
            if own:
                await own.__aexit__(None, None, None)


# 1. The REST API has no authentication; collection scopes are ignored.


async def test_every_api_route_needs_a_key_and_a_key_reads_only_its_collections(server):
    client, _ = await server()
    routes = {
        "/v1/ask": {"question": "When are proposals due?"},
        "/v1/ask/stream": {"question": "When are proposals due?"},
        "/v1/search": {"query": "salary"},
        "/v1/feedback": {"answer_id": "x"},
    }
    for route, body in routes.items():
        for headers in ({}, bearer("wrong-" + "2" * 30), {"Authorization": f"Basic {ALPHA}"}):
            response = await client.post(route, json=body, headers=headers)
            assert response.status == 401 and "Bearer" in response.headers["WWW-Authenticate"], route
    assert (await client.get("/metrics")).status == 401
    assert (await client.get("/healthz")).status == 200, "health stays open for load balancers"

    beta = await (
        await client.post("/v1/search", json={"query": "director salary"}, headers=bearer(BETA))
    ).json()
    assert beta["passages"] and all(h["collection"] == "handbook" for h in beta["passages"])
    assert SECRET_FACT not in json.dumps(beta)
    denied = await client.post(
        "/v1/search", json={"query": "salary", "collections": ["private"]}, headers=bearer(BETA)
    )
    assert denied.status == 403 and "private" in (await denied.json())["error"]
    alpha = await (
        await client.post("/v1/search", json={"query": "director salary"}, headers=bearer(ALPHA))
    ).json()
    assert any(SECRET_FACT in h["text"] for h in alpha["passages"])


def test_serve_http_refuses_a_public_address_without_keys(tmp_path, index, capsys):
    code = main(["serve", "http", "--index", str(index), "--host", "0.0.0.0", "--port", "0"])
    assert (
        code != 0
        and "refusing to serve the HTTP API on 0.0.0.0 without credentials" in capsys.readouterr().err
    )
    check_bind("127.0.0.1", authenticated=False, insecure=False)  # loopback stays open for local use
    check_bind("0.0.0.0", authenticated=True, insecure=False)


# 2. Conversations can be read and written by anyone who guesses their id.


async def test_conversations_belong_to_their_caller(server):
    client, service = await server()
    slack = Caller("slack:T1:C1", names_conversations=True)
    thread = "slack:T1:C1:1795370021.000100"
    await service.ask("When are proposals due?", conversation_id=thread, caller=slack)
    before = service.conversations.history(thread)

    stolen = await client.post(
        "/v1/ask",
        json={"question": "and what did I ask before?", "conversation_id": thread},
        headers=bearer(ALPHA),
    )
    assert stolen.status == 404 and service.conversations.history(thread) == before
    invented = await client.post(
        "/v1/ask", json={"question": "hello", "conversation_id": "my-own-id"}, headers=bearer(ALPHA)
    )
    assert invented.status == 404, "a caller cannot choose a conversation id"

    first = await (
        await client.post("/v1/ask", json={"question": "When are proposals due?"}, headers=bearer(ALPHA))
    ).json()
    assert len(first["conversation_id"]) >= 24
    follow = {"question": "And how many co-investigators?", "conversation_id": first["conversation_id"]}
    assert (await client.post("/v1/ask", json=follow, headers=bearer(ALPHA))).status == 200
    assert (await client.post("/v1/ask", json=follow, headers=bearer(BETA))).status == 404
    feedback = {"answer_id": first["answer_id"], "rating": 1}
    assert (await client.post("/v1/feedback", json=feedback, headers=bearer(BETA))).status == 404
    assert (await client.post("/v1/feedback", json=feedback, headers=bearer(ALPHA))).status == 201


# 3. Ingest follows file symlinks out of the source tree.


def test_ingest_does_not_follow_links_out_of_its_folders_and_reports_them(tmp_path, embedder):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secrets.md").write_text("The root password is hunter2-correct-horse.\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nThe guide explains the cryostat warm-up.\n")
    (docs / "linked.md").symlink_to(outside / "secrets.md")
    (docs / "folder").symlink_to(outside)
    (docs / "gone.md").symlink_to(tmp_path / "nowhere.md")
    (docs / "inside.md").symlink_to(docs / "guide.md")
    report = ingest(tmp_path / "index", [docs], embedder=embedder)
    reasons = {Path(f.path).name: f.reason for f in report.failures}
    assert "outside the ingested folders" in reasons["linked.md"]
    assert "outside the ingested folders" in reasons["folder"]
    assert "dangling" in reasons["gone.md"]
    assert reasons["inside.md"] == f"the same file as {docs / 'guide.md'}: ingested once"
    assert report.documents == 1, "the guide once, not again under the link to it"
    from index_build.snapshot import open_live

    snapshot = open_live(tmp_path / "index", memory_map=True)
    assert all("hunter2" not in c.text for col in snapshot.collections.values() for c in col.chunks)


def test_a_file_name_that_is_not_utf8_is_skipped_and_named_and_the_rest_ingested(tmp_path):
    """Round two, finding 1: such a name crashed the whole ingest (UnicodeEncodeError, nothing indexed)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nThe guide explains the cryostat warm-up.\n")
    with open(os.path.join(os.fsencode(docs), b"caf\xe9 notes.md"), "w") as latin1_named:
        latin1_named.write("# Notes\n\nNotes on the caf\u00e9.\n")
    done = subprocess.run(
        [sys.executable, "-m", "server.doors.cli", "ingest", str(docs), "--index", str(tmp_path / "index")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert done.returncode == 3, done.stderr  # some files skipped, the rest indexed
    said = " ".join((done.stdout + done.stderr).split())  # rich wraps long lines
    assert "caf\\xe9 notes.md" in said and "file name is not valid UTF-8" in said
    from index_build.snapshot import open_live

    assert [Path(f.path).name for f in open_live(tmp_path / "index", memory_map=True).files] == ["guide.md"]


def test_control_characters_in_a_file_name_reach_neither_the_terminal_nor_the_log(tmp_path):
    """Round two, finding 7: ESC]0;…BEL retitled the operator's terminal, ESC[2J cleared it, and a
    newline in a name would have forged a log line."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nThe guide explains the cryostat warm-up.\n")
    (docs / "x\x1b]0;pwned\x07\x1b[2J\nERROR forged line.pdf").write_bytes(b"%PDF-1.4 broken")
    done = subprocess.run(
        [sys.executable, "-m", "server.doors.cli", "ingest", str(docs), "--index", str(tmp_path / "index")],
        cwd=REPO,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert done.returncode == 3
    said = done.stdout + done.stderr
    assert b"\x1b" not in said and b"\x07" not in said
    assert not any(line.startswith(b"ERROR forged") for line in said.splitlines())
    assert b"x\\x1b]0;pwned\\x07\\x1b[2J\\nERRORforgedline.pdf" in b"".join(said.split())  # shown, escaped


async def test_a_key_scoped_to_a_missing_collection_learns_no_other_collection_name(server):
    """Round two, finding 6: the error listed every collection on the server (REST and MCP alike)."""
    keys = {
        "alpha": {"key": ALPHA},
        "ghost": {"key": GHOST, "collections": ["other"]},
        "mixed": {"key": MIXED, "collections": ["handbook", "other"]},
    }
    client, _ = await server(access__api_keys=keys)
    for route, body in (
        ("/v1/search", {"query": "salary"}),
        ("/v1/ask", {"question": "What is the salary?"}),
    ):
        response = await client.post(route, json=body, headers=bearer(GHOST))
        error = (await response.json())["error"]
        assert response.status == 400 and "private" not in error and "handbook" not in error, error
    asked = await client.post(
        "/v1/search", json={"query": "salary", "collections": ["other"]}, headers=bearer(MIXED)
    )
    error = (await asked.json())["error"]
    assert asked.status == 400 and "private" not in error and "open to this caller: handbook" in error
    searched = await (await client.post("/v1/search", json={"query": "x"}, headers=bearer(MIXED))).json()
    assert {h["collection"] for h in searched["passages"]} == {"handbook"}, "its collections that exist"


# 4. `serve teams` without an app id sends answers to any URL the caller names.


async def test_the_teams_bot_replies_only_to_bot_framework_services(tmp_path, embedder, llm, index):
    from evaluation.doubles.fake_chat import FakeConnector
    from server.doors.chat_bots import mount_teams
    from tests.bot_server import BotServer
    from tests.test_teams_bot import question

    async with (
        FakeConnector() as trusted,
        FakeConnector() as attacker,
        BotServer(index.parent, embedder, llm.url, mount_teams) as bots,
    ):
        client, _ = await bots.start(teams__service_urls=[trusted.url])
        response = await client.post("/api/messages", json=question(attacker, "When are proposals due?"))
        assert response.status == 403
        await asyncio.sleep(0.5)
        assert attacker.activities == [], "nothing was sent to the URL the request named"
        response = await client.post("/api/messages", json=question(trusted, "When are proposals due?"))
        assert response.status in (200, 201)
        await trusted.wait_for(lambda c: c.messages())


def test_serve_teams_refuses_a_public_address_without_an_app_id(index, capsys):
    code = main(["serve", "teams", "--index", str(index), "--host", "0.0.0.0", "--port", "0"])
    assert code != 0 and "the Teams bot (no teams.app_id)" in capsys.readouterr().err


# 5. One request can freeze the whole server through Teams auth.


class BlackHole:
    """A TCP server that accepts connections and never answers (outbound HTTPS black-holed)."""

    def __init__(self) -> None:
        self.connections = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> BlackHole:
        async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            await asyncio.sleep(3600)

        self._server = await asyncio.start_server(hold, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/.well-known/openid"


async def test_forged_teams_tokens_neither_block_the_event_loop_nor_fetch_keys_again(
    tmp_path, embedder, llm, index
):
    from botframework.connector.auth import AuthenticationConstants, GovernmentConstants
    from botframework.connector.auth.jwt_token_extractor import JwtTokenExtractor

    from bots.teams_auth import OpenIdMetadata, install_openid_metadata
    from evaluation.doubles.fake_chat import FakeConnector
    from server.doors.chat_bots import mount_teams
    from tests.bot_server import BotServer
    from tests.test_teams_bot import question

    app_id = "00000000-0000-0000-0000-000000000001"
    forged = jwt.encode(
        {"iss": "https://api.botframework.com", "aud": app_id, "serviceurl": "x"},
        "not-the-signing-key-of-the-bot-framework",
        algorithm="HS256",
        headers={"kid": "forged-key"},
    )
    async with (
        BlackHole() as hole,
        FakeConnector() as connector,
        BotServer(index.parent, embedder, llm.url, mount_teams) as bots,
    ):
        client, _ = await bots.start(
            teams__app_id=app_id, teams__app_password="pw", teams__service_urls=[connector.url]
        )
        install_openid_metadata(1.0)
        urls = [
            value
            for constants in (AuthenticationConstants, GovernmentConstants)
            for value in vars(constants).values()
            if isinstance(value, str) and "openid" in value.lower()
        ]
        previous = dict(JwtTokenExtractor.metadataCache)
        for url in urls:  # every signing-key URL botbuilder may use leads into the black hole
            JwtTokenExtractor.metadataCache[url] = OpenIdMetadata(hole.url, timeout_s=1.0)
        try:
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.05)
                    ticks += 1

            ticker = asyncio.create_task(tick())
            headers = {"Authorization": f"Bearer {forged}"}
            first = await client.post("/api/messages", json=question(connector, "hi"), headers=headers)
            ticker.cancel()
            assert first.status == 401
            assert ticks >= 5, "the event loop kept running while the signing keys were fetched"
            fetches = hole.connections
            assert fetches >= 1
            second = await client.post("/api/messages", json=question(connector, "hi"), headers=headers)
            assert second.status == 401 and hole.connections == fetches, "a failed fetch is remembered"
        finally:
            JwtTokenExtractor.metadataCache.clear()
            JwtTokenExtractor.metadataCache.update(previous)


# 6. Rejected requests grow memory and break /metrics.


async def test_a_junk_search_mode_is_refused_before_it_becomes_a_metric_label(server):
    client, _ = await server()
    for n in range(30):
        junk = f"J{n}" + "J" * 30_000
        response = await client.post("/v1/search", json={"query": "x", "mode": junk}, headers=bearer(ALPHA))
        assert response.status == 400
    metrics = await (await client.get("/metrics", headers=bearer(ALPHA))).text()
    assert "JJJJ" not in metrics and len(metrics) < 200_000


# 7. 500s from bad bodies; the schema and the parser disagree; Slack headers and retries.


async def test_bad_bodies_are_400s_on_every_route(server):
    client, _ = await server()
    deep = "[" * 30_000 + "]" * 30_000
    bodies = [
        (b"\xff\xfe\x00garbage", "application/json"),
        (json.dumps({"question": "x", "query": "x", "answer_id": "x"}).encode("utf-16"), "application/json"),
        (b'{"question": "x"}', "application/json; charset=bogus-charset"),
        (b'{"question": "\\ud800", "query": "\\ud800", "answer_id": "\\ud800"}', "application/json"),
        (deep.encode(), "application/json"),
        # Beyond Python's 4,300-digit limit int() raises ValueError: it was a 500 on every route.
        (b'{"question": "x", "query": "x", "answer_id": "x", "k": ' + b"9" * 5000 + b"}", "application/json"),
        (b'{"question": "x", "query": "x", "answer_id": "x", "k": -' + b"9" * 50 + b"}", "application/json"),
    ]
    for route in ("/v1/ask", "/v1/ask/stream", "/v1/search", "/v1/feedback"):
        for body, content_type in bodies:
            response = await client.post(
                route, data=body, headers={"Content-Type": content_type, **bearer(ALPHA)}
            )
            assert response.status == 400, (route, body[:20], response.status)
            assert (await response.json())["error"]


async def test_requests_are_held_to_the_schema(server):
    client, _ = await server()
    cases = [
        ("/v1/ask", {"question": "x", "conversation_id": 5}),
        ("/v1/ask/stream", {"question": "x", "conversation_id": 5}),
        ("/v1/search", {"query": "x", "k": True}),
        ("/v1/search", {"query": "x" * 60_000}),
        ("/v1/feedback", {"answer_id": "x", "rating": True}),
        ("/v1/feedback", {"answer_id": "x", "user": {}}),
        ("/v1/ask", {"question": "x", "unknown": 1}),
    ]
    for route, body in cases:
        response = await client.post(route, json=body, headers=bearer(ALPHA))
        assert response.status == 400, (route, body)
        assert response.content_type == "application/json", "refused before any stream starts"
    spec = await (await client.get("/openapi.json")).json()
    reference = spec["paths"]["/v1/search"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    search = spec["components"]["schemas"][reference["$ref"].rsplit("/", 1)[-1]]
    k_types = {option.get("type") for option in search["properties"]["k"]["anyOf"]}
    assert search["additionalProperties"] is False and k_types == {"integer", "null"}  # null: retrieval.k


async def test_slack_malformed_headers_are_401_and_a_retried_event_is_answered_once(
    tmp_path, embedder, llm, index
):
    from evaluation.doubles.fake_chat import FakeSlackAPI
    from server.doors.chat_bots import mount_slack
    from tests.bot_server import BotServer
    from tests.test_slack_bot import SECRET, final_answers, mention, signed

    async with FakeSlackAPI() as api, BotServer(index.parent, embedder, llm.url, mount_slack) as bots:
        client, _ = await bots.start(
            slack__bot_token="xoxb-test", slack__signing_secret=SECRET, slack__api_url=api.url
        )
        body, headers = signed(mention("When are proposals due?"))
        bad_time = await client.post(
            "/slack/events", data=body, headers={**headers, "X-Slack-Request-Timestamp": "soon"}
        )
        assert bad_time.status == 401
        not_utf8 = await client.post(
            "/slack/events", data=b"\xff\xfe{", headers={"Content-Type": "application/json"}
        )
        assert not_utf8.status == 401
        assert (await client.post("/slack/events", data=body, headers=headers)).status == 200
        retry = {**headers, "X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
        assert (await client.post("/slack/events", data=body, headers=retry)).status == 200
        await api.wait_for(lambda a: final_answers(a))
        await asyncio.sleep(1.0)
        assert len(api.made("chat.postMessage")) == 1, "the retried delivery was not answered again"


async def test_slack_bodies_that_are_not_objects_are_refused_without_a_server_error(
    tmp_path, embedder, llm, index, caplog
):
    """Round two, finding 4: Bolt parsed the body before checking the signature, so anyone could
    get a 500 and a logged traceback; a signed delivery whose event is a string did too."""
    import time

    from slack_sdk.signature import SignatureVerifier

    from evaluation.doubles.fake_chat import FakeSlackAPI
    from server.doors.chat_bots import mount_slack
    from tests.bot_server import BotServer
    from tests.test_slack_bot import SECRET, event_callback, signed

    def signed_raw(body: str, content_type: str) -> dict[str, str]:
        timestamp = str(int(time.time()))
        signature = SignatureVerifier(SECRET).generate_signature(timestamp=timestamp, body=body)
        return {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": signature,
        }

    bodies = [
        ("notjson", "application/json"),
        ("[1,2]", "application/json"),
        ('"str"', "application/json"),
        ("payload=notjson", "application/x-www-form-urlencoded"),
        ("payload=%5B1%5D", "application/x-www-form-urlencoded"),
        # Found by the hardening bench's hostile bodies: a form-encoded body that is not a form.
        ("9" * 5000, "application/x-www-form-urlencoded"),
        ("[1, 2]", "application/x-www-form-urlencoded"),
        ("notjson", "application/x-www-form-urlencoded"),
        ("[" * 100_000 + "]" * 100_000, "application/x-www-form-urlencoded"),
        ('{"k": 1e' + "9" * 5000 + "}", "application/json"),
    ]
    async with FakeSlackAPI() as api, BotServer(index.parent, embedder, llm.url, mount_slack) as bots:
        client, _ = await bots.start(
            slack__bot_token="xoxb-test", slack__signing_secret=SECRET, slack__api_url=api.url
        )
        caplog.set_level(logging.ERROR)
        for body, content_type in bodies:
            forged = {
                "X-Slack-Request-Timestamp": str(int(time.time())),
                "X-Slack-Signature": "v0=" + "0" * 64,
            }
            unsigned = await client.post(
                "/slack/events", data=body, headers={"Content-Type": content_type, **forged}
            )
            assert unsigned.status == 401, (body, unsigned.status)
            genuine = await client.post("/slack/events", data=body, headers=signed_raw(body, content_type))
            assert genuine.status == 400, (body[:20], content_type, genuine.status)
        body, headers = signed({**event_callback({"type": "app_mention"}), "event": "a string"})
        assert (await client.post("/slack/events", data=body, headers=headers)).status == 400
        # Round three, 6: a signed event whose channel is a number was a 500.
        for event in (
            {"type": "app_mention", "channel": 5, "ts": "1.1", "text": "hi"},
            {
                "type": "reaction_added",
                "reaction": "+1",
                "user": "U1",
                "item": {"type": "message", "channel": 5},
            },
            {"type": "reaction_added", "reaction": "+1", "user": "U1", "item": "a string"},
        ):
            body, headers = signed(event_callback(event))
            assert (await client.post("/slack/events", data=body, headers=headers)).status == 400, event
        assert "Traceback" not in caplog.text and not [
            r for r in caplog.records if r.levelno >= logging.ERROR
        ]


# 8. SQLite contention becomes a raw 500.


async def test_a_locked_database_is_a_503_with_retry_after_and_reads_need_no_lock(server, tmp_path):
    client, service = await server(stores__database_busy_timeout_s=0.3)
    answer = await (
        await client.post("/v1/ask", json={"question": "When are proposals due?"}, headers=bearer(ALPHA))
    ).json()
    holder = sqlite3.connect(tmp_path / "feedback.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        busy = await client.post(
            "/v1/feedback", json={"answer_id": answer["answer_id"], "rating": 5}, headers=bearer(ALPHA)
        )
        assert busy.status == 503 and busy.headers["Retry-After"].isdigit()
        assert service.feedback.count() == 0, "a read does not wait for the writer"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    stored = await client.post(
        "/v1/feedback", json={"answer_id": answer["answer_id"], "rating": 5}, headers=bearer(ALPHA)
    )
    assert stored.status == 201 and service.feedback.count() == 1


# 10. No load shedding on search.


async def test_searches_beyond_the_queue_are_refused_at_once():
    pool = WorkPool(workers=1, queue=1, name="search")
    release = threading.Event()
    running = [asyncio.create_task(pool.run(release.wait)) for _ in range(2)]
    await asyncio.sleep(0.1)
    with pytest.raises(OverloadedError):
        await pool.run(lambda: None)
    admitted = asyncio.create_task(pool.run(lambda: "done", admitted=True))  # a question already let in
    release.set()
    await asyncio.gather(*running)
    assert await admitted == "done"
    pool.close()


async def test_health_answers_while_every_search_slot_is_taken(server):
    client, service = await server(serving__max_concurrent_searches=1, serving__search_queue=0)
    release = threading.Event()
    blocked = asyncio.create_task(service.parts.searcher.pool.run(release.wait))
    await asyncio.sleep(0.1)
    health = await client.get("/healthz")
    assert health.status == 200 and (await health.json())["searches_waiting"] == 1
    shed = await client.post("/v1/search", json={"query": "proposal"}, headers=bearer(ALPHA))
    assert shed.status == 503 and shed.headers["Retry-After"].isdigit()
    release.set()
    await blocked
    assert (await client.post("/v1/search", json={"query": "proposal"}, headers=bearer(ALPHA))).status == 200


# 11. A client that leaves an SSE stream early does not cancel the ask.


async def test_a_client_that_leaves_the_stream_cancels_its_question(settings, embedder, caplog, tmp_path):
    with FakeLLMServer(delay_s=1.0) as slow:
        service = DocfinderService(settings(llm__api_base=slow.url), embedder=embedder)
        async with service, TestServer(http_app(service, service.settings)) as test_server:
            caplog.set_level(logging.INFO)
            async with aiohttp.ClientSession() as session:
                response = await session.post(
                    test_server.make_url("/v1/ask/stream"),
                    json={"question": "When are proposals due?"},
                    headers=bearer(ALPHA),
                )
                assert (await response.content.readline()).startswith(b"event: status")
                response.close()  # the client goes away
            await asyncio.sleep(2.5)
            calls = slow.requests
            await asyncio.sleep(3.0)
            assert slow.requests == calls and calls <= 3, "no LLM call after the client left"
        turns = sqlite3.connect(tmp_path / "conversations.sqlite3").execute("SELECT COUNT(*) FROM turns")
        assert turns.fetchone()[0] == 0
    assert any("client left the stream" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# 12. /mcp behind a reverse proxy; absolute server paths in hits.


async def test_mcp_accepts_the_public_host_and_hits_hide_server_paths(server, index):
    client, _ = await server(access__public_hosts=["docfinder.example.org"])
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    headers = {**bearer(ALPHA), "Accept": "application/json, text/event-stream"}
    proxied = await client.post("/mcp", json=initialize, headers={**headers, "Host": "docfinder.example.org"})
    assert proxied.status == 200
    rebinding = await client.post("/mcp", json=initialize, headers={**headers, "Host": "evil.example"})
    assert rebinding.status == 421
    hits = (
        await (await client.post("/v1/search", json={"query": "proposal"}, headers=bearer(ALPHA))).json()
    )["passages"]
    assert hits and all(
        not h["source"].startswith("/") and str(index.parent) not in h["source"] for h in hits
    )
    assert {h["source"].split("/")[0] for h in hits} <= {"handbook", "private"}


# 8. With the LLM down, the answer showed the LLM's address and /healthz still said "ready".


async def test_an_llm_gone_down_shows_in_health_and_its_address_reaches_no_client(server):
    llm = FakeLLMServer()
    with llm:
        client, service = await server(llm__api_base=llm.url)
        asked = await client.post(
            "/v1/ask", json={"question": "When are proposals due?"}, headers=bearer(ALPHA)
        )
        assert asked.status == 200 and (await client.get("/healthz")).status == 200
        assert (await (await client.get("/healthz")).json())["llm"] == "ready"
    down = await client.post("/v1/ask", json={"question": "When are proposals due?"}, headers=bearer(ALPHA))
    body = await down.text()
    assert json.loads(body)["outcome"] == "llm_unavailable"
    for internal in ("127.0.0.1", str(llm.port), service.settings.llm.model):
        assert internal not in body, f"{internal!r} reached the client"
    health = await (await client.get("/healthz")).text()
    assert json.loads(health)["llm"] == "unavailable" and str(llm.port) not in health
    assert json.loads(health)["llm_reason"] == "the last question could not reach it"


async def test_an_openid_outage_costs_one_fetch_and_one_back_off_step_however_many_requests_meet_it(caplog):
    """Five seconds without the metadata endpoint used to lock all Teams traffic out for 15
    minutes: each concurrent request fetched, and each failure doubled the shared back-off."""
    from bots.teams_auth import OpenIdMetadata

    async with BlackHole() as hole:
        metadata = OpenIdMetadata(hole.url, timeout_s=0.5)
        with caplog.at_level(logging.WARNING, logger="bots.teams_auth"):
            outcomes = await asyncio.gather(*(metadata.get("kid") for _ in range(20)), return_exceptions=True)
    assert all(isinstance(o, PermissionError) for o in outcomes)
    assert metadata.fetches == 1 and hole.connections == 1, "the requests waited for the one fetch"
    assert metadata.backoff_s == 30.0, "one failure, one back-off step"
    [warning] = [r.getMessage() for r in caplog.records if "could not fetch" in r.getMessage()]
    assert "(TimeoutError)" in warning or "TimeoutError:" in warning, "the log says why"


async def test_a_question_of_only_control_or_invisible_characters_is_refused_like_blank_one(server):
    client, _ = await server()
    for question in ("\x00", "\x00\x00\x00", "\u200b\u200d", "\u202e\u2066 \t"):
        response = await client.post("/v1/ask", json={"question": question}, headers=bearer(ALPHA))
        assert response.status == 400 and "empty" in (await response.json())["error"], repr(question)


# Minor: the Teams door in emulator mode gives 500 for an activity without `conversation`.


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b"9" * 5000,
        b'{"type": 1e' + b"9" * 5000 + b"}",
        b"[1, 2]",
        b"notjson",
    ],
    ids=["nested-deep", "5000-digits", "huge-exponent", "list", "not-json"],
)
async def test_a_teams_body_that_is_no_activity_is_a_400_never_a_500(tmp_path, embedder, llm, body):
    from evaluation.doubles.fake_chat import FakeConnector
    from server.doors.chat_bots import mount_teams
    from tests.bot_server import BotServer

    async with FakeConnector() as connector, BotServer(tmp_path, embedder, llm.url, mount_teams) as bots:
        client, _ = await bots.start(teams__service_urls=[connector.url])
        response = await client.post("/api/messages", data=body, headers={"Content-Type": "application/json"})
        assert response.status == 400, await response.text()


@pytest.mark.parametrize(
    "change",
    [
        {"conversation": None},
        {"conversation": "19:thread"},
        {"from": None},
        {"recipient": {"name": "docfinder"}},
        {"channelData": {"team": "team-1"}},
        {"entities": "mention"},
        {"type": "messageReaction", "reactionsAdded": ["like"]},
    ],
    ids=[
        "no-conversation",
        "conversation-string",
        "no-from",
        "recipient-without-id",
        "team-string",
        "entities-string",
        "reaction-string",
    ],
)
async def test_a_malformed_teams_activity_is_a_400_naming_the_field_never_a_500(
    tmp_path, embedder, llm, change
):
    from evaluation.doubles.fake_chat import FakeConnector
    from server.doors.chat_bots import mount_teams
    from tests.bot_server import BotServer
    from tests.test_teams_bot import question

    async with FakeConnector() as connector, BotServer(tmp_path, embedder, llm.url, mount_teams) as bots:
        client, _ = await bots.start(teams__service_urls=[connector.url])  # emulator mode: no app id
        body = {key: value for key, value in question(connector, "When are proposals due?").items()}
        body.update(change)
        response = await client.post("/api/messages", json=body)
        text = await response.text()
        assert response.status == 400, text
        field = next(iter(k for k in change if k != "type"))
        assert f"'{field}" in text
        await asyncio.sleep(0.2)
        assert connector.activities == [], "nothing was sent for a malformed activity"


# Minor: MCP and REST validated the same request differently (one validation for both doors).


async def test_rest_and_mcp_refuse_the_same_requests_with_the_same_words_and_echo_nothing(server):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    client, _ = await server()
    secret = "sk-live-0123456789"
    cases = [
        ("/v1/search", "search", {"query": "proposal", "k": True}),
        ("/v1/search", "search", {"query": "proposal", "colour": secret}),
        ("/v1/search", "search", {"query": "proposal", "mode": secret}),
        ("/v1/search", "search", {"query": "proposal", "collections": [secret * 10]}),
        ("/v1/ask", "ask", {"question": secret * 2_000}),
        ("/v1/ask", "ask", {"question": "x", "conversation_id": 5}),
        ("/v1/feedback", "submit_feedback", {"answer_id": "a", "rating": secret}),
        ("/v1/feedback", "submit_feedback", {"answer_id": "a", "label": secret}),
    ]
    session = httpx2.AsyncClient(headers=bearer(ALPHA), timeout=60)
    url = str(client.make_url("/mcp"))
    async with session, Client(streamable_http_client(url, http_client=session)) as mcp:
        for route, tool, arguments in cases:
            rest = await client.post(route, json=arguments, headers=bearer(ALPHA))
            assert rest.status == 400, (route, arguments)
            rest_error = (await rest.json())["error"]
            result = await mcp.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            assert result.content[0].text == f"invalid arguments: {rest_error}", (tool, arguments)
            assert secret not in rest_error, rest_error


# Round three, 1. `"collections": []` searched every collection of the index, whatever the key.


async def test_an_empty_collection_list_opens_nothing_beyond_the_key_on_any_door(server):
    keys = {
        "alpha": {"key": ALPHA},
        "beta": {"key": BETA, "collections": ["handbook"]},
        "ghost": {"key": GHOST, "collections": ["other"]},
    }
    client, _ = await server(access__api_keys=keys)
    asks = {"question": "What is the director's salary in euros?", "collections": []}
    for route, body in (
        ("/v1/search", {"query": "director salary euros", "collections": []}),
        ("/v1/ask", asks),
        ("/v1/ask/stream", asks),
    ):
        response = await client.post(route, json=body, headers=bearer(BETA))
        text = await response.text()
        assert response.status == 200 and "212,345" not in text and "salaries.md" not in text, route
    searched = await (
        await client.post("/v1/search", json={"query": "proposal", "collections": []}, headers=bearer(BETA))
    ).json()
    assert searched["passages"] and {h["collection"] for h in searched["passages"]} == {"handbook"}
    for route, body in (("/v1/search", {"query": "director salary", "collections": []}), ("/v1/ask", asks)):
        response = await client.post(route, json=body, headers=bearer(GHOST))
        assert response.status == 400 and "212,345" not in await response.text(), route
    everything = await (
        await client.post(
            "/v1/search", json={"query": "director salary euros", "collections": []}, headers=bearer(ALPHA)
        )
    ).json()
    assert any(SECRET_FACT in h["text"] for h in everything["passages"]), "an unscoped key still reads all"

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    for key in (BETA, GHOST):
        http = httpx2.AsyncClient(headers=bearer(key), timeout=60)
        async with (
            http,
            Client(streamable_http_client(str(client.make_url("/mcp")), http_client=http)) as mcp,
        ):
            for tool, arguments in (
                ("search", {"query": "director salary euros", "collections": []}),
                ("ask", asks),
            ):
                result = await mcp.call_tool(tool, arguments)
                shown = json.dumps(result.structured_content) + " ".join(
                    getattr(c, "text", "") for c in result.content
                )
                assert "212,345" not in shown and "salaries.md" not in shown, (key[:4], tool)
                assert result.is_error == (key == GHOST), (key[:4], tool, shown[:300])


# Round three, 5. An LLM server answering 401, 400, 404 or a page that is no JSON made every
# /v1/ask a 500, cut the stream without an error event and failed MCP ask; /healthz said "ready".


@pytest.mark.parametrize(
    ("misbehaving", "told"),
    [
        ({"error_status": 401}, "refused docfinder's credentials"),
        ({"error_status": 400}, "refused the request"),
        ({"error_status": 404}, "refused the request"),
        ({"garbage": True}, "could not be read"),
    ],
)
async def test_an_llm_server_refusing_or_answering_garbage_is_a_clear_answer_on_every_door(
    server, misbehaving, told
):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    with FakeLLMServer(**misbehaving) as llm:
        client, _ = await server(llm__api_base=llm.url)
        asked = await client.post(
            "/v1/ask", json={"question": "When are proposals due?"}, headers=bearer(ALPHA)
        )
        body = await asked.text()
        assert asked.status == 200, body
        reply = json.loads(body)
        assert reply["outcome"] == "llm_unavailable" and reply["citations"], "the sources retrieved so far"
        error = next(e["error"] for e in reply["trace"] if e["step"] == "llm_unavailable")
        assert told in error and str(llm.port) not in body and "127.0.0.1" not in body
        streamed = await client.post(
            "/v1/ask/stream", json={"question": "When are proposals due?"}, headers=bearer(ALPHA)
        )
        events = (await streamed.text()).strip().split("\n\n")
        assert events[-1].startswith("event: answer") and "llm_unavailable" in events[-1], events[-1][:200]
        http = httpx2.AsyncClient(headers=bearer(ALPHA), timeout=60)
        async with (
            http,
            Client(streamable_http_client(str(client.make_url("/mcp")), http_client=http)) as mcp,
        ):
            result = await mcp.call_tool("ask", {"question": "When are proposals due?"})
        assert not result.is_error and result.structured_content["outcome"] == "llm_unavailable"
        health = await (await client.get("/healthz")).json()
        assert health["llm"] == "unavailable", health


# Round three, 7. A question whose LLM call ran past the time limit left the call running on the
# one-slot embedded server, and the next questions timed out behind it without a token.


async def test_an_llm_call_given_up_stops_at_the_server_and_the_next_question_is_answered(server):
    with FakeLLMServer(one_slot=True, token_delay_s=0.2) as llm:  # about 8 s to write a reply
        client, _ = await server(llm__api_base=llm.url, llm__timeout_s=1.5)
        first = await (
            await client.post("/v1/ask", json={"question": "When are proposals due?"}, headers=bearer(ALPHA))
        ).json()
        assert first["outcome"] == "llm_unavailable", "the first call ran past the limit"
        llm.token_delay_s = 0.0
        second = await (
            await client.post("/v1/ask", json={"question": "When are proposals due?"}, headers=bearer(ALPHA))
        ).json()
    assert llm.abandoned >= 1, "the call given up stopped at the server"
    assert second["outcome"] == "answered", "the next question did not wait behind the abandoned call"


# Round three, 4. A server without keys took any Host and read a text/plain body as JSON: a web
# page on a DNS-rebinding domain that the operator opens could search, ask and send feedback.


async def test_a_keyless_server_answers_only_its_loopback_names_and_json_bodies(server):
    client, _ = await server(access__api_keys={})
    search = {"query": "proposal deadline"}
    local = await client.post("/v1/search", json=search)
    assert local.status == 200, "loopback, no key needed"
    for headers in (
        {"Host": "evil.example"},
        {"Host": "evil.example:8080"},
        {"Origin": "http://evil.example"},
    ):
        rebound = await client.post("/v1/search", json=search, headers=headers)
        assert rebound.status == 421, headers
    for route in ("/v1/search", "/v1/ask", "/v1/feedback"):
        simple = await client.post(route, data=json.dumps(search), headers={"Content-Type": "text/plain"})
        assert simple.status == 415 and "application/json" in (await simple.json())["error"], route
    public, _ = await server(access__api_keys={}, access__public_hosts=["docs.example.org"])
    assert (await public.post("/v1/search", json=search, headers={"Host": "docs.example.org"})).status == 200


# Round three, 5. The first key created on a server started without keys was not enforced until
# a restart.


async def test_the_first_key_created_on_a_keyless_server_is_enforced_without_a_restart(server):
    from server.stores.keys import KeyStore
    from server.stores.opening import open_configured_database

    client, service = await server(access__api_keys={})
    assert (await client.post("/v1/search", json={"query": "proposal"})).status == 200
    settings = service.settings
    store = KeyStore(open_configured_database(settings, settings.access.api_keys_path))
    _, secret = store.create("ops", ["search"])
    store.database.close()
    await asyncio.sleep(2.2)  # the server looks again every two seconds while it has no key
    assert (await client.post("/v1/search", json={"query": "proposal"})).status == 401
    assert (await client.post("/v1/search", json={"query": "proposal"}, headers=bearer(secret))).status == 200


# Round three, 6. /v1/ask/stream answered scope and input errors with HTTP 200 and an error event
# where /v1/ask gives 403, 404 and 400.


async def test_the_stream_refuses_what_ask_refuses_with_the_same_status(server):
    client, _ = await server()
    started = await client.post(
        "/v1/ask", json={"question": "When are proposals due?"}, headers=bearer(ALPHA)
    )
    foreign = (await started.json())["conversation_id"]
    for body, status in (
        ({"question": "What is the salary?", "collections": ["private"]}, 403),
        ({"question": "And then?", "conversation_id": foreign}, 404),
        ({"question": " \u200b "}, 400),
    ):
        for route in ("/v1/ask", "/v1/ask/stream"):
            response = await client.post(route, json=body, headers=bearer(BETA))
            assert response.status == status, (route, body, await response.text())
            assert "error" in await response.json()


# Round three, 6. FIFOs and device files were skipped without being listed; a key could be given
# a past expiry; a key sent as ?api_key= was written to the access log.


def test_a_named_pipe_in_the_corpus_is_listed_as_skipped_and_never_read(tmp_path):
    from index_build.sources import discover

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\nRead me.\n")
    os.mkfifo(folder / "pipe.md")  # opening it for reading would block the ingest
    found = discover([folder], None)
    assert [s.path.name for s in found.sources] == ["guide.md"]
    assert any("pipe.md" in path and "named pipe" in reason for path, reason in found.skipped)


def test_a_key_cannot_be_created_already_expired(tmp_path, capsys):
    code = main(["keys", "create", "--client", "ops", "--expires", "2020-01-01"])
    assert code != 0 and "already past" in capsys.readouterr().err


def test_the_access_log_names_paths_never_query_strings(caplog):
    from aiohttp.test_utils import make_mocked_request
    from aiohttp.web import Response

    from server.doors.launch import PathOnlyAccessLogger

    logger = logging.getLogger("test.access")
    caplog.set_level(logging.INFO, logger="test.access")
    request = make_mocked_request("POST", "/v1/search?api_key=s3cret-key-value")
    PathOnlyAccessLogger(logger, "").log(request, Response(status=401), 0.01)
    assert "/v1/search" in caplog.text and "s3cret" not in caplog.text


# Round three, 6. An authenticated client trickling its body in was never timed out.


async def test_a_body_that_trickles_in_is_cut_off_with_408(server):
    client, _ = await server(serving__body_timeout_s=0.5)

    async def trickle():
        yield b'{"query": '
        await asyncio.sleep(2)
        yield b'"proposal"}'

    headers = {**bearer(ALPHA), "Content-Type": "application/json"}
    response = await client.post("/v1/search", data=trickle(), headers=headers)
    assert response.status == 408 and "did not arrive" in (await response.json())["error"]


# Round three, 3. A genuine Teams message froze the whole server while Microsoft's token endpoint
# accepted connections and never answered: botbuilder fetched the bot's token on the event loop.


async def test_a_silent_token_endpoint_costs_that_reply_and_never_blocks_the_event_loop():
    from botframework.connector.auth import MicrosoftAppCredentials

    from bots.teams_auth import FetchedOffTheLoop

    class SilentEndpoint:
        """The configured factory, its credentials asking a token endpoint that never answers."""

        def __init__(self, authority: str) -> None:
            self.authority = authority

        async def is_valid_app_id(self, app_id):
            return True

        async def is_authentication_disabled(self):
            return False

        async def create_credentials(self, app_id, oauth_scope, login_endpoint, validate_authority):
            credentials = MicrosoftAppCredentials(app_id, "pw", oauth_scope="https://api.botframework.com")
            credentials.oauth_endpoint = self.authority
            return credentials

    async with BlackHole() as hole:
        # A TLS handshake with the black hole never completes either.
        authority = hole.url.replace("http://", "https://").replace(
            "/.well-known/openid", "/botframework.com"
        )
        factory = FetchedOffTheLoop(SilentEndpoint(authority), timeout_s=1.0)
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        ticker = asyncio.create_task(tick())
        started = asyncio.get_running_loop().time()
        with pytest.raises(PermissionError, match="no access token"):
            await factory.create_credentials("00000000-0000-0000-0000-000000000001", "s", "https://x", True)
        waited = asyncio.get_running_loop().time() - started
        ticker.cancel()
    assert hole.connections >= 1, "the token endpoint was asked"
    assert waited < 3 and ticks >= 10, "the event loop went on while the token was awaited"


# Round three, 5. Absolute server paths and file:// links reached remote callers in the ask trace
# (step evidence) and in the stream's status and evidence events.


async def test_no_server_path_or_file_link_reaches_a_remote_caller_in_traces_or_streams(server, index):
    client, _ = await server()
    disk = str(index.parent)
    asked = await client.post("/v1/ask", json={"question": "When are proposals due?"}, headers=bearer(ALPHA))
    assert asked.status == 200
    evidence_step = next(e for e in (await asked.json())["trace"] if e["step"] == "evidence")
    assert evidence_step["quotes"] and all(not q["source"].startswith("/") for q in evidence_step["quotes"])
    streamed = await client.post(
        "/v1/ask/stream", json={"question": "When are proposals due?"}, headers=bearer(ALPHA)
    )
    for text in (await asked.text(), await streamed.text()):
        assert disk not in text and "file://" not in text, text[:400]
    assert "event: evidence" in await streamed.text()


# Round three, 6. /mcp answered 500 to a header holding a byte that is not ASCII.


async def test_a_header_byte_that_is_no_ascii_is_no_server_error_on_mcp(server):
    client, _ = await server()
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    headers = {**bearer(ALPHA), "Accept": "application/json, text/event-stream", "X-Note": "5 \u20ac"}
    response = await client.post("/mcp", json=initialize, headers=headers)
    assert response.status < 500, await response.text()


# Round three, 6. Escape sequences inside a document's text reached the terminal raw through
# `docfinder ask` and `search` (only file names were escaped).


def test_escape_sequences_in_a_documents_text_never_reach_the_terminal(tmp_path, llm):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(
        "# Guide\n\nThe cryostat is warmed up every six months.\x1b]0;pwned\x07\x1b[2J Warm-ups take a day.\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "DOCFINDER_LLM__API_BASE": llm.url}
    cli = [sys.executable, "-m", "server.doors.cli"]
    index = str(tmp_path / "index")
    for command in (
        ["ingest", str(docs), "--index", index],
        ["search", "cryostat warmed", "--index", index],
        ["ask", "How often is the cryostat warmed up?", "--index", index],
    ):
        done = subprocess.run([*cli, *command], cwd=tmp_path, capture_output=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        said = done.stdout + done.stderr
        assert b"\x1b" not in said and b"\x07" not in said, command[0]
        if command[0] != "ingest":
            assert b"six months" in said, command[0]


# Round three, 6. A client's narrower key continued its wider key's conversation, and the LLM read
# the out-of-scope answer as history.


async def test_a_narrower_key_continuing_a_conversation_never_shows_the_llm_the_wider_answers(server, llm):
    from server.stores.keys import KeyStore
    from server.stores.opening import open_configured_database

    client, service = await server()
    settings = service.settings
    store = KeyStore(open_configured_database(settings, settings.access.api_keys_path))
    _, wide = store.create("portal", ["ask"])
    _, narrow = store.create("portal", ["ask"], ["handbook"])
    store.database.close()
    first = await (
        await client.post(
            "/v1/ask", json={"question": "What is the director's salary?"}, headers=bearer(wide)
        )
    ).json()
    assert "212,345" in json.dumps(first), "the wide key reads the private collection"
    asked = len(llm.prompts)
    follow_up = {"question": "And is it paid monthly?", "conversation_id": first["conversation_id"]}
    second = await client.post("/v1/ask", json=follow_up, headers=bearer(narrow))
    assert second.status == 200, "the client's other key continues its conversation"
    assert "212,345" not in await second.text()
    assert not any("212,345" in prompt for prompt in llm.prompts[asked:]), "no earlier answer in the prompt"
