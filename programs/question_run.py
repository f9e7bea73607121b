"""One question through the answering loop of :mod:`programs.agent`: finding the evidence, then
drafting until a draft passes the checks or the evidence is quoted instead."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pipeline.answering.quotes import QuoteCandidate, answering_quotes
from pipeline.answers import AgentAnswer, Outcome, StatusSink
from pipeline.citations import cited_numbers
from pipeline.retrieval.context import Passage
from pipeline.retrieval.conversation import search_query, user_questions
from pipeline.steps import Step
from programs.agent import (
    EVIDENCE_PREVIEW,
    NO_DOCUMENTS,
    AnswerAgent,
    Retriever,
    citations_for,
    conversation_text,
    graded,
    quotes_of,
)
from programs.drafting import Drafting
from programs.llm_calls import LLMCalls


class QuestionRun:
    """The state of one question going through the loop: the question as searched, its domain,
    the best passages found, the trace, and the LLM calls made."""

    def __init__(
        self, agent: AnswerAgent, retrieve: Retriever, on_status: StatusSink | None, llm: LLMCalls
    ) -> None:
        self.agent = agent
        self.retrieve = retrieve
        self.on_status = on_status
        self.llm = llm
        self.trace: list[dict[str, Any]] = []
        self.question = ""
        self.conversation = ""  # the earlier turns, as the answering call reads them
        self.domain: str | None = None
        self.best: list[Passage] = []
        self.absent: list[str] = []  # the question's technical names no searched document mentions
        self.rarity: dict[str, float] = {}  # how rare each searched word is where it was searched
        self.documents_name: Callable[[str], bool] | None = None  # a word named by a searched document
        self.verdicts: dict[str, str | None] = {"supported": None, "useful": None}
        self.started = time.perf_counter()

    async def step(self, name: Step, **details: Any) -> None:
        event = {"step": name, "t": round(time.perf_counter() - self.started, 3), **details}
        if self.llm.unreported:  # the first step after an LLM call reports it
            event["llm_call"], event["tokens"] = self.llm.unreported.pop(0)
        self.trace.append(event)
        if self.on_status is not None:
            await self.on_status(event)

    def result(
        self,
        text: str,
        outcome: Outcome,
        passages: Sequence[Passage],
        quotes: Sequence[QuoteCandidate],
        stated: Sequence[QuoteCandidate] = (),
    ) -> AgentAnswer:
        """The answer with the citations of what its text cites and its quotes come from (and the
        units ``stated`` word for word in it, not quoted), the quotes, and the passages it was
        written from."""
        prefixes = self.agent.url_prefixes
        numbers = cited_numbers(text, len(passages)) | {q.n for q in (*quotes, *stated)}
        return AgentAnswer(
            text,
            outcome,
            citations_for(passages, numbers, prefixes),
            dict(self.verdicts),
            self.question,
            self.domain,
            self.trace,
            quotes_of(quotes, passages, prefixes),
            [f"{p.label()}\n{p.text}" for p in passages],
        )

    async def answer(
        self, message: str, history: Sequence[tuple[str, str]], sparse_available: bool
    ) -> AgentAnswer:
        self.conversation = conversation_text(history)
        queries = await self._understand(message, history)
        if self.agent.classify is not None:
            await self._classify()
        rewrites = 0
        passages = await self.retrieve_and_grade(queries, "hybrid")
        while not passages:
            if rewrites >= self.agent.settings.max_rewrites:
                return self.result(NO_DOCUMENTS, "no_documents", [], [])
            queries = [await self.transform("no passage passed the relevance threshold")]
            rewrites += 1
            passages = await self.retrieve_and_grade(queries, "hybrid")
        await self._show_evidence(passages)
        return await Drafting(self).until_one_passes(passages, sparse_available, rewrites)

    async def _understand(self, message: str, history: Sequence[tuple[str, str]]) -> list[str]:
        """The queries to search: by code (the message, after the user's previous question in a
        conversation), or by one LLM call (``agent.understand`` = llm): the standalone question,
        its domain and a search variant."""
        if self.agent.settings.understand == "code":
            self.question = message
            query = search_query(message, user_questions(history))
            if history:
                await self.step(Step.CONDENSE, message=message, question=query, method="code")
            else:
                await self.step(Step.UNDERSTAND_SKIPPED, reason="a first question is searched as typed")
            return [query]
        return await understood_by_llm(self, message, history)

    async def _classify(self) -> None:
        """Place the question in the nearest domain, without an LLM call."""
        assert self.agent.classify is not None
        choice = await self.agent.classify(self.question)
        self.domain = choice.domain
        details: dict[str, Any] = {"domain": choice.domain, "method": "embedding"}
        if choice.domain is None:
            details["note"] = "no domains configured: every collection weighs 1"
        else:
            details["similarities"] = dict(choice.similarities)
        await self.step(Step.CLASSIFY_QUERY, **details)

    async def transform(self, problem: str) -> str:
        """A rewritten search query (one LLM call), for a search that found nothing or a failed draft."""
        tried = "\n".join(
            dict.fromkeys(q for e in self.trace if e["step"] == Step.RETRIEVE for q in e["queries"])
        )
        rewritten = (
            await self.llm.call(
                "transform_query",
                self.agent.transform_query,
                question=self.question,
                problem=problem,
                tried=tried,
            )
        ).rewritten
        await self.step(Step.TRANSFORM_QUERY, query=rewritten, problem=problem)
        return rewritten

    async def retrieve_and_grade(
        self, queries: list[str], mode: str, step: Step = Step.RETRIEVE
    ) -> list[Passage]:
        retrieved = await self.retrieve(queries, self.domain, mode)
        details = dict(retrieved.details)
        rarity = details.pop("rarity", {})  # read by the answer code, not a step to show
        await self.step(
            step,
            queries=queries,
            mode=mode,
            candidates=[[p.chunk.chunk_id, round(p.score, 4)] for p in retrieved.passages],
            **details,
        )
        kept = graded(retrieved.passages, self.agent.settings.grade_threshold)
        if kept and not self.best:
            self.best = kept
            self.absent = list(details.get("absent", []))
            self.rarity = rarity
            self.documents_name = retrieved.documents_name
        await self.step(
            Step.GRADE_DOCUMENTS,
            threshold=self.agent.settings.grade_threshold,
            kept=[p.chunk.chunk_id for p in kept],
        )
        return kept

    async def _show_evidence(self, passages: list[Passage]) -> None:
        """The units that best answer the question, as soon as they are found (before the LLM has
        read its prompt): every door shows them while the answer is written."""
        chosen = answering_quotes(self.question, "", passages, limit=EVIDENCE_PREVIEW, rarity=self.rarity)
        quotes = quotes_of(chosen, passages, self.agent.url_prefixes)
        await self.step(
            Step.EVIDENCE,
            quotes=[
                {"n": q.n, "text": q.readable(), "source": q.source, "pages": list(q.pages), "link": q.link}
                for q in quotes
            ],
        )


async def understood_by_llm(run: QuestionRun, message: str, history: Sequence[tuple[str, str]]) -> list[str]:
    """The queries to search from one LLM call (``agent.understand`` = llm): the standalone
    question (in a conversation), its domain (when no embedding classifier places it) and a
    search variant."""
    domains = run.agent.domains if run.agent.classify is None else {}
    listing = "\n".join(f"{name}: {description}" for name, description in domains.items())
    turns = "\n".join(f"{role}: {text}" for role, text in history)
    reply = await run.llm.call(
        "understand", run.agent.understand, history=turns, message=message, domains=listing or "general"
    )
    standalone = reply.standalone_question.strip()
    run.question = standalone if history and standalone else message
    if history:
        await run.step(Step.CONDENSE, message=message, question=run.question, method="llm")
    if domains:
        chosen = reply.domain.strip().strip("'\"").lower()
        run.domain = chosen if chosen in domains else ("general" if "general" in domains else None)
        await run.step(Step.CLASSIFY_QUERY, domain=run.domain, raw=reply.domain)
    await run.step(Step.REVIEW_QUERY, variant=reply.rephrased)
    return [run.question, reply.rephrased]
