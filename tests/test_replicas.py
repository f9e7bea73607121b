"""Replicated serving: two real `docfinder serve http` processes on one index and one PostgreSQL.

A question continued on the other replica keeps its conversation; an API key made once works
on both, and another client's key cannot continue the conversation; a new index version
reaches both replicas while they answer, without a failed request. PostgreSQL runs when
``TEST_POSTGRES_DSN`` names a server (``.ci/run`` starts one on loopback).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path

import aiohttp
import pytest

from evaluation.doubles.fake_llm import FakeLLMServer
from index_build.builder import ingest
from server.doors.cli import main
from tests.postgres import fresh_database
from tests.samples import write_sample_corpus

pytestmark = pytest.mark.slow

FIRST_QUESTION = "When is the deadline for submitting observing proposals?"
FOLLOW_UP = "And how many co-investigators may it name?"


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    """A fresh PostgreSQL database for the module."""
    with fresh_database("docfinder_replicas") as dsn:
        yield dsn


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def index(tmp_path_factory, embedder) -> Path:
    root = tmp_path_factory.mktemp("replicas")
    ingest(root / "index", [write_sample_corpus(root / "handbook")], embedder=embedder)
    return root / "index"


@pytest.fixture(scope="module")
def environment(database, llm, index, embedder_exports) -> dict[str, str]:
    """What each replica is started with: the same index, database and LLM."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCFINDER_")}
    return env | {
        "DOCFINDER_INDEX__DIR": str(index),
        "DOCFINDER_STORES__DATABASE_URL": database,
        "DOCFINDER_LLM__API_BASE": llm.url,
        "DOCFINDER_EMBEDDER__CACHE_DIR": str(embedder_exports),
    }


@pytest.fixture(scope="module")
def replicas(environment, keys, tmp_path_factory) -> Iterator[list[str]]:
    """Two server processes on loopback; their base URLs once both answer /healthz."""
    logs = tmp_path_factory.mktemp("replica-logs")
    processes, urls = [], []
    for number in range(2):
        port = free_port()
        log = open(logs / f"replica{number}.log", "w")  # noqa: SIM115 - closed with its process
        command = [
            sys.executable,
            "-m",
            "server.doors.cli",
            "serve",
            "http",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        processes.append((subprocess.Popen(command, env=environment, stdout=log, stderr=log), log))
        urls.append(f"http://127.0.0.1:{port}")
    try:
        for url, (process, _) in zip(urls, processes, strict=True):
            wait_until_healthy(url, process, logs)
        yield urls
    finally:
        for process, log in processes:
            process.terminate()
            process.wait(timeout=30)
            log.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_healthy(url: str, process: subprocess.Popen, logs: Path, timeout_s: float = 120) -> None:
    async def healthy() -> bool:
        try:
            async with aiohttp.ClientSession() as session, session.get(f"{url}/healthz") as reply:
                return reply.status == 200
        except aiohttp.ClientError:
            return False

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(
                f"a replica exited: {''.join(p.read_text() for p in logs.iterdir())[-3000:]}"
            )
        if asyncio.run(healthy()):
            return
        time.sleep(0.2)
    raise AssertionError(f"{url} never became healthy")


@pytest.fixture(scope="module")
def keys(environment) -> dict[str, str]:
    """Keys made once with the CLI, kept in PostgreSQL, as an admin makes them before the
    replicas start (a server started without any key stays a loopback-only server)."""
    made = {}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in environment.items():
            if name.startswith("DOCFINDER_"):
                patch.setenv(name, value)
        for client in ("team", "stranger"):
            printed = io.StringIO()
            with redirect_stdout(printed):
                assert main(["keys", "create", "--client", client]) == 0
            made[client] = printed.getvalue().strip()
    return made


async def post(url: str, path: str, body: dict, key: str) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}{path}", json=body, headers=headers) as reply,
    ):
        return reply.status, json.loads(await reply.text() or "{}")


def test_a_conversation_continues_on_the_other_replica_and_keys_work_on_both(replicas, keys, llm):
    first_replica, second_replica = replicas
    team, stranger = keys["team"], keys["stranger"]

    async def scenario():
        status, first = await post(first_replica, "/v1/ask", {"question": FIRST_QUESTION}, team)
        assert status == 200, first
        prompts_before = len(llm.prompts)
        follow_up = {"question": FOLLOW_UP, "conversation_id": first["conversation_id"]}
        status, second = await post(second_replica, "/v1/ask", follow_up, team)
        assert status == 200, second
        assert second["conversation_id"] == first["conversation_id"]
        # The second replica read the first turn from PostgreSQL: its prompts carry it.
        assert any(FIRST_QUESTION in prompt for prompt in llm.prompts[prompts_before:])
        status, refused = await post(first_replica, "/v1/ask", follow_up, stranger)
        assert status == 404, refused  # another client's conversation does not exist for it

    asyncio.run(scenario())


def test_a_new_index_version_reaches_both_replicas_without_a_failed_request(
    replicas, keys, index, embedder, tmp_path
):
    key = keys["team"]
    news = tmp_path / "news"
    news.mkdir()
    (news / "bulletin.md").write_text("# Bulletin\n\nThe cafeteria serves quinoa porridge on Thursdays.\n")
    query = {"query": "quinoa porridge cafeteria", "k": 3}
    statuses: list[int] = []

    async def search_both_until(done: asyncio.Event) -> None:
        while not done.is_set():
            for url in replicas:
                status, _ = await post(url, "/v1/search", query, key)
                statuses.append(status)

    async def scenario():
        done = asyncio.Event()
        searching = asyncio.create_task(search_both_until(done))
        await asyncio.to_thread(ingest, index, [news], embedder=embedder)
        done.set()
        await searching
        for url in replicas:
            status, found = await post(url, "/v1/search", query, key)
            assert status == 200 and "quinoa porridge" in found["passages"][0]["text"], url

    asyncio.run(scenario())
    assert statuses and set(statuses) == {200}
