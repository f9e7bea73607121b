"""The one service object every front door calls (CLI, HTTP, MCP, bots).

It owns the settings, the embedder, the live index snapshot, the LLM, the conversation and
feedback stores and the metrics. Entering it loads and verifies the index (fail at start,
not on the first request); each search checks, with one ``readlink``, whether a newer
version went live and swaps to it, so rebuilding the index never needs a restart, while one
question's searches all stay on the version it started with. CPU-bound work and database
calls run in worker threads, off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from index_build.builder import (
    Enricher,
    IngestOptions,
    IngestProgress,
    IngestReport,
    NoProgress,
    built_by,
    embedder_manifest,
    ingest,
)
from index_build.chunking import ChunkingOptions
from index_build.layout import live_version_id
from index_build.limits import IngestLimits, limit_setting
from index_build.snapshot import IndexSnapshot, open_live
from index_build.version import Bm25Params, FileRecord
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
    citation_link,
)
from pipeline.context import Context, ContextConfig, Retrieved, build_context, whole_passages
from pipeline.documents import DocumentScope, resolve_scope
from pipeline.errors import (
    ConfigurationError,
    DocfinderError,
    ForbiddenError,
    InvalidRequestError,
    NotFoundError,
    UnknownCollectionError,
)
from pipeline.evidence import find_evidence
from pipeline.protocols import Embedder
from pipeline.retrieval import MAX_SEARCH_K, SEARCH_MODES, Reranker, SearchRequest, retrieve
from pipeline.steps import Step
from pipeline.types import Chunk, SearchHit
from pipeline.wording import without_invisible
from programs.saved import ProgramInfo, load_program
from server.models.factories import (
    context_config,
    evidence_config,
    make_embedder,
    make_glossary,
    make_reranker,
    retrieval_config,
)
from server.models.llm import LLMProblem, make_adapter, open_language_model, open_lm, probe_llm_server
from server.models.llm_health import PROBE_TIMEOUT_S, LLMHealth
from server.models.supervised_server import CRASH_LOOP_CRASHES, SupervisedServer
from server.runtime.admission import WorkPool
from server.runtime.logs import current_request_id
from server.runtime.metrics import Metrics
from server.settings import Settings
from server.stores.conversations import ConversationStore
from server.stores.database import Database, open_database
from server.stores.feedback import FeedbackStore, validate_feedback

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


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Hits for one query, the index version that produced them, and the retrieval trace.

    ``scope`` holds the documents the query names (see :mod:`pipeline.documents`); ``queries``
    the query and its variants, as searched.
    """

    query: str
    mode: str
    version: str
    hits: list[SearchHit]
    trace: list[dict[str, Any]]
    context: Context | None = None
    scope: DocumentScope = field(default_factory=DocumentScope)
    queries: tuple[str, ...] = ()


def require_scope(caller: Caller, scope: str) -> None:
    """:class:`ForbiddenError` unless ``caller`` may take the action ``scope``."""
    if not caller.may(scope):
        given = ", ".join(sorted(caller.scopes or ())) or "none"
        raise ForbiddenError(f"this API key lacks the {scope!r} scope (it has: {given})")


def open_configured_database(settings: Settings, sqlite_path: Path) -> Database:
    """The database the settings name (PostgreSQL with ``database_url``, else the SQLite file
    ``sqlite_path``); an error says which setting or file to fix."""
    url = settings.database_url.get_secret_value() or None
    try:
        return open_database(url, sqlite_path, settings.database_busy_timeout_s)
    except DocfinderError as exc:
        setting = "database_url (DOCFINDER_DATABASE_URL)" if url else f"the database file {sqlite_path}"
        raise type(exc)(f"{setting}: {exc}") from exc


@contextmanager
def open_feedback_store(settings: Settings) -> Iterator[FeedbackStore]:
    """The feedback store alone, for reports and exports (no index or model needed)."""
    database = open_configured_database(settings, settings.feedback_path)
    try:
        yield FeedbackStore(database, settings.pseudonym_key.get_secret_value())
    finally:
        database.close()


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
    """Search, ask and ingest over one index directory; built and entered by :func:`open_service`."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        lm: Any = None,
        llm_server: SupervisedServer | None = None,
        llm_history: bool = False,
    ) -> None:
        # DSPy keeps every prompt and reply, and every prediction's inputs, unless told not to:
        # a server would grow with every question. ``llm_history`` keeps them (debugging; tests
        # that read the prompts).
        self.llm_history = llm_history
        self.settings = settings
        self._embedder = embedder
        self.reranker = reranker if reranker is not None else make_reranker(settings)
        self.glossary = make_glossary(settings)
        self.retrieval = retrieval_config(settings, reranking=self.reranker is not None)
        self._snapshot: IndexSnapshot | None = None
        self._reload_lock = threading.Lock()
        self._lm = lm
        self._llm_server = llm_server  # the embedded model's process, restarted when it crashes
        self._adapter: Any = None  # DSPy adapter matching the LLM server, built with the LLM
        self._lm_lock = asyncio.Lock()
        self._ask_slots = asyncio.Semaphore(settings.concurrent_asks())
        self._resources = AsyncExitStack()  # what the service started (the embedded LLM server)
        self._conversations: ConversationStore | None = None
        self._feedback: FeedbackStore | None = None
        self._databases: list[Database] = []
        self.metrics = Metrics()
        self._store_lock = threading.Lock()
        self._agent: AnswerAgent | None = None
        self._searches = WorkPool(settings.max_concurrent_searches, settings.search_queue, "search")
        self.llm_health = LLMHealth(self._probe_llm)  # a server LLM's; the embedded one reports its own
        self.program = ProgramInfo()  # the answering program; a compiled one is loaded with the agent

    async def __aenter__(self) -> DocfinderService:
        def load() -> None:
            _ = self.conversations, self.feedback  # open the stores first: a bad database fails fast
            self._current_snapshot()
            self.embedder.embed_query("warm-up")  # load the model now, not on the first request
            if self.settings.program_path is not None:
                _ = self.agent  # a compiled program that does not load fails at start

        await asyncio.to_thread(load)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._searches.close()
        self._snapshot = None
        await self._resources.aclose()
        self._conversations = self._feedback = None
        for database in self._databases:
            database.close()
        self._databases.clear()

    async def start_llm(self) -> None:
        """Make the LLM ready now rather than on the first question, and say so when it is not.

        The embedded model is started (a broken model file fails here). A configured server
        is asked for its models; when it does not answer, the service still starts, since
        search works without it, and the log names the URL, once, at start.
        """
        base = self.settings.llm_api_base
        if base is None:
            await self.language_model()
            return
        problem = await probe_llm_server(base, self.settings.llm_api_key.get_secret_value())
        self.llm_health.observe(problem)
        if problem is not None:
            log.error(
                "the LLM server at %s does not answer (%s): questions get 'LLM unavailable' until it does "
                "(setting llm_api_base)",
                base,
                problem.detail,
            )

    async def _probe_llm(self) -> LLMProblem | None:
        base = self.settings.llm_api_base
        assert base is not None, "only a server LLM is probed"
        return await probe_llm_server(base, self.settings.llm_api_key.get_secret_value(), PROBE_TIMEOUT_S)

    async def language_model(self) -> Any:
        """The LLM: the configured server, or the embedded llama.cpp server started on first use."""
        async with self._lm_lock:
            if self._lm is None:
                self._lm, self._llm_server = await self._resources.enter_async_context(
                    open_language_model(self.settings)
                )
            if self._adapter is None:
                self._adapter = make_adapter(self.settings)
        if self._llm_server is not None:
            await self._llm_server.ready()  # after a crash: wait for the restart (or say it cannot run)
        return self._lm

    @property
    def llm_server(self) -> SupervisedServer | None:
        """The embedded model's server process once started (None for a configured LLM server)."""
        return self._llm_server

    @property
    def agent(self) -> AnswerAgent:
        """The DSPy answering agent, built on first use (importing DSPy takes a while)."""
        if self._agent is None:
            from programs.agent import AgentLimits, AnswerAgent

            settings = self.settings
            threshold = settings.agent_grade_threshold
            self._agent = AnswerAgent(
                {name: domain.description for name, domain in settings.domains.items()},
                glossary=self.glossary.as_prompt() if self.glossary else "",
                limits=AgentLimits(
                    max_rewrites=settings.agent_max_rewrites,
                    figure_check=settings.agent_figure_check,
                    sparse_tokens=settings.agent_sparse_tokens,
                    grade_threshold=threshold if threshold is not None else float("-inf"),
                    max_passages=settings.max_passages,
                    llm_timeout_s=settings.llm_timeout_s,
                    # llama.cpp on a CPU answers one call at a time; a server LLM (vLLM) batches them.
                    concurrent_checks=settings.llm_api_base is not None,
                ),
                url_prefixes=settings.source_url_prefixes,
                understand_first_turn=settings.agent_understand == "always"
                or any(domain.collections for domain in settings.domains.values()),
            )
            if settings.program_path is not None:
                self.program = load_program(self._agent, settings.program_path)
        return self._agent

    @property
    def conversations(self) -> ConversationStore:
        """Conversation history and answers given (SQLite file, or PostgreSQL with ``database_url``)."""
        with self._store_lock:
            if self._conversations is None:
                self._conversations = ConversationStore(self._database(self.settings.conversations_path))
            return self._conversations

    @property
    def feedback(self) -> FeedbackStore:
        """Feedback on answers (SQLite file, or PostgreSQL with ``database_url``)."""
        with self._store_lock:
            if self._feedback is None:
                key = self.settings.pseudonym_key.get_secret_value()
                self._feedback = FeedbackStore(self._database(self.settings.feedback_path), key)
            return self._feedback

    def _database(self, sqlite_path: Path) -> Database:
        url = self.settings.database_url.get_secret_value() or None
        if url is not None and self._databases:  # one PostgreSQL pool serves both stores
            return self._databases[0]
        database = open_configured_database(self.settings, sqlite_path)
        self._databases.append(database)
        return database

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
                await on_status(event)

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
        return result if caller == LOCAL_CALLER else self.public_result(result)

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
        question = self.check_question(question)
        collections = self.allowed_collections(collections, caller)
        # At once, so that every front door can show progress immediately.
        await status({"step": Step.RECEIVED, "t": 0.0, "question": question})
        conversation_id = await asyncio.to_thread(
            self.conversations.open, conversation_id, caller.owner, caller.names_conversations
        )
        history = await asyncio.to_thread(
            self.conversations.history, conversation_id, self.settings.history_turns
        )
        snapshot = await asyncio.to_thread(self._current_snapshot)
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
        ``max_concurrent_asks`` run at once. ``trace`` collects DSPy's trace of the predictions
        (an optimiser's bootstrap reads it); by default none is kept."""
        snapshot = admitted.snapshot
        sparse_available = any(len(c.sparse.rows) for c in snapshot.collections.values())
        retrieve = self._retriever(snapshot, admitted.collections)

        import dspy

        await self.language_model()
        if self._ask_slots.locked() and status is not None:
            await status({"step": Step.QUEUED, "t": round(time.perf_counter() - started, 3)})
        # Admission control: beyond this many questions at once, the rest wait here, so that the
        # LLM timeout measures the LLM, not a queue inside docfinder.
        async with self._ask_slots:
            # DSPy also keeps a trace of every prediction (10,000 by default) for its optimisers.
            if trace is None and self.llm_history:
                trace = []
            attempt = 1
            while True:
                lm = await self.language_model()  # waits while a crashed server restarts
                server = self._llm_server
                crashes = len(server.crashes) if server is not None else 0
                with dspy.context(
                    lm=lm, adapter=self._adapter, disable_history=not self.llm_history, trace=trace
                ):
                    answer = await (agent or self.agent).acall(
                        admitted.question,
                        retrieve,
                        history=admitted.history,
                        on_status=status,
                        sparse_available=sparse_available,
                        on_token=on_token,
                    )
                if server is None:
                    self._observe_llm(answer)
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
        agent_context = context_config(self.settings, budget_tokens=self.settings.agent_context_tokens)
        question_scope: list[DocumentScope] = []

        async def retrieve(queries: Sequence[str], domain: str | None, mode: str) -> Retrieved:
            result = await self.search(
                queries[0],
                variants=list(queries[1:]),
                mode=mode,
                collections=collections,
                domain=domain,
                context=agent_context if mode != "sparse" else None,
                pinned=snapshot,  # an index swap mid-question must not mix two versions in one answer
                # A rewritten query that names no document keeps the documents the question named.
                scope=question_scope[0] if question_scope else None,
                admitted=True,
            )
            if not question_scope and result.scope.documents is not None:
                question_scope.append(result.scope)
            return self.passages_of(result, snapshot)

        return retrieve

    async def run_candidate(
        self, agent: AnswerAgent, question: str, trace: list[Any] | None = None
    ) -> AgentAnswer:
        """``agent`` (the live program or a candidate) on ``question`` over the live index, outside
        any conversation and unrecorded: how optimisation compares programs."""
        question = self.check_question(question)
        snapshot = await asyncio.to_thread(self._current_snapshot)
        admitted = _Admitted(question, "", None, [], snapshot)
        return await self._run(admitted, None, None, time.perf_counter(), agent=agent, trace=trace)

    async def dspy_settings(self) -> dict[str, Any]:
        """The LM and adapter a DSPy call on the configured LLM needs (starting the LLM if embedded)."""
        return {"lm": await self.language_model(), "adapter": self._adapter}

    async def _record(self, question: str, result: AskResult, seconds: float) -> None:
        """Keep the exchange in its conversation (committed), count it and log it."""
        await asyncio.to_thread(self.conversations.record, question, result)
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

    def allowed_collections(self, requested: list[str] | None, caller: Caller) -> list[str] | None:
        """The collections to search: ``requested`` (or all ``caller`` may read), never beyond them.

        For a caller limited to some collections, one the index lacks is reported here, naming
        only the collections open to it: the index's own error lists every collection it has.
        """
        if caller.collections is None:
            return requested
        refused = [c for c in requested or () if c not in caller.collections]
        if refused:
            raise ForbiddenError(f"collection {refused[0]!r} is not open to this caller")
        loaded = self._snapshot  # loaded at start; an index swapped since keeps the same names, mostly
        present = set(loaded.collections) if loaded is not None else set(caller.collections)
        visible = [c for c in caller.collections if c in present]
        if requested is None:
            if not visible:
                raise UnknownCollectionError("none of the collections open to this caller is in the index")
            return visible
        missing = [c for c in requested if c not in present]
        if missing:
            raise UnknownCollectionError(
                f"unknown collection {missing[0]!r} (open to this caller: {', '.join(visible) or 'none'})"
            )
        return requested

    def check_question(self, question: str) -> str:
        """The question without control or invisible format characters (NUL, zero-width, bidi
        overrides), stripped; :class:`InvalidRequestError` when nothing visible is left or it is
        over the length limit."""
        question = without_invisible(question).strip()
        if not question:
            raise InvalidRequestError("the question is empty")
        if len(question) > self.settings.max_question_chars:
            limit = self.settings.max_question_chars
            raise InvalidRequestError(
                f"the question has {len(question):,} characters; the limit is {limit:,}"
            )
        return question

    async def record_feedback(self, feedback: Feedback, caller: Caller | None = None) -> FeedbackRecord:
        """Store feedback on an answer given earlier (committed before this returns).

        With ``caller`` (the API, MCP), the answer must be in one of the caller's conversations;
        chat bots pass none, having found the answer through the message that shows it.
        """
        if caller is not None:
            require_scope(caller, "feedback")
        validate_feedback(feedback)
        answer = await asyncio.to_thread(self.conversations.answer, feedback.answer_id)
        if caller is not None and not caller.names_conversations:
            owner = await asyncio.to_thread(self.conversations.owner, answer.conversation_id)
            if owner != caller.owner:
                raise NotFoundError(f"no answer with id {feedback.answer_id!r}")
        record = await asyncio.to_thread(self.feedback.add, feedback, answer)
        self.metrics.feedback.labels(feedback.label or "none", feedback.platform).inc()
        return record

    async def remember_message(self, platform: Platform, message_ref: str, answer_id: str) -> None:
        """Note which answer a chat message shows (for reactions to it)."""
        await asyncio.to_thread(self.conversations.remember_message, platform, message_ref, answer_id)

    async def answer_for_message(self, platform: Platform, message_ref: str) -> str:
        """The answer id shown by a chat message; :class:`NotFoundError` for any other message."""
        return await asyncio.to_thread(self.conversations.answer_for_message, platform, message_ref)

    async def retract_feedback(self, answer_id: str, platform: Platform, user: str, reaction: str) -> int:
        """Remove the feedback that ``reaction`` by ``user`` gave on ``answer_id``; returns how many rows."""
        return await asyncio.to_thread(self.feedback.retract, answer_id, platform, user, reaction)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = make_embedder(self.settings)
        return self._embedder

    def _current_snapshot(self) -> IndexSnapshot:
        """The live snapshot, reloaded when another version has gone live since the last call."""
        live = live_version_id(self.settings.index_dir)
        snapshot = self._snapshot
        if snapshot is None or snapshot.version_id != live:
            with self._reload_lock:
                if self._snapshot is None or self._snapshot.version_id != live_version_id(
                    self.settings.index_dir
                ):
                    fresh = open_live(self.settings.index_dir, memory_map=self.settings.index_memory_map)
                    _check_embedder(fresh, self.embedder)
                    self._snapshot = fresh
                snapshot = self._snapshot
        return snapshot

    def passages_of(self, result: SearchResult, snapshot: IndexSnapshot) -> Retrieved:
        """A search's context (or its hits, whole) as passages labelled with their document's period."""
        passages = result.context.passages() if result.context is not None else whole_passages(result.hits)
        periods = {r.doc_id: r.period or r.version for r in snapshot.files}
        details: dict[str, Any] = {"scope": result.scope.trace()}
        if result.context is not None:
            selected = next((e for e in result.context.trace if e.get("step") == "select_context"), {})
            details.update(strategy=selected.get("strategy"), context_tokens=result.context.tokens)
        return Retrieved([replace(p, period=periods.get(p.chunk.doc_id, "")) for p in passages], details)

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
        """Rank passages for ``query`` (and its ``variants``); all hits come from one index version.

        ``domain`` picks the per-collection boosts configured for that question domain. With
        ``scoped`` (the default), a query that names documents ("Intel", "Q1 2023", "the
        latest release") searches only those (:mod:`pipeline.documents`); the resolved scope is
        the first trace entry. With ``context``, the top ``context_candidates`` hits are also
        selected and ordered into the LLM's context under its token budget (the ``evidence``
        strategy deepens into the needed documents first). ``pinned`` searches that snapshot
        instead of the live one (one question's searches all see the same version). ``scope``
        replaces the scope the query would resolve to, when the query names no document.

        A remote caller gets at most ``MAX_SEARCH_K`` passages; the CLI and the evaluations,
        running as the local caller, may ask for more.

        Searches run in their own pool of ``max_concurrent_searches`` threads; beyond
        ``search_queue`` waiting searches a new one is refused (:class:`OverloadedError`),
        unless ``admitted`` (the searches of a question already admitted to the agent).
        """
        if not admitted:
            require_scope(caller, "search")
        if mode not in SEARCH_MODES:  # checked before it becomes a metric label
            shown = mode if len(mode) <= 40 else mode[:40] + "…"
            raise InvalidRequestError(
                f"unknown search mode {shown!r}; choose one of {', '.join(SEARCH_MODES)}"
            )
        if caller is not LOCAL_CALLER and k is not None and not 1 <= k <= MAX_SEARCH_K:
            raise InvalidRequestError(f"k must be between 1 and {MAX_SEARCH_K}")
        self.metrics.searches.labels(mode).inc()
        collections = self.allowed_collections(collections, caller)
        request = SearchRequest(
            queries=(query, *(variants or [])),
            mode=mode,  # type: ignore[arg-type]
            collections=tuple(collections) if collections else None,
            boosts=self._boosts(domain),
            k=max(k or 0, self.settings.context_candidates) if context else k,
        )

        def run() -> SearchResult:
            snapshot = pinned or self._current_snapshot()
            started = time.perf_counter()
            resolved = DocumentScope()
            if scoped and mode != "sparse":
                resolved = resolve_scope(query, snapshot.documents(request.collections))
            chosen = scope if scope is not None and resolved.documents is None else resolved
            scope_step = {"step": "scope", "ms": round((time.perf_counter() - started) * 1000, 3)}
            result = retrieve(
                snapshot,
                self.embedder,
                replace(request, documents=chosen.documents),
                self.retrieval,
                reranker=self.reranker,
                glossary=self.glossary,
            )
            found = SearchResult(
                query, mode, snapshot.version_id, result.hits, [], None, chosen, request.queries
            )
            assembled = self._assemble(snapshot, found, context) if context else None
            trace = [scope_step | chosen.trace(), *result.trace, *(assembled.trace if assembled else [])]
            hits = result.hits[:k] if k else result.hits
            return replace(found, hits=hits, trace=trace, context=assembled)

        # Query encoding, BM25 scoring and reranking are CPU-bound: keep them off the event loop.
        return await self._searches.run(run, admitted=admitted)

    async def assemble_context(self, result: SearchResult, context: ContextConfig) -> Context:
        """Select and order ``result``'s hits into an LLM context, without searching again."""

        def run() -> Context:
            return self._assemble(self._current_snapshot(), result, context)

        return await asyncio.to_thread(run)

    def _assemble(self, snapshot: IndexSnapshot, result: SearchResult, context: ContextConfig) -> Context:
        queries = result.queries or (result.query,)
        evidence = None
        if context.selection == "evidence":
            evidence = find_evidence(
                snapshot,
                self.embedder.embed_query,
                queries,
                result.hits,
                result.scope,
                evidence_config(self.settings),
            )
        return build_context(
            result.hits,
            context,
            tokenizer=self.embedder.tokenizer,
            chunk_vector=snapshot.embedding,
            query_vector=self.embedder.embed_query(queries[0]),
            stored_vectors=lambda pieces: snapshot.stored_unit_vectors([(p.chunk, p.text) for p in pieces]),
            evidence=evidence,
        )

    def _boosts(self, domain: str | None) -> dict[str, float] | None:
        if domain is None:
            return None
        if domain not in self.settings.domains:
            known = ", ".join(sorted(self.settings.domains)) or "none configured"
            raise InvalidRequestError(f"unknown domain {domain!r} (known: {known})")
        return self.settings.domains[domain].collections or None

    async def passage(self, passage_id: str, caller: Caller = LOCAL_CALLER) -> Chunk:
        """A passage of the live version (:class:`NotFoundError` if ``caller`` cannot see it)."""
        require_scope(caller, "search")
        snapshot = await asyncio.to_thread(self._current_snapshot)
        chunk = snapshot.chunk(passage_id)
        if caller.collections is not None and chunk.collection not in caller.collections:
            raise NotFoundError(f"no passage with id {passage_id!r} in index version {snapshot.version_id}")
        return chunk

    async def document(
        self, doc_id: str, page: int | None = None, caller: Caller = LOCAL_CALLER
    ) -> tuple[str, FileRecord, list[Chunk]]:
        """The live version id, a document's record and its passages in order (only ``page``'s if given)."""
        require_scope(caller, "search")
        snapshot = await asyncio.to_thread(self._current_snapshot)
        record, chunks = snapshot.document(doc_id)
        if caller.collections is not None and record.collection not in caller.collections:
            raise NotFoundError(f"no document with id {doc_id!r} in index version {snapshot.version_id}")
        if page is not None:
            if not 1 <= page <= max(record.pages, 1):
                raise InvalidRequestError(f"page {page} is outside {record.title!r} (pages 1–{record.pages})")
            chunks = [c for c in chunks if c.pages[0] <= page <= c.pages[1] or c.pages == (0, 0)]
        return snapshot.version_id, record, chunks

    async def list_collections(self, caller: Caller = LOCAL_CALLER) -> tuple[str, list[dict[str, Any]]]:
        """The live version id and, per collection ``caller`` may read, its name and counts."""
        require_scope(caller, "search")
        snapshot = await asyncio.to_thread(self._current_snapshot)
        documents: dict[str, int] = {}
        for record in snapshot.files:
            documents[record.collection] = documents.get(record.collection, 0) + 1
        described = self.settings.collections
        return snapshot.version_id, [
            {
                "name": name,
                "description": described[name].description if name in described else "",
                "documents": documents.get(name, 0),
                "chunks": len(collection.chunks),
            }
            for name, collection in sorted(snapshot.collections.items())
            if caller.collections is None or name in caller.collections
        ]

    def _published(self, source: str) -> bool:
        return any(source.startswith(local) for local in self.settings.source_url_prefixes)

    def public_source(self, source: str) -> str:
        """What a remote caller sees of a source: its URL (``source_url_prefixes``), else its path
        below the ingested folder, never the server's own file system path."""
        if self._published(source):
            return citation_link(source, (0, 0), self.settings.source_url_prefixes)
        snapshot = self._snapshot
        relative = {r.path: r.relative for r in snapshot.files} if snapshot is not None else {}
        return relative.get(source) or Path(source).name

    def public_result(self, result: AskResult) -> AskResult:
        """``result`` as a remote caller sees it: sources through :meth:`public_source`, and links
        only to published URLs (a ``file://`` link would name the server's disk)."""
        agent = result.agent

        def public(item: Any) -> Any:
            link = item.link if self._published(item.source) else ""
            return replace(item, source=self.public_source(item.source), link=link)

        citations = [public(c) for c in agent.citations]
        evidence = [public(q) for q in agent.evidence]
        return replace(result, agent=replace(agent, citations=citations, evidence=evidence))

    async def health(self) -> dict[str, Any]:
        """Liveness without touching any thread pool: the loaded version and the live one on disk,
        and whether the LLM answers (a server LLM not heard from lately is probed first)."""
        loaded = self._snapshot
        if self._llm_server is not None:
            llm, reason = self._llm_server.state, None
        elif self.settings.llm_api_base is None:
            llm, reason = "not started", None
        else:
            llm, reason = await self.llm_health.current()
        return {
            "status": "ok" if loaded is not None else "starting",
            "index_version": loaded.version_id if loaded is not None else None,
            "live_version": live_version_id(self.settings.index_dir),
            "searches_waiting": self._searches.pending,
            "llm": llm,
            "llm_reason": reason,
            "program": self.program.name,
        }

    def _observe_llm(self, answer: AgentAnswer) -> None:
        """What a question found of a server LLM: unavailable when it could not be asked, ready
        once a call succeeded."""
        if answer.outcome == "llm_unavailable":
            self.llm_health.observe(LLMProblem("the last question could not reach it", answer.outcome))
        elif any("llm_call" in event for event in answer.trace):
            self.llm_health.observe(None)

    async def index_info(self, documents: bool = False) -> dict[str, Any]:
        """The live version's manifest summary: version, models, counts (and each document's metadata)."""
        snapshot = await asyncio.to_thread(self._current_snapshot)
        manifest = snapshot.manifest
        listing = {
            "document_list": [
                {
                    "doc_id": r.doc_id,
                    "collection": r.collection,
                    "title": r.title,
                    "organisation": r.organisation,
                    "names": list(r.names),
                    "period": r.period,
                    "version": r.version,
                    "pages": r.pages,
                    "chunks": r.chunks,
                    "evidence_units": r.units,
                    "path": r.path,
                }
                for r in snapshot.files
            ]
        }
        return {
            "index_dir": str(self.settings.index_dir),
            "version": snapshot.version_id,
            "created_at": manifest["created_at"],
            "format_version": manifest["format_version"],
            "embedder": manifest["embedder"],
            "chunking": manifest["chunking"],
            "bm25": manifest["bm25"],
            "program": self.program.summary(),
            **manifest["counts"],
            **(listing if documents else {}),
        }


def ingest_options(settings: Settings) -> IngestOptions:
    """The build parameters the settings ask for."""
    return IngestOptions(
        chunking=ChunkingOptions(
            max_tokens=settings.chunk_tokens,
            overlap_tokens=settings.chunk_overlap_tokens,
            method=settings.chunker,
            semantic_percentile=settings.semantic_percentile,
            contextual=settings.enrich,
        ),
        bm25=Bm25Params(k1=settings.bm25_k1, b=settings.bm25_b),
        keep_versions=settings.keep_versions,
        pdf_models_dir=settings.pdf_models_dir,
        sparse_threshold=settings.sparse_similarity_threshold,
        convert_processes=settings.convert_processes,
        limits=IngestLimits(
            **{f.name: getattr(settings, limit_setting(f.name)) for f in fields(IngestLimits)}
        ),
    )


def run_ingest(
    settings: Settings,
    inputs: list[Path],
    *,
    collection: str | None = None,
    embedder: Embedder | None = None,
    progress: IngestProgress = NoProgress(),
    enricher: Enricher | None = None,
) -> IngestReport:
    """Build a new index version from ``inputs`` (blocking; the CLI and the ingest job call it)."""
    return ingest(
        settings.index_dir,
        inputs,
        embedder=embedder or make_embedder(settings),
        collection=collection,
        options=ingest_options(settings),
        progress=progress,
        enricher=enricher,
    )


async def run_enriched_ingest(
    settings: Settings,
    inputs: list[Path],
    *,
    collection: str | None = None,
    progress: IngestProgress = NoProgress(),
    lm: Any = None,
) -> IngestReport:
    """Ingest with contextual enrichment: the LLM (given, or opened here) situates each new chunk."""
    from server.models.enrichment import EnrichmentCache, LLMEnricher

    settings = settings.model_copy(update={"enrich": True})
    cache = EnrichmentCache(settings.index_dir / "enrichment.sqlite3")
    async with AsyncExitStack() as stack:
        model = lm if lm is not None else await stack.enter_async_context(open_lm(settings))
        stack.callback(cache.close)
        enricher = LLMEnricher(model, cache, make_adapter(settings))
        # Conversion, chunking and embedding are blocking and CPU-bound: run them in a worker thread.
        return await asyncio.to_thread(
            run_ingest, settings, inputs, collection=collection, progress=progress, enricher=enricher
        )


def _check_embedder(snapshot: IndexSnapshot, embedder: Embedder) -> None:
    """Refuse an index whose vectors another embedder made: its dense search would be noise."""
    if not built_by(snapshot.manifest, embedder):
        raise ConfigurationError(
            f"index version {snapshot.version_id} was built with the embedder "
            f"{snapshot.manifest.get('embedder', {})}, but this server embeds queries with "
            f"{embedder_manifest(embedder)}: run `docfinder ingest` with this embedder to rebuild the "
            "index, or set DOCFINDER_EMBEDDER_PATH / DOCFINDER_EMBEDDER_BACKEND to what built it"
        )
