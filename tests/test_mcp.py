"""The MCP server through a real ``mcp.Client``: in process, over a stdio subprocess, and over
streamable HTTP on the aiohttp server (bearer token), with a deterministic OpenAI-compatible LLM."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import aiohttp
import httpx2
import pytest
from aiohttp.test_utils import TestServer
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from evaluation.doubles.fake_llm import FakeLLMServer
from index_build.builder import ingest
from pipeline.wording import EVIDENCE_HEADING
from server.doors.cli import main as cli_main
from server.doors.launch import http_app
from server.doors.mcp_server import build_mcp_server
from server.service import open_service
from server.settings import load_settings
from tests.samples import write_sample_corpus

SNAPSHOT = Path(__file__).parent / "snapshots" / "mcp_tools.json"
TOKEN = "test-token-0123456789abcdef"
QUESTION = "When are proposals due?"


@pytest.fixture(scope="module")
def llm():
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def config(tmp_path, embedder, llm) -> dict[str, str]:
    """The settings as DOCFINDER_* variables, so a CLI or a subprocess sees the same ones."""
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    return {
        "DOCFINDER_INDEX__DIR": str(tmp_path / "index"),
        "DOCFINDER_STORES__CONVERSATIONS_PATH": str(tmp_path / "conversations.sqlite3"),
        "DOCFINDER_STORES__FEEDBACK_PATH": str(tmp_path / "feedback.sqlite3"),
        "DOCFINDER_LLM__API_BASE": llm.url,
        "DOCFINDER_ACCESS__API_KEYS": json.dumps({"assistant": {"key": TOKEN}}),
        "DOCFINDER_SERVING__MAX_QUESTION_CHARS": "200",
    }


@pytest.fixture
def settings(config, monkeypatch):
    for name, value in config.items():
        monkeypatch.setenv(name, value)
    return load_settings()


@pytest.fixture
async def service(settings, embedder):
    async with open_service(settings, embedder=embedder) as entered:
        yield entered


def tool_listing(tools) -> list[dict]:
    return [
        {"name": t.name, "description": t.description, "input": t.input_schema, "output": t.output_schema}
        for t in sorted(tools, key=lambda t: t.name)
    ]


async def test_the_tool_list_and_schemas_match_the_snapshot(service, settings):
    async with Client(build_mcp_server(service, settings)) as client:
        listing = tool_listing((await client.list_tools()).tools)
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(listing, indent=2, sort_keys=True) + "\n")
    assert listing == json.loads(SNAPSHOT.read_text()), (
        "run with UPDATE_SNAPSHOTS=1 after a deliberate change"
    )
    names = [t["name"] for t in listing]
    assert names == [
        "ask",
        "audit",
        "get_document",
        "get_passage",
        "list_collections",
        "search",
        "submit_feedback",
    ]


async def test_ask_matches_the_cli_and_reports_each_step_as_progress(service, settings, capsys):
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with Client(build_mcp_server(service, settings)) as client:
        result = await client.call_tool("ask", {"question": QUESTION}, progress_callback=on_progress)
    assert not result.is_error
    answer = result.structured_content
    assert answer["outcome"] == "answered" and "[1]" in answer["answer"]
    assert [v for v, _ in progress] == list(range(1, len(progress) + 1))
    messages = [m for _, m in progress]
    assert messages[0] == "received" and "generate" in messages and "supported: code" in messages
    evidence = next(m for m in messages if m and m.startswith(EVIDENCE_HEADING))
    assert "15 April" in evidence and messages.index(evidence) < messages.index("generate"), "evidence first"
    writing = [m for m in messages if m and m.startswith("writing: ")]
    assert writing and messages.index(writing[0]) < messages.index("generate"), "the answer, as it is written"

    assert await asyncio.to_thread(cli_main, ["ask", QUESTION, "--json"]) == 0
    from_cli = json.loads(capsys.readouterr().out)
    assert from_cli["answer"] == answer["answer"]
    assert from_cli["citations"] == answer["citations"]
    assert from_cli["evidence"] == answer["evidence"] and answer["evidence"][0]["n"] == 1
    first = answer["citations"][0]
    assert first["link"].startswith("file://") and first["heading_path"] and first["passage_id"]


async def test_ask_trace_shows_every_step_of_the_card_on_a_first_question(settings, capsys):
    """`docfinder ask --trace` with an LLM server: classified, retrieved with its search stages
    (rerank among them), the evidence shown, generated once and checked by code."""
    assert await asyncio.to_thread(cli_main, ["ask", QUESTION, "--trace"]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    shown_first = captured.err[captured.err.index(EVIDENCE_HEADING) :]
    assert shown_first.split("\n")[1].startswith("[1] “"), "each evidence unit on a line of its own"
    assert "\\n" not in shown_first and "\\[" not in shown_first, "no escapes in the evidence shown"
    traced = printed[printed.index("\ntrace") :]
    steps = [line.split()[0] for line in traced.splitlines()[1:] if line.startswith("  ") and line.split()]
    for step in (
        "classify_query",
        "retrieve",
        "rerank",
        "fuse",
        "evidence",
        "generate",
        "compose",
        "supported",
        "useful",
    ):
        assert step in steps, f"{step} is not in the trace:\n{traced}"
    assert steps.index("retrieve") < steps.index("rerank") < steps.index("evidence") < steps.index("generate")
    assert steps.count("generate") == 1, "one LLM call"
    assert "no reranker configured" in " ".join(traced.split())


async def test_search_has_one_shape_over_http_the_cli_and_mcp(service, settings, capsys):
    async with Client(build_mcp_server(service, settings)) as client:
        over_mcp = (
            await client.call_tool("search", {"query": "proposal deadline", "k": 3})
        ).structured_content
    async with TestServer(http_app(service, settings)) as server, aiohttp.ClientSession() as session:
        url, bearer = server.make_url("/v1/search"), {"Authorization": f"Bearer {TOKEN}"}
        async with session.post(url, json={"query": "proposal deadline", "k": 3}, headers=bearer) as response:
            over_http = await response.json()
    assert await asyncio.to_thread(cli_main, ["search", "proposal deadline", "--k", "3", "--json"]) == 0
    from_cli = json.loads(capsys.readouterr().out)

    def shape(reply: dict) -> tuple[list[str], list[str], list[str]]:
        return (
            sorted(reply),
            sorted({k for p in reply["passages"] for k in p}),
            [p["passage_id"] for p in reply["passages"]],
        )

    assert shape(over_http) == shape(over_mcp) == shape(from_cli)
    assert {"index_version", "passages"} <= set(over_http) and "passage_id" in over_http["passages"][0]


async def test_search_passages_documents_collections_and_the_document_resource(service, settings):
    async with Client(build_mcp_server(service, settings)) as client:
        found = (await client.call_tool("search", {"query": "proposal deadline", "k": 3})).structured_content
        assert len(found["passages"]) == 3 and found["mode"] == "hybrid"
        top = found["passages"][0]
        passage = (
            await client.call_tool("get_passage", {"passage_id": top["passage_id"]})
        ).structured_content
        assert passage["text"] == top["text"] and passage["heading_path"] == top["heading_path"]
        document = (await client.call_tool("get_document", {"doc_id": top["doc_id"]})).structured_content
        assert top["passage_id"] in [p["passage_id"] for p in document["passages"]]
        collections = (await client.call_tool("list_collections", {})).structured_content
        assert collections["collections"][0]["documents"] >= 4
        assert collections["index_version"] == found["index_version"] == document["index_version"]
        resource = await client.read_resource(f"docfinder://documents/{top['doc_id']}")
        assert top["text"][:40] in resource.contents[0].text
        prompt = await client.get_prompt("ask_with_citations", {"question": QUESTION})
        assert QUESTION in prompt.messages[0].content.text


async def test_bad_input_gives_clear_tool_errors_and_the_server_keeps_serving(service, settings):
    async with Client(build_mcp_server(service, settings)) as client:
        cases = {
            "the question is empty": ("ask", {"question": "   "}),
            "the limit is 200": ("ask", {"question": "why? " * 60}),
            "no passage with id 'nope'": ("get_passage", {"passage_id": "nope"}),
            "no document with id 'nope'": ("get_document", {"doc_id": "nope"}),
            "unknown collection 'nope'": ("search", {"query": "proposal", "collections": ["nope"]}),
            "no answer with id 'nope'": ("submit_feedback", {"answer_id": "nope", "rating": 3}),
        }
        for expected, (tool, arguments) in cases.items():
            result = await client.call_tool(tool, arguments)
            assert result.is_error, tool
            assert expected in result.content[0].text, (tool, result.content[0].text)
        assert not (await client.call_tool("list_collections", {})).is_error


async def test_tool_arguments_follow_the_rest_apis_rules_and_errors_never_echo_the_input(service, settings):
    """MCP took ``k: true`` as 1, ignored unknown arguments and echoed the value it refused,
    where REST refuses both and names only the field (issue 37); a question of NUL or
    invisible characters was answered where "   " is refused."""
    secret = "sk-live-0123456789"
    async with Client(build_mcp_server(service, settings)) as client:
        cases = {
            "k": ("search", {"query": "proposal", "k": True}),
            "colour": ("search", {"query": "proposal", "colour": "blue"}),
            "rating": ("submit_feedback", {"answer_id": "a", "rating": secret}),
            "the question is empty": ("ask", {"question": "\x00\x00\u200b\u202e"}),
        }
        for expected, (tool, arguments) in cases.items():
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            text = result.content[0].text
            assert expected in text and secret not in text and "blue" not in text, text
        assert not (await client.call_tool("search", {"query": "proposal", "k": 2})).is_error


async def test_feedback_through_mcp_is_stored_with_the_answer(service, settings):
    async with Client(build_mcp_server(service, settings)) as client:
        answer = (await client.call_tool("ask", {"question": QUESTION})).structured_content
        stored = await client.call_tool(
            "submit_feedback",
            {"answer_id": answer["answer_id"], "rating": 2, "label": "Correct, but too verbose"},
        )
        assert not stored.is_error
        wrong_label = await client.call_tool(
            "submit_feedback", {"answer_id": answer["answer_id"], "label": "meh"}
        )
        assert wrong_label.is_error
    [record] = service.feedback.records()
    assert record.question == QUESTION and record.rating == 2 and record.platform == "mcp"
    assert record.sources and record.answer == answer["answer"]


async def test_stdio_subprocess_serves_tools_and_progress(config):
    server = StdioServerParameters(
        command=str(Path(sys.executable).parent / "docfinder"), args=["serve", "mcp"], env=config
    )
    progress = []

    async def on_progress(value, total, message):
        progress.append(message)

    async with Client(server, read_timeout_seconds=120) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"ask", "search", "submit_feedback"} <= names
        result = await client.call_tool("ask", {"question": QUESTION}, progress_callback=on_progress)
    assert not result.is_error and result.structured_content["outcome"] == "answered"
    assert "generate" in progress


async def test_streamable_http_on_the_http_server_requires_the_bearer_token(service, settings):
    async with TestServer(http_app(service, settings)) as server:
        url = str(server.make_url("/mcp"))
        async with aiohttp.ClientSession() as plain:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
                async with plain.post(url, json={}, headers=headers) as response:
                    assert response.status == 401 and "Bearer" in response.headers["WWW-Authenticate"]

        authorised = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        progress = []

        async def on_progress(value, total, message):
            progress.append(message)

        async with authorised, Client(streamable_http_client(url, http_client=authorised)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("ask", {"question": QUESTION}, progress_callback=on_progress)
            search = await client.call_tool("search", {"query": "proposal deadline"})
    assert "ask" in names and not result.is_error and not search.is_error
    assert result.structured_content["outcome"] == "answered" and "generate" in progress
