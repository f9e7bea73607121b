"""/metrics in Prometheus format, and one request id through the response, the trace and JSON logs."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.parser import text_string_to_metric_families

from evaluation.doubles.fake_llm import FakeLLMServer
from index_build.builder import ingest
from server.doors.launch import http_app
from server.runtime.logs import JsonFormatter
from server.service import open_service
from server.settings import load_settings
from tests.samples import write_sample_corpus


@pytest.fixture
async def client(tmp_path, embedder):
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    with FakeLLMServer() as llm:
        settings = load_settings(index__dir=tmp_path / "index", llm__api_base=llm.url)
        async with (
            open_service(settings, embedder=embedder) as service,
            TestClient(TestServer(http_app(service, settings))) as test_client,
        ):
            yield test_client


def samples(text: str) -> dict[tuple[str, tuple], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def test_metrics_count_requests_steps_llm_calls_tokens_and_feedback(client):
    answer = await (await client.post("/v1/ask", json={"question": "When are proposals due?"})).json()
    await client.post(
        "/v1/feedback", json={"answer_id": answer["answer_id"], "rating": 2, "label": "Confusing"}
    )
    await client.post("/v1/ask", json={"question": ""})  # a 400
    response = await client.get("/metrics")
    assert response.status == 200 and response.headers["Content-Type"].startswith("text/plain")
    metrics = samples(await response.text())
    assert metrics[("docfinder_answers_total", (("outcome", "answered"),))] == 1
    assert metrics[("docfinder_http_requests_total", (("route", "/v1/ask"), ("status", "200")))] == 1
    assert metrics[("docfinder_http_requests_total", (("route", "/v1/ask"), ("status", "400")))] == 1
    assert metrics[("docfinder_llm_calls_total", (("call", "generate"),))] == 1, "one call a question"
    assert not any(
        name == "docfinder_llm_calls_total" and labels != (("call", "generate"),) for name, labels in metrics
    )
    assert metrics[("docfinder_llm_tokens_total", (("kind", "prompt"),))] > 100
    assert metrics[("docfinder_llm_tokens_total", (("kind", "completion"),))] > 0
    assert metrics[("docfinder_agent_step_seconds_count", (("step", "generate"),))] == 1
    assert metrics[("docfinder_feedback_total", (("label", "Confusing"), ("platform", "http")))] == 1
    assert ("docfinder_http_request_seconds_bucket", (("le", "0.5"), ("route", "/v1/ask"))) in metrics


async def test_one_request_id_runs_through_response_trace_status_events_and_logs(client):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("server.core.ask")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        response = await client.post(
            "/v1/ask", json={"question": "When are proposals due?"}, headers={"X-Request-ID": "req-42"}
        )
        body = await response.json()
        streamed = await client.post(
            "/v1/ask/stream", json={"question": "When are proposals due?"}, headers={"X-Request-ID": "req-43"}
        )
        blocks = (await streamed.text()).strip().split("\n\n")
        # Status events and the answer carry the request id; token events are the answer's text.
        events = [json.loads(b.split("data: ", 1)[1]) for b in blocks if not b.startswith("event: token")]
    finally:
        logger.removeHandler(handler)
    assert response.headers["X-Request-ID"] == "req-42" and body["request_id"] == "req-42"
    assert body["trace"] and all(e["request_id"] == "req-42" for e in body["trace"])
    assert body["index_version"]
    assert streamed.headers["X-Request-ID"] == "req-43"
    assert all(e["request_id"] == "req-43" for e in events)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    answered = [line for line in lines if line["message"] == "answered"]
    assert {line["request_id"] for line in answered} == {"req-42", "req-43"}
    assert (
        answered[0]["outcome"] == "answered" and answered[0]["level"] == "info" and "seconds" in answered[0]
    )


async def test_beyond_the_admission_limit_questions_queue_and_say_so(tmp_path, embedder):
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    with FakeLLMServer(delay_s=0.1) as llm:
        settings = load_settings(
            index__dir=tmp_path / "index", llm__api_base=llm.url, serving__max_concurrent_asks=1
        )
        async with open_service(settings, embedder=embedder) as service:
            steps: dict[int, list[str]] = {0: [], 1: []}

            async def ask(n: int):
                async def on_status(event):
                    steps[n].append(event["step"])

                return await service.ask("When are proposals due?", on_status=on_status)

            results = await asyncio.gather(ask(0), ask(1))
    assert [r.agent.outcome for r in results] == ["answered", "answered"]
    assert ["queued" in s for s in steps.values()].count(True) == 1
    queued = next(s for s in steps.values() if "queued" in s)
    # Round three of hardening, 7: a question waiting for the model shows its evidence first and
    # says the model is busy; its LLM timeout starts when its call does.
    assert queued.index("evidence") < queued.index("queued") < queued.index("generate")


def test_a_step_outside_the_enum_never_becomes_a_metric_label():
    from server.runtime.metrics import Metrics

    metrics = Metrics()
    metrics.observe_answer("answered", [{"step": "retrieve", "t": 0.1}, {"step": "made-up-label", "t": 0.2}])
    rendered = metrics.render().decode()
    assert 'step="retrieve"' in rendered and 'step="other"' in rendered and "made-up-label" not in rendered
