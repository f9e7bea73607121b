"""Misconfiguration fails at start, naming the setting: a bad database, an unreachable LLM server."""

from __future__ import annotations

import logging
import socket

import pytest

from index_build.builder import ingest
from server.doors.cli import EXIT_USAGE, main
from server.service import open_service
from server.settings import load_settings


@pytest.fixture
def index(tmp_path, embedder, sample_corpus):
    ingest(tmp_path / "index", [sample_corpus], embedder=embedder)
    return tmp_path / "index"


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_serve_with_a_bad_database_url_stops_at_start_naming_the_setting(index, monkeypatch, capsys):
    monkeypatch.setenv("DOCFINDER_STORES__DATABASE_URL", "mysql://docfinder:hunter2@db.example/docs")
    code = main(["serve", "http", "--index", str(index), "--port", str(closed_port())])
    stderr = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "database_url" in stderr and "postgresql://" in stderr
    assert "hunter2" not in stderr, "the DSN's password is never printed"


async def test_an_unreachable_llm_server_is_reported_at_start_with_its_url(index, embedder, caplog):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    settings = load_settings(index__dir=index, llm__api_base=url)
    with caplog.at_level(logging.ERROR, logger="server.service"):
        async with open_service(settings, embedder=embedder, start_llm=True) as service:
            health = await service.health()
            found = await service.search("proposal deadline", k=2)
    assert any(url in r.getMessage() and "llm.api_base" in r.getMessage() for r in caplog.records)
    assert health["llm"] == "unavailable" and health["llm_reason"] == "cannot connect to it", "health says so"
    assert found.hits, "search still serves without the LLM"


async def test_a_reachable_llm_server_is_ready_at_start(index, embedder):
    from evaluation.doubles.fake_llm import FakeLLMServer

    with FakeLLMServer() as llm:
        settings = load_settings(index__dir=index, llm__api_base=llm.url)
        async with open_service(settings, embedder=embedder, start_llm=True) as service:
            assert (await service.health())["llm"] == "ready"
