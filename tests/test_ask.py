"""`DocfinderService.ask` over a real small index, with DummyLM as the language model."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import dspy
import pytest
from dspy.utils import DummyLM

from index_build.builder import ingest
from pipeline.answers import Caller
from pipeline.errors import ConfigurationError, InvalidRequestError
from pipeline.retrieval.search import MAX_SEARCH_K
from programs.agent import LLM_UNAVAILABLE
from server.service import open_service
from server.settings import load_settings
from tests.samples import write_sample_corpus

FIRST = [{"answer": "Proposals are due on 15 April [1]."}]  # one call: the checks are code
FOLLOW_UP = [{"answer": "At most twelve co-investigators [1]."}]


@pytest.fixture
def settings(tmp_path, embedder):
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    return load_settings(
        index__dir=tmp_path / "index", stores__conversations_path=tmp_path / "conversations.sqlite3"
    )


def test_ask_answers_with_citations_and_remembers_the_conversation(settings, embedder):
    model = DummyLM(FIRST + FOLLOW_UP, adapter=dspy.JSONAdapter())
    statuses = []

    async def on_status(event):
        statuses.append(event["step"])

    async def scenario():
        async with open_service(settings, embedder=embedder, lm=model, llm_history=True) as service:
            first = await service.ask("When are proposals due?", on_status=on_status)
            second = await service.ask(
                "And how many co-investigators?", conversation_id=first.conversation_id
            )
            return first, second

    first, second = asyncio.run(scenario())
    assert first.agent.outcome == "answered"
    cited = first.agent.citations[0]
    assert Path(cited.source).name == "observing.md" and cited.heading_path[-1] == "Proposal preparation"
    assert statuses[:4] == ["received", "understand_skipped", "classify_query", "retrieve"]
    assert second.conversation_id == first.conversation_id and second.answer_id != first.answer_id
    condensed = second.agent.trace[0]
    assert condensed["step"] == "condense" and condensed["method"] == "code"
    assert condensed["question"] == "When are proposals due? And how many co-investigators?"
    # The follow-up's answering call saw the earlier question, not the earlier answer.
    answering_prompt = str(model.history[len(FIRST)]["messages"])
    assert "When are proposals due?" in answering_prompt and "15 April [1]" not in answering_prompt
    assert len(model.history) == 2, "one call per question"


DOMAINS = {
    "proposals": {
        "description": "writing and submitting observing proposals: deadlines, investigators, "
        "the Observing Tool",
        "collections": {"handbook": 2.0},
    },
    "instruments": {
        "description": "instrument hardware: the spectrometer, the cryostat, frequency bands",
        "collections": {"handbook": 1.0},
    },
}


def test_a_first_question_is_classified_by_embedding_into_a_weighted_domain_without_an_llm_call(
    settings, embedder
):
    """Domains that weigh collections used to cost every first question an understanding call;
    the nearest domain by embedding needs none, and the search gets that domain's weights."""
    settings = load_settings(
        index__dir=settings.index.dir,
        stores__conversations_path=settings.stores.conversations_path,
        domains=DOMAINS,
    )
    model = DummyLM(FIRST + FIRST, adapter=dspy.JSONAdapter())

    async def scenario():
        async with open_service(settings, embedder=embedder, lm=model) as service:
            due = await service.ask("When are proposals due?")
            cryostat = await service.ask("How often is the cryostat warmed up?")
            return due, cryostat

    due, cryostat = asyncio.run(scenario())
    for answer, domain in ((due, "proposals"), (cryostat, "instruments")):
        classified = next(e for e in answer.agent.trace if e["step"] == "classify_query")
        assert classified["domain"] == domain and classified["method"] == "embedding"
        assert set(classified["similarities"]) == set(DOMAINS)
        assert answer.agent.domain == domain
        assert not any(e.get("llm_call") == "understand" for e in answer.agent.trace)
        assert [e["step"] for e in answer.agent.trace][:3] == [
            "understand_skipped",
            "classify_query",
            "retrieve",
        ]


def test_empty_questions_are_rejected(settings, embedder):
    async def scenario():
        async with open_service(settings, embedder=embedder, lm=DummyLM([])) as service:
            with pytest.raises(InvalidRequestError, match="empty"):
                await service.ask("   ")

    asyncio.run(scenario())


def test_an_unreachable_llm_server_gives_a_clear_message_and_the_sources(settings, embedder):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    down = settings.changed({"llm.api_base": f"http://127.0.0.1:{port}/v1", "llm.timeout_s": 5.0})

    async def scenario():
        async with open_service(down, embedder=embedder) as service:
            return await service.ask("When are proposals due?")

    result = asyncio.run(scenario())
    assert result.agent.outcome == "llm_unavailable" and result.agent.answer == LLM_UNAVAILABLE
    assert Path(result.agent.citations[0].source).name == "observing.md"
    assert "cannot be reached" in result.agent.trace[-1]["error"]


def test_the_llm_call_history_is_not_kept_by_default(settings, embedder):
    """A server must not grow with every prompt it sends (DSPy keeps them all unless told not to)."""
    model = DummyLM(FIRST, adapter=dspy.JSONAdapter())

    async def scenario():
        async with open_service(settings, embedder=embedder, lm=model) as service:
            await service.ask("When are proposals due?")

    asyncio.run(scenario())
    assert model.history == []


class _OtherEmbedder:
    """The real embedder under another model's name, as a server configured with another model is."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name, self.backend, self.dimensions = "another-model", inner.backend, inner.dimensions
        self.max_tokens, self.tokenizer = inner.max_tokens, inner.tokenizer

    def embed(self, texts):
        return self.inner.embed(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)

    def forget_queries(self):
        self.inner.forget_queries()


def test_a_server_refuses_at_start_an_index_another_embedder_built(settings, embedder):
    async def start() -> None:
        async with open_service(settings, embedder=_OtherEmbedder(embedder)):
            pass

    with pytest.raises(ConfigurationError, match=r"another-model.*docfinder ingest"):
        asyncio.run(start())


def test_a_remote_caller_gets_at_most_max_search_k_passages_and_the_local_one_more(settings, embedder):
    async def scenario() -> int:
        async with open_service(settings, embedder=embedder) as service:
            with pytest.raises(InvalidRequestError, match="k must be between 1 and 100"):
                await service.search("proposal deadline", k=MAX_SEARCH_K + 1, caller=Caller("api-key-1"))
            return len((await service.search("proposal deadline", k=MAX_SEARCH_K + 1)).hits)

    assert asyncio.run(scenario()) > 0
