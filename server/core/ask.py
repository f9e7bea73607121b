"""Ask: a question answered with citations by the DSPy agent, in its conversation.

Three steps: admit (check the question and the caller's rights, open the conversation, pin the
index version), run the agent (at most ``serving.max_concurrent_asks`` at once; a question whose
embedded model crashed under it is answered again once the model is back), record the answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from index_build.snapshot import IndexSnapshot
from pipeline.answers import LOCAL_CALLER, AgentAnswer, AskResult, Caller, StatusSink, TokenSink
from pipeline.retrieval.context import Retrieved
from pipeline.retrieval.documents import DocumentScope
from pipeline.steps import Step
from programs.saved import ProgramInfo, load_program
from server.core.access import Access, require_scope
from server.core.live_index import LiveIndex
from server.core.search import Searcher
from server.models.language_model import LanguageModel
from server.runtime.logs import current_request_id
from server.runtime.metrics import Metrics
from server.runtime.supervised_server import CRASH_LOOP_CRASHES
from server.settings import Settings
from server.stores.opening import Stores

if TYPE_CHECKING:
    from programs.agent import AnswerAgent, Retriever

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Admitted:
    """A question let in: checked, in its conversation, on the index version it will read."""

    question: str
    conversation_id: str
    collections: list[str] | None
    history: list[tuple[str, str]]
    snapshot: IndexSnapshot


class Asker:
    """Questions answered by the agent over the service's search, LLM and stores."""

    def __init__(
        self,
        settings: Settings,
        index: LiveIndex,
        searcher: Searcher,
        llm: LanguageModel,
        stores: Stores,
        access: Access,
        metrics: Metrics,
        *,
        llm_history: bool = False,
    ) -> None:
        self.settings = settings
        self.index = index
        self.searcher = searcher
        self.llm = llm
        self.stores = stores
        self.access = access
        self.metrics = metrics
        # DSPy keeps every prompt and reply, and every prediction's inputs, unless told not to:
        # a server would grow with every question. ``llm_history`` keeps them (debugging; tests
        # that read the prompts).
        self.llm_history = llm_history
        self._slots = asyncio.Semaphore(settings.concurrent_asks())
        self._agent: AnswerAgent | None = None
        self.program = ProgramInfo()  # the answering program; a compiled one is loaded with the agent

    @property
    def agent(self) -> AnswerAgent:
        """The DSPy answering agent, built on first use (importing DSPy takes a while)."""
        if self._agent is None:
            from pipeline.answering.answer_rules import rule_packs
            from programs.agent import AnswerAgent

            settings = self.settings
            classify_by_llm = settings.agent.classify == "llm" and settings.agent.understand == "llm"
            self._agent = AnswerAgent(
                {name: domain.description for name, domain in settings.domains.items()},
                glossary=self.searcher.glossary.as_prompt() if self.searcher.glossary else "",
                settings=settings.agent,
                max_passages=settings.retrieval.max_passages,
                llm_timeout_s=settings.llm.timeout_s,
                url_prefixes=settings.index.source_url_prefixes,
                classify=None if classify_by_llm else self.searcher.classify,
                rules=rule_packs(settings.agent.rule_packs),
            )
            if settings.agent.program_path is not None:
                self.program = load_program(self._agent, settings.agent.program_path)
        return self._agent

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
        """Answer ``question`` with citations through the agent; the exchange joins the conversation.

        ``on_status`` hears each step as it happens, ``on_token`` the answer's text as the LLM
        writes it (a later draft, after a failed check, replaces it; the result is final).

        ``conversation_id`` must be one ``caller`` started (else :class:`NotFoundError`), and
        ``collections`` within what ``caller`` may read (else :class:`ForbiddenError`).
        Three steps: admit (check, open the conversation, pin the index version), run the
        agent, record the answer.
        """
        started = time.perf_counter()
        request_id = current_request_id() or uuid.uuid4().hex[:16]

        async def status(event: dict[str, Any]) -> None:
            event["request_id"] = request_id
            if on_status is not None:
                # A remote caller sees no path of the server's disk, in any step either.
                await on_status(event if caller == LOCAL_CALLER else self.access.public_event(event))

        admitted = await self._admit(question, conversation_id, collections, caller, status)
        answer = await self._run(admitted, status, on_token, started)
        result = AskResult(
            uuid.uuid4().hex,
            admitted.conversation_id,
            answer,
            tuple(admitted.collections or admitted.snapshot.collections),
            index_version=admitted.snapshot.version_id,
            request_id=request_id,
        )
        await self._record(admitted.question, result, time.perf_counter() - started)
        return result if caller == LOCAL_CALLER else self.access.public_result(result)

    async def _admit(
        self,
        question: str,
        conversation_id: str | None,
        collections: list[str] | None,
        caller: Caller,
        status: StatusSink,
    ) -> _Admitted:
        """Check the question and the caller's rights, open the conversation, pin the live version."""
        require_scope(caller, "ask")
        question = self.access.check_question(question)
        collections = self.access.allowed_collections(collections, caller)
        conversation_id = await asyncio.to_thread(
            self.stores.conversations.open, conversation_id, caller.owner, caller.names_conversations
        )
        # Once admitted, at once, so that every front door can show progress immediately (a
        # streaming door answers a refusal before this with the request's own status).
        await status({"step": Step.RECEIVED, "t": 0.0, "question": question})
        history = await asyncio.to_thread(
            self.stores.conversations.history, conversation_id, self.settings.agent.history_turns
        )
        snapshot = await asyncio.to_thread(self.index.current)
        return _Admitted(question, conversation_id, collections, history, snapshot)

    async def _run(
        self,
        admitted: _Admitted,
        status: StatusSink | None,
        on_token: TokenSink | None,
        started: float,
        agent: AnswerAgent | None = None,
        trace: list[Any] | None = None,
    ) -> AgentAnswer:
        """``agent`` (the live program by default) on an admitted question; at most
        ``serving.max_concurrent_asks`` run at once. ``trace`` collects DSPy's trace of the predictions
        (an optimiser's bootstrap reads it); by default none is kept."""
        snapshot = admitted.snapshot
        sparse_available = any(len(c.sparse.rows) for c in snapshot.collections.values())
        retrieve = self._retriever(snapshot, admitted.collections)

        import dspy

        await self.llm.get()
        # DSPy also keeps a trace of every prediction (10,000 by default) for its optimisers.
        if trace is None and self.llm_history:
            trace = []
        attempt = 1
        while True:
            lm = await self.llm.get()  # waits while a crashed server restarts
            server = self.llm.server
            crashes = len(server.crashes) if server is not None else 0
            with dspy.context(
                lm=lm, adapter=self.llm.adapter, disable_history=not self.llm_history, trace=trace
            ):
                # Admission control is the LLM's: beyond serving.max_concurrent_asks questions its
                # calls wait (the evidence is found and shown meanwhile), so that the LLM timeout
                # measures the LLM, not a queue inside docfinder.
                answer = await (agent or self.agent).acall(
                    admitted.question,
                    retrieve,
                    history=admitted.history,
                    on_status=status,
                    sparse_available=sparse_available,
                    on_token=on_token,
                    slot=self._slots,
                )
            self.llm.observe(answer)
            if answer.outcome != "llm_unavailable" or server is None:
                return answer
            # The embedded model's server died under this question: answer it again once it is back.
            crash = await server.next_crash(seen=crashes, timeout_s=2)
            if crash is None:
                return answer  # unavailable for another reason (a timeout): nothing to wait for
            if attempt == CRASH_LOOP_CRASHES:
                await server.ready()  # given up by now, most likely: that error says why
                return answer
            attempt += 1
            if status is not None:
                await status(
                    {
                        "step": Step.LLM_RESTARTED,
                        "t": round(time.perf_counter() - started, 3),
                        "error": f"the embedded model server crashed ({crash.describe()}); "
                        "restarting it and answering again",
                    }
                )

    def _retriever(self, snapshot: IndexSnapshot, collections: list[str] | None) -> Retriever:
        """The agent's retrieval for one question: hybrid search with the agent's context, on one
        pinned index version, keeping the documents the question named for rewritten queries."""
        context = self.settings.context  # the one budget: what the answering LLM reads
        question_scope: list[DocumentScope] = []

        async def retrieve(queries: Sequence[str], domain: str | None, mode: str) -> Retrieved:
            result = await self.searcher.search(
                queries[0],
                variants=list(queries[1:]),
                mode=mode,
                collections=collections,
                domain=domain,
                context=context if mode != "sparse" else None,
                pinned=snapshot,  # an index swap mid-question must not mix two versions in one answer
                # A rewritten query that names no document keeps the documents the question named.
                scope=question_scope[0] if question_scope else None,
                admitted=True,
            )
            if not question_scope and result.scope.documents is not None:
                question_scope.append(result.scope)
            return self.searcher.passages_of(result, snapshot)

        return retrieve

    async def run_candidate(
        self, agent: AnswerAgent, question: str, trace: list[Any] | None = None
    ) -> AgentAnswer:
        """``agent`` (the live program or a candidate) on ``question`` over the live index, outside
        any conversation and unrecorded: how optimisation compares programs."""
        question = self.access.check_question(question)
        snapshot = await asyncio.to_thread(self.index.current)
        admitted = _Admitted(question, "", None, [], snapshot)
        return await self._run(admitted, None, None, time.perf_counter(), agent=agent, trace=trace)

    async def _record(self, question: str, result: AskResult, seconds: float) -> None:
        """Keep the exchange in its conversation (committed), count it and log it."""
        await asyncio.to_thread(self.stores.conversations.record, question, result)
        self.metrics.observe_answer(result.agent.outcome, result.agent.trace)
        log.info(
            "answered",
            extra={
                "request_id": result.request_id,
                "answer_id": result.answer_id,
                "outcome": result.agent.outcome,
                "seconds": round(seconds, 3),
                "index_version": result.index_version,
            },
        )
