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

from index_build.snapshot import IndexSnapshot
from index_build.version import FileRecord
from pipeline.answers import (
    LOCAL_CALLER,
    AgentAnswer,
    AskResult,
    Caller,
    Feedback,
    FeedbackRecord,
    Platform,
    StatusSink,
    TokenSink,
)
from pipeline.context import Context, ContextConfig, Retrieved
from pipeline.documents import DocumentScope
from pipeline.protocols import Embedder
from pipeline.retrieval import Reranker
from pipeline.types import Chunk
from server.core import status
from server.core.parts import compose
from server.core.search import SearchResult
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
        self.metrics = self.parts.metrics
        self.retrieval = self.parts.searcher.retrieval

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

    async def start_llm(self) -> None:
        """Make the LLM ready now, not on the first question (see :meth:`LanguageModel.start`)."""
        await self.parts.llm.start()

    async def language_model(self) -> Any:
        return await self.parts.llm.get()

    async def dspy_settings(self) -> dict[str, Any]:
        return await self.parts.llm.dspy_settings()

    # Asking (server.core.ask).

    async def ask(
        self,
        question: str,
        *,
        conversation_id: str | None = None,
        collections: list[str] | None = None,
        on_status: StatusSink | None = None,
        on_token: TokenSink | None = None,
        caller: Caller = LOCAL_CALLER,
    ) -> AskResult:
        """Answer ``question`` with citations; see :meth:`server.core.ask.Asker.ask`."""
        return await self.parts.asker.ask(
            question,
            conversation_id=conversation_id,
            collections=collections,
            on_status=on_status,
            on_token=on_token,
            caller=caller,
        )

    async def run_candidate(
        self, agent: AnswerAgent, question: str, trace: list[Any] | None = None
    ) -> AgentAnswer:
        return await self.parts.asker.run_candidate(agent, question, trace)

    # Searching (server.core.search).

    async def search(
        self,
        query: str,
        *,
        k: int | None = None,
        mode: str = "hybrid",
        collections: list[str] | None = None,
        domain: str | None = None,
        variants: list[str] | None = None,
        context: ContextConfig | None = None,
        pinned: IndexSnapshot | None = None,
        scoped: bool = True,
        scope: DocumentScope | None = None,
        caller: Caller = LOCAL_CALLER,
        admitted: bool = False,
    ) -> SearchResult:
        """Rank passages for ``query``; see :meth:`server.core.search.Searcher.search`."""
        return await self.parts.searcher.search(
            query,
            k=k,
            mode=mode,
            collections=collections,
            domain=domain,
            variants=variants,
            context=context,
            pinned=pinned,
            scoped=scoped,
            scope=scope,
            caller=caller,
            admitted=admitted,
        )

    async def assemble_context(self, result: SearchResult, context: ContextConfig) -> Context:
        return await self.parts.searcher.assemble_context(result, context)

    def passages_of(self, result: SearchResult, snapshot: IndexSnapshot) -> Retrieved:
        return self.parts.searcher.passages_of(result, snapshot)

    async def passage(self, passage_id: str, caller: Caller = LOCAL_CALLER) -> Chunk:
        return await self.parts.searcher.passage(passage_id, caller)

    async def document(
        self, doc_id: str, page: int | None = None, caller: Caller = LOCAL_CALLER
    ) -> tuple[str, FileRecord, list[Chunk]]:
        return await self.parts.searcher.document(doc_id, page, caller)

    async def list_collections(self, caller: Caller = LOCAL_CALLER) -> tuple[str, list[dict[str, Any]]]:
        return await self.parts.searcher.list_collections(caller)

    # Access (server.core.access).

    def check_question(self, question: str) -> str:
        return self.parts.access.check_question(question)

    def public_source(self, source: str) -> str:
        return self.parts.access.public_source(source)

    # Feedback (server.core.feedback).

    async def record_feedback(self, feedback: Feedback, caller: Caller | None = None) -> FeedbackRecord:
        return await self.parts.feedback.record_feedback(feedback, caller)

    async def remember_message(self, platform: Platform, message_ref: str, answer_id: str) -> None:
        await self.parts.feedback.remember_message(platform, message_ref, answer_id)

    async def answer_for_message(self, platform: Platform, message_ref: str) -> str:
        return await self.parts.feedback.answer_for_message(platform, message_ref)

    async def retract_feedback(self, answer_id: str, platform: Platform, user: str, reaction: str) -> int:
        return await self.parts.feedback.retract_feedback(answer_id, platform, user, reaction)

    # Status (server.core.status).

    async def health(self) -> dict[str, Any]:
        parts = self.parts
        return await status.health(parts.index, parts.llm, parts.searcher.pool, parts.asker.program)

    async def index_info(self, documents: bool = False) -> dict[str, Any]:
        return await status.index_info(self.parts.index, self.parts.asker.program, documents)
