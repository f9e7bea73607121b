"""The HTTP API through aiohttp's test server, with DummyLM as the language model."""

from __future__ import annotations

import json

import dspy
import jsonschema
import pytest
from aiohttp.test_utils import TestClient, TestServer
from dspy.utils import DummyLM

from evaluation.doubles.fake_llm import FakeLLMServer
from index_build.builder import ingest
from server.doors.http_api import SERVICE, create_app
from server.doors.web_page import ASSETS
from server.service import open_service
from server.settings import load_settings
from tests.samples import write_sample_corpus

SCRIPT = [{"answer": "Proposals are due on 15 April [1]."}]  # one call a question: the checks are code


@pytest.fixture
async def client(tmp_path, embedder):
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    settings = load_settings(index__dir=tmp_path / "index", stores__conversations_path=tmp_path / "c.sqlite3")
    model = DummyLM(SCRIPT * 3, adapter=dspy.JSONAdapter())
    async with (
        open_service(settings, embedder=embedder, lm=model) as service,
        TestClient(TestServer(create_app(service))) as test_client,
    ):
        yield test_client


async def test_ask_returns_the_answer_with_citations(client):
    response = await client.post("/v1/ask", json={"question": "When are proposals due?"})
    assert response.status == 200
    body = await response.json()
    assert body["answer"] == "Proposals are due on 15 April [1]." and body["outcome"] == "answered"
    deadline = "Proposals are submitted through the Observing Tool before the deadline on 15 April."
    assert deadline in [q["text"] for q in body["evidence"]], "the document's own sentence, quoted by code"
    assert body["citations"][0]["heading_path"][-1] == "Proposal preparation"
    assert {"answer_id", "conversation_id", "verdicts", "trace"} <= set(body)
    quote = body["evidence"][0]
    assert {"n", "text", "source", "pages", "heading_path", "passage_id"} <= set(quote)
    assert 1 <= len(body["evidence"]) <= 3, "a few quotes that answer, never a dump of the context"
    passage = await client.server.app[SERVICE].passage(quote["passage_id"])
    assert quote["text"] in passage.text, "quoted verbatim from the cited passage"


async def test_an_answer_that_the_documents_do_not_say_is_returned_as_such(tmp_path, embedder):
    """The model's own "the documents do not say" is an outcome of its own; every door's reply
    model must accept it (it once failed validation, and the user got an error instead)."""
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    settings = load_settings(index__dir=tmp_path / "index", stores__conversations_path=tmp_path / "c.sqlite3")
    model = DummyLM([{"answer": "The documents do not say."}], adapter=dspy.JSONAdapter())
    async with (
        open_service(settings, embedder=embedder, lm=model) as service,
        TestClient(TestServer(create_app(service))) as client,
    ):
        response = await client.post("/v1/ask", json={"question": "Who approved the proposal deadline?"})
        assert response.status == 200
        body = await response.json()
    assert body["outcome"] == "not_in_documents"
    assert body["answer"].startswith("The documents do not say.") and len(body["evidence"]) <= 2


async def read_events(response) -> list[tuple[str, dict]]:
    """A server-sent event stream as (event, data) pairs."""
    assert response.status == 200 and response.headers["Content-Type"].startswith("text/event-stream")
    events = []
    for block in (await response.text()).strip().split("\n\n"):
        kind, data = block.split("\n", 1)
        events.append((kind.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


async def stream_one_question(tmp_path, embedder, llm: FakeLLMServer) -> list[tuple[str, dict]]:
    """The events of one question streamed from the sample handbook, answered by ``llm``."""
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    with llm:
        settings = load_settings(
            index__dir=tmp_path / "index",
            stores__conversations_path=tmp_path / "c.sqlite3",
            llm__api_base=llm.url,
        )
        async with (
            open_service(settings, embedder=embedder) as service,
            TestClient(TestServer(create_app(service))) as client,
        ):
            response = await client.post("/v1/ask/stream", json={"question": "When are proposals due?"})
            return await read_events(response)


async def test_stream_sends_status_events_before_the_answer(client):
    response = await client.post("/v1/ask/stream", json={"question": "When are proposals due?"})
    events = await read_events(response)
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "answer" and set(kinds[:-1]) == {"status", "evidence"}
    steps = [data["step"] for kind, data in events if kind == "status"]
    assert steps[:4] == ["received", "understand_skipped", "classify_query", "retrieve"] and "useful" in steps
    evidence = kinds.index("evidence")
    assert events[evidence - 1][1]["step"] == "evidence" and evidence < steps.index("generate") + 2
    assert any("15 April" in q["text"] for q in events[evidence][1]["quotes"]), (
        "the evidence before the answer"
    )
    assert events[-1][1]["citations"]


async def test_the_stream_carries_the_answer_as_tokens_before_the_checks_and_the_answer(tmp_path, embedder):
    """Against an OpenAI-compatible server that streams: the answer's text comes as ``token``
    events while it is written, then the checks, then the final answer (the same text)."""
    llm = FakeLLMServer(delay_s=0.2, token_delay_s=0.001)
    events = await stream_one_question(tmp_path, embedder, llm)
    assert llm.streamed == 1, "only the generate call streams"
    kinds = [kind for kind, _ in events]
    tokens = [data for kind, data in events if kind == "token"]
    assert len(tokens) > 5 and {t["draft"] for t in tokens} == {1, 2}, (
        "the model's draft, then the composed answer"
    )
    steps = [data.get("step") for _, data in events]
    last_draft = max(i for i, (kind, data) in enumerate(events) if kind == "token" and data["draft"] == 1)
    assert steps.index("generate") > last_draft and steps.index("supported") > last_draft
    calls = [data.get("llm_call") for kind, data in events if kind == "status" and data.get("llm_call")]
    assert calls == ["generate"], "one call on the common path, reported once"
    assert kinds[-1] == "answer"
    final = events[-1][1]
    assert final["outcome"] == "answered" and [t["text"] for t in tokens if t["draft"] == 2] == [
        final["answer"]
    ]
    assert "".join(t["text"] for t in tokens if t["draft"] == 1) in final["answer"], "the checked draft leads"


async def test_a_streamed_answers_untraceable_figure_is_dropped_and_never_shown_in_the_answer(
    tmp_path, embedder
):
    """The draft states a figure no document writes: it streams while written, but the answer
    that replaces it drops that sentence (code finds the figure in no cited unit, without
    asking the LLM) and keeps the sentence the document states, with the document quoted."""
    events = await stream_one_question(
        tmp_path, embedder, FakeLLMServer(token_delay_s=0.001, invent_figure=True)
    )
    tokens = [data for kind, data in events if kind == "token"]
    first_draft = "".join(t["text"] for t in tokens if t["draft"] == 1)
    assert "$47,913" in first_draft, "the draft streamed while it was written"
    statuses = [data for kind, data in events if kind == "status"]
    [composed] = [s for s in statuses if s["step"] == "compose"]
    assert [(d["reason"], d["detail"]) for d in composed["dropped"]] == [("figure", ["$47,913"])]
    assert "supported" not in [s.get("llm_call") for s in statuses], "no LLM is asked about such a draft"
    final = events[-1][1]
    assert events[-1][0] == "answer" and final["outcome"] == "answered"
    assert final["verdicts"] == {"supported": "code", "useful": "code"}
    assert "47,913" not in final["answer"] and final["answer"] == tokens[-1]["text"]
    assert final["evidence"] and final["citations"], "the document's words, with their sources"


async def test_bad_requests_get_clear_4xx_errors(client):
    empty = await client.post("/v1/ask", json={"question": "  "})
    assert empty.status == 400 and "empty" in (await empty.json())["error"]
    not_json = await client.post("/v1/ask", data=b"{nope", headers={"Content-Type": "application/json"})
    assert not_json.status == 400 and "not valid JSON" in (await not_json.json())["error"]
    missing = await client.post("/v1/ask", json={"q": "x"})
    assert missing.status == 400 and "question: Field required" in (await missing.json())["error"]
    unknown = await client.post("/v1/search", json={"query": "x", "collections": ["nope"]})
    assert unknown.status == 400 and "unknown collection" in (await unknown.json())["error"]
    long = await client.post("/v1/ask", json={"question": "x" * 100_000})
    assert long.status == 400 and "at most 20000 characters" in (await long.json())["error"]
    huge = await client.post("/v1/ask", json={"question": "x" * 2_000_000})
    assert huge.status == 413


async def test_search_health_and_openapi(client):
    found = await (await client.post("/v1/search", json={"query": "proposal deadline", "k": 2})).json()
    assert len(found["passages"]) == 2 and found["passages"][0]["heading_path"]
    health = await (await client.get("/healthz")).json()
    assert health["status"] == "ok" and health["index_version"] == found["index_version"]
    spec = await (await client.get("/openapi.json")).json()
    routes = {r.resource.canonical for r in client.app.router.routes() if r.resource is not None}
    others = {"/mcp", "/slack/events", "/api/messages", "/", "/admin"} | {f"/static/{n}" for n in ASSETS}
    assert routes - others == set(spec["paths"]) | {"/openapi.json"}, "every API route documented"


async def test_every_reply_matches_the_served_openapi_document(client):
    """The served document is generated from the reply models, and each reply validates against it:
    the document and the behaviour cannot drift (an extra or renamed field fails here)."""
    spec = await (await client.get("/openapi.json")).json()

    def check(path: str, method: str, status: int, body: dict) -> None:
        schema = spec["paths"][path][method]["responses"][str(status)]["content"]["application/json"]
        jsonschema.validate(body, {**schema["schema"], "components": spec["components"]})

    asked = await client.post("/v1/ask", json={"question": "When are proposals due?"})
    answer = await asked.json()
    check("/v1/ask", "post", asked.status, answer)
    searched = await client.post("/v1/search", json={"query": "proposal deadline", "k": 3, "mode": "bm25"})
    check("/v1/search", "post", searched.status, await searched.json())
    judged = await client.post("/v1/feedback", json={"answer_id": answer["answer_id"], "rating": 5})
    check("/v1/feedback", "post", judged.status, await judged.json())
    check("/healthz", "get", 200, await (await client.get("/healthz")).json())
    bad = await client.post("/v1/search", json={"query": "x", "k": True})
    check("/v1/search", "post", bad.status, await bad.json())
    audited = await client.get("/v1/audit", params={"limit": "5"})
    check("/v1/audit", "get", audited.status, await audited.json())
    for query in ({"since": "../../etc"}, {"limit": "0"}, {"limit": "x"}, {"path": "/etc"}):
        refused = await client.get("/v1/audit", params=query)
        assert refused.status == 400, query
        check("/v1/audit", "get", 400, await refused.json())

    drifted = {**answer, "answer_text": answer["answer"]}
    with pytest.raises(jsonschema.ValidationError):
        check("/v1/ask", "post", 200, drifted)
