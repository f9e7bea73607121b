"""The one service object every front door calls (CLI, HTTP, MCP, bots).

A thin facade: :func:`server.core.parts.compose` builds its parts from the settings, each with
one job (the live index, access rules, search, ask, feedback, the LLM, the stores), and the
service hands each call to the part that does it. Entering it loads and verifies the index
(fail at start, not on the first request); each search checks, with one ``readlink``, whether
a newer version went live and swaps to it, so rebuilding the index never needs a restart,
while one question's searches all stay on the version it started with. CPU-bound work and
database calls run in worker threads, off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from pipeline.protocols import Embedder
from pipeline.retrieval.search import Reranker
from server.core import status
from server.core.parts import compose
from server.runtime.supervised_server import SupervisedServer
from server.settings import Settings
from server.stores.conversations import ConversationStore
from server.stores.feedback import FeedbackStore

if TYPE_CHECKING:
    from programs.agent import AnswerAgent
    from programs.saved import ProgramInfo


@asynccontextmanager
async def open_service(
    settings: Settings,
    *,
    start_llm: bool = False,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    lm: Any = None,
    llm_server: SupervisedServer | None = None,
    llm_history: bool = False,
) -> AsyncIterator[DocfinderService]:
    """The service, built from ``settings`` and entered: the one way every front door gets it.

    Everything the settings name is built and checked here, so that a misconfiguration fails
    at start with the setting's name, not on the first request: the embedder and reranker
    load, the live index opens (and must have been built by this embedder), the conversation
    and feedback databases open. ``start_llm`` (servers, ``ask``) also starts the embedded
    model or checks that the configured LLM server answers. ``embedder``, ``reranker`` and
    ``lm`` replace the configured ones (tests, benchmarks that share one model).
    """
    service = DocfinderService(
        settings, embedder=embedder, reranker=reranker, lm=lm, llm_server=llm_server, llm_history=llm_history
    )
    async with service:
        if start_llm:
            await service.start_llm()
        yield service


class DocfinderService:
    """Search, ask and feedback over one index directory; built and entered by :func:`open_service`."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        lm: Any = None,
        llm_server: SupervisedServer | None = None,
        llm_history: bool = False,
    ) -> None:
        self.settings = settings
        self.parts = compose(
            settings,
            embedder=embedder,
            reranker=reranker,
            lm=lm,
            llm_server=llm_server,
            llm_history=llm_history,
        )
        parts = self.parts
        self.metrics = parts.metrics
        self.retrieval = parts.searcher.retrieval
        # Each call goes to the part whose job it is (server/core/).
        self.ask = parts.asker.ask  # answer a question with citations, in its conversation
        self.run_candidate = parts.asker.run_candidate  # a program on a question, unrecorded
        self.search = parts.searcher.search  # rank passages; with a context config, select them too
        self.assemble_context = parts.searcher.assemble_context
        self.passages_of = parts.searcher.passages_of
        self.passage = parts.searcher.passage
        self.document = parts.searcher.document
        self.list_collections = parts.searcher.list_collections
        self.check_question = parts.access.check_question
        self.public_source = parts.access.public_source
        self.record_feedback = parts.feedback.record_feedback
        self.remember_message = parts.feedback.remember_message
        self.answer_for_message = parts.feedback.answer_for_message
        self.retract_feedback = parts.feedback.retract_feedback
        self.audit = parts.auditor.audit  # contradictions, stale passages, drift, unanswered demand
        self.feedback_summary = parts.feedback.summary  # the admin page's charts
        self.feedback_records = parts.feedback.records  # the admin page's export
        self.conversation_list = parts.conversations.conversations  # a caller's own, the latest first
        self.conversation_turns = parts.conversations.conversation
        self.start_llm = parts.llm.start  # make the LLM ready now, not on the first question
        self.language_model = parts.llm.get
        self.dspy_settings = parts.llm.dspy_settings

    async def __aenter__(self) -> DocfinderService:
        def load() -> None:
            stores = self.parts.stores
            _ = stores.conversations, stores.feedback  # open the stores first: a bad database fails fast
            self.parts.index.current()
            self.embedder.embed_query("warm-up")  # load the model now, not on the first request
            if self.settings.agent.program_path is not None:
                _ = self.agent  # a compiled program that does not load fails at start

        await asyncio.to_thread(load)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.parts.searcher.pool.close()
        self.parts.index.close()
        await self.parts.llm.aclose()
        self.parts.stores.close()

    # The parts, for the doors and the evaluation wing.

    @property
    def embedder(self) -> Embedder:
        return self.parts.embedder()

    @property
    def conversations(self) -> ConversationStore:
        return self.parts.stores.conversations

    @property
    def feedback(self) -> FeedbackStore:
        return self.parts.stores.feedback

    @property
    def agent(self) -> AnswerAgent:
        """The DSPy answering agent, built on first use (importing DSPy takes a while)."""
        return self.parts.asker.agent

    @property
    def program(self) -> ProgramInfo:
        return self.parts.asker.program

    @property
    def llm_server(self) -> SupervisedServer | None:
        """The embedded model's server process once started (None for a configured LLM server)."""
        return self.parts.llm.server

    # Status (server.core.status).

    async def health(self) -> dict[str, Any]:
        parts = self.parts
        return await status.health(parts.index, parts.llm, parts.searcher.pool, parts.asker.program)

    async def index_info(self, documents: bool = False) -> dict[str, Any]:
        return await status.index_info(self.parts.index, self.parts.asker.program, documents)
