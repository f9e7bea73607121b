"""One question through the answering loop of :mod:`programs.agent`: finding the evidence, then
drafting until a draft passes the checks or the evidence is quoted instead."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from typing import Any

from pipeline.answers import AgentAnswer, Outcome, StatusSink
from pipeline.citations import cited_numbers, marker
from pipeline.context import Passage
from pipeline.conversation import search_query, user_questions
from pipeline.errors import UnreadableReplyError
from pipeline.extractive import (
    ComposedAnswer,
    answering_quotes,
    compose_answer,
    in_the_documents_words,
    never_mentioned,
    quoted_evidence,
)
from pipeline.figure_citations import cite_figure_sources
from pipeline.quotes import QuoteCandidate
from pipeline.steps import Step
from programs.agent import (
    CLOSEST,
    EVIDENCE_PREVIEW,
    MAX_FAILED_ANSWERS,
    MAX_LLM_CALLS,
    NO_DOCUMENTS,
    NOT_CLEARLY_SAID,
    NOT_VERIFIED,
    AnswerAgent,
    Retriever,
    answer_of_a_cut_reply,
    citations_for,
    cited_passages,
    conversation_text,
    estimated_llm_tokens,
    graded,
    number_passages,
    quotes_of,
    whole_sentences,
)
from programs.continuation import Conversation, reply_text
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
        self, text: str, outcome: Outcome, passages: Sequence[Passage], quotes: Sequence[QuoteCandidate]
    ) -> AgentAnswer:
        """The answer with the citations of what its text cites and its quotes come from, the quotes,
        and the passages it was written from."""
        prefixes = self.agent.url_prefixes
        numbers = cited_numbers(text, len(passages)) | {q.n for q in quotes}
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
        domains = self.agent.domains if self.agent.classify is None else {}
        listing = "\n".join(f"{name}: {description}" for name, description in domains.items())
        turns = "\n".join(f"{role}: {text}" for role, text in history)
        reply = await self.llm.call(
            "understand", self.agent.understand, history=turns, message=message, domains=listing or "general"
        )
        standalone = reply.standalone_question.strip()
        self.question = standalone if history and standalone else message
        if history:
            await self.step(Step.CONDENSE, message=message, question=self.question, method="llm")
        if domains:
            chosen = reply.domain.strip().strip("'\"").lower()
            self.domain = chosen if chosen in domains else ("general" if "general" in domains else None)
            await self.step(Step.CLASSIFY_QUERY, domain=self.domain, raw=reply.domain)
        await self.step(Step.REVIEW_QUERY, variant=reply.rephrased)
        return [self.question, reply.rephrased]

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
        await self.step(
            step,
            queries=queries,
            mode=mode,
            candidates=[[p.chunk.chunk_id, round(p.score, 4)] for p in retrieved.passages],
            **retrieved.details,
        )
        kept = graded(retrieved.passages, self.agent.settings.grade_threshold)
        if kept and not self.best:
            self.best = kept
            self.absent = list(retrieved.details.get("absent", []))
        await self.step(
            Step.GRADE_DOCUMENTS,
            threshold=self.agent.settings.grade_threshold,
            kept=[p.chunk.chunk_id for p in kept],
        )
        return kept

    async def _show_evidence(self, passages: list[Passage]) -> None:
        """The units that best answer the question, as soon as they are found (before the LLM has
        read its prompt): every door shows them while the answer is written."""
        chosen = answering_quotes(self.question, "", passages, limit=EVIDENCE_PREVIEW)
        quotes = quotes_of(chosen, passages, self.agent.url_prefixes)
        await self.step(
            Step.EVIDENCE,
            quotes=[
                {"n": q.n, "text": q.readable(), "source": q.source, "pages": list(q.pages), "link": q.link}
                for q in quotes
            ],
        )


class Drafting:
    """Drafts of one question's answer: generate, compose, check; another draft after a failed
    one (with the sparse set, or a rewritten search), at most ``MAX_FAILED_ANSWERS``; then the
    evidence quoted."""

    def __init__(self, run: QuestionRun) -> None:
        self.run = run
        self.agent = run.agent
        self.generated: Conversation | None = None  # the last generate call, which an LLM check continues

    async def until_one_passes(
        self, passages: list[Passage], sparse_available: bool, rewrites: int
    ) -> AgentAnswer:
        run, settings = self.run, self.agent.settings
        sparse_tried = not sparse_available
        tried: set[frozenset[str]] = set()
        failed = 0
        every_draft_filled_a_gap = True
        while True:
            attempt = frozenset(piece.key for p in passages for piece in p.pieces)
            if attempt in tried:  # temperature 0: the same passages would give the same answer
                await run.step(Step.GENERATE_SKIPPED, reason="these passages were already tried")
            else:
                tried.add(attempt)
                reply = await self._cite_figure_sources(await self._generate(passages), passages)
                composed = await self._compose(reply, passages)
                if composed.kind == "not_in_documents":
                    return await self._final(composed, "not_in_documents", passages)
                if composed.kind == "answer" and await self._checks(composed, passages):
                    return await self._final(composed, "answered", passages)
                failed += 1
                every_draft_filled_a_gap &= composed.filled_a_gap
                if failed >= MAX_FAILED_ANSWERS:
                    break
            calls_a_draft = 3 if settings.llm_checks else 1
            if not sparse_tried and run.llm.made + calls_a_draft <= MAX_LLM_CALLS:
                sparse_tried = True
                passages = await self._add_sparse(passages)
                continue
            if rewrites >= settings.max_rewrites or run.llm.made + 1 + calls_a_draft > MAX_LLM_CALLS:
                break
            rewrites += 1
            problem = "the answer was not supported by the passages or did not answer the question"
            passages = await run.retrieve_and_grade([await run.transform(problem)], "hybrid") or passages
        read = run.best or passages
        gap = bool(failed) and every_draft_filled_a_gap
        lead = NOT_CLEARLY_SAID if gap else NOT_VERIFIED
        if run.absent:  # the documents never mention what the question names
            lead = f"{never_mentioned(run.absent)} {CLOSEST}"
        closest = quoted_evidence(run.question, read, lead, self.agent.rules)
        await run.step(Step.QUOTE_EVIDENCE, reason=f"{failed} draft(s) failed the checks", filled_a_gap=gap)
        return await self._final(closest, "unverified", read)

    async def _final(
        self, composed: ComposedAnswer, outcome: Outcome, passages: Sequence[Passage]
    ) -> AgentAnswer:
        """The composed answer as the result; a streaming door gets it as the last draft."""
        await self.run.llm.send_final(composed.text)
        return self.run.result(composed.text, outcome, passages, composed.quotes)

    async def _generate(self, passages: list[Passage]) -> str:
        run = self.run
        inputs = {
            "question": run.question,
            "conversation": run.conversation,
            "passages": number_passages(passages),
            "glossary": self.agent.glossary,
        }
        raw: list[str] = []
        try:
            reply = await run.llm.call("generate", self.agent.generate, stream="answer", raw=raw, **inputs)
        except UnreadableReplyError as exc:
            answer = answer_of_a_cut_reply(exc.reply)
            if not answer:
                raise
            # The model wrote past its token limit: its whole sentences are still an answer to check.
            run.llm.note("generate", {})
            self.generated = Conversation.of_call(self.agent.generate, inputs, exc.reply)
            await run.step(Step.GENERATE, answer=answer, passages=len(passages), cut_off=True)
            return answer
        written = "".join(raw) or reply_text(self.agent.generate, reply)
        self.generated = Conversation.of_call(self.agent.generate, inputs, written)
        answer = reply.answer
        tokens = run.llm.unreported[-1][1] if run.llm.unreported else {}
        if _cut_off(answer, tokens, self.agent.settings.answer_tokens):
            # The model wrote to its token limit; the JSON was mended around an unfinished
            # sentence, which is no claim to check: its whole sentences are the answer.
            answer = whole_sentences(answer) or answer
            await run.step(Step.GENERATE, answer=answer, passages=len(passages), cut_off=True)
            return answer
        await run.step(Step.GENERATE, answer=answer, passages=len(passages))
        return answer

    async def _cite_figure_sources(self, answer: str, passages: list[Passage]) -> str:
        """The answer with a citation added for each figure it takes from a passage it does not
        cite (:mod:`pipeline.figure_citations`); unchanged without the figure check."""
        if not self.agent.settings.figure_check:
            return answer
        evidence = [f"{p.evidence_label()}\n{p.text}" for p in passages]
        cited, added = cite_figure_sources(answer, evidence, cited_numbers(answer, len(passages)))
        if added:
            await self.run.step(
                Step.CITE_FIGURES, added=[{"figure": a.figure, "passage": a.passage} for a in added]
            )
        return cited

    async def _compose(self, reply: str, passages: list[Passage]) -> ComposedAnswer:
        """The answer code composes from the reply (:mod:`pipeline.extractive`); its making in the trace."""
        composed = compose_answer(
            self.run.question,
            reply,
            passages,
            check_figures=self.agent.settings.figure_check,
            rules=self.agent.rules,
            absent=self.run.absent,
            reply_chars=self.agent.settings.reply_chars,
        )
        await self.run.step(
            Step.COMPOSE,
            kind=composed.kind,
            kept=composed.kept,
            quoted=[q.n for q in composed.quotes],
            dropped=[
                {"sentence": d.sentence, "reason": d.reason, "detail": list(d.detail)}
                for d in composed.dropped
            ],
            corrected=composed.corrected,
        )
        return composed

    async def _add_sparse(self, passages: list[Passage]) -> list[Passage]:
        """Passages from the sparse set (facts stated nowhere else) added to the evidence.

        They are appended, so the new generate prompt starts with the whole of the last one and
        the LLM server resumes from its prompt cache, as long as they add at most
        ``sparse_tokens`` (estimated) to the prompt: the limit keeps the prompt inside the LLM's
        window. When not even the first fits, the new passages replace the lowest-ranked ones.
        """
        extra = await self.run.retrieve_and_grade([self.run.question], "sparse", step=Step.SPARSE_FALLBACK)
        known = {p.chunk.chunk_id for p in passages}
        room = max(1, self.agent.max_passages // 4)
        new = [p for p in extra if p.chunk.chunk_id not in known][:room]
        appended: list[Passage] = []
        growth = 0
        for passage in new:
            growth += estimated_llm_tokens(number_passages([passage]))
            if growth > self.agent.settings.sparse_tokens:
                break
            appended.append(passage)
        if appended or not new:
            return passages + appended
        ranked = sorted(passages, key=lambda p: -p.score)[: max(len(passages) - len(new), 1)]
        return [p for p in passages if p in ranked] + new

    async def _checks(self, composed: ComposedAnswer, passages: list[Passage]) -> bool:
        """Whether a composed answer passes. Code has checked it (:mod:`pipeline.extractive`):
        each figure and name stated by the evidence it cites, no "yes" against a negation,
        something said that the question did not. With ``agent.llm_checks`` the LLM is also
        asked, both questions at once (a server LLM serves them in parallel), whether the reply
        is supported (as the next turn of the generate call's conversation) and useful, unless
        code dropped sentences (the reply that conversation holds is no longer the answer) or
        the answer is in its passages' own words (grounded by construction)."""
        run = self.run
        cited = cited_passages(passages, composed.kept)
        shown = [text for p in cited for text in (p.chunk.title, *p.chunk.heading_path, p.chunk.text)]
        own_words = in_the_documents_words(composed.kept, run.question, shown)
        if not self.agent.settings.llm_checks or composed.dropped or own_words:
            run.verdicts = {"supported": "code", "useful": "code"}
            await run.step(Step.SUPPORTED, verdict="code", passages=len(cited), dropped=len(composed.dropped))
            await run.step(Step.USEFUL, verdict="code")
            run.best = passages
            return True
        assert self.generated is not None, "the checks follow a generate call"
        numbers = {p.chunk.chunk_id: n for n, p in enumerate(passages, start=1)}
        supported_inputs = {"cited": ", ".join(marker(numbers[p.chunk.chunk_id]) for p in cited)}
        useful_inputs = {"question": run.question, "answer": composed.kept}
        replies = await asyncio.gather(
            run.llm.ask(self.agent.supported, supported_inputs, continues=self.generated),
            run.llm.ask(self.agent.useful, useful_inputs),
        )
        (supported_reply, supported_tokens), (useful_reply, useful_tokens) = replies
        run.llm.note("supported", supported_tokens)
        run.llm.note("useful", useful_tokens)
        supported, useful = supported_reply.supported, useful_reply.useful
        run.verdicts = {"supported": supported, "useful": useful}
        await run.step(Step.SUPPORTED, verdict=supported, passages=len(cited))
        await run.step(Step.USEFUL, verdict=useful)
        if supported == "yes" and useful == "yes":
            run.best = passages
            return True
        return False


_FINISHED = re.compile(r"[.!?:)\]`\"'’”]\s*$")


def _cut_off(answer: str, tokens: dict[str, int], limit: int) -> bool:
    """Whether ``answer`` stops where the model reached its token ``limit``: its reply used every
    token allowed (when the LLM reports its tokens), else its text ends in the middle of a sentence."""
    used = tokens.get("completion", 0)
    if used:
        return used >= limit
    return bool(answer.strip()) and not _FINISHED.search(answer)
