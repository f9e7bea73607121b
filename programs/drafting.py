"""The drafts of one question's answer (:class:`Drafting`): generate, compose, check, and
another draft after a failed one, with the sparse set or a rewritten search; when none passes,
the closest evidence quoted (:func:`quote_the_closest`). The checks are
:mod:`programs.draft_checks`'."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pipeline.answering.composed import ComposedAnswer
from pipeline.answering.extractive import compose_answer, never_mentioned, quoted_evidence
from pipeline.answering.figure_citations import cite_figure_sources
from pipeline.answering.sentence_citations import cite_sentence_sources
from pipeline.answering.sentences import under_label_headings
from pipeline.answers import AgentAnswer, Outcome
from pipeline.citations import cited_numbers
from pipeline.errors import UnreadableReplyError
from pipeline.retrieval.context import Passage
from pipeline.steps import Step
from programs.agent import (
    CLOSEST,
    MAX_FAILED_ANSWERS,
    MAX_LLM_CALLS,
    NOT_CLEARLY_SAID,
    NOT_VERIFIED,
    answer_of_a_cut_reply,
    estimated_llm_tokens,
    number_passages,
    whole_sentences,
)
from programs.continuation import Conversation, reply_text
from programs.draft_checks import DraftChecks

if TYPE_CHECKING:  # the run imports its drafting: only the type goes the other way
    from programs.question_run import QuestionRun


class Drafting:
    """Drafts of one question's answer: generate, compose, check; another draft after a failed
    one (with the sparse set, or a rewritten search), at most ``MAX_FAILED_ANSWERS``; then the
    evidence quoted."""

    def __init__(self, run: QuestionRun) -> None:
        self.run = run
        self.agent = run.agent
        self.generated: Conversation | None = None  # the last generate call, which an LLM check continues
        self.checks = DraftChecks(run)

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
                draft, cut_off = await self._generate(passages)
                reply = await self._cite_sources(draft, passages, cut_off)
                composed = await self._compose(reply, passages)
                if composed.kind == "not_in_documents":
                    return await self._final(composed, "not_in_documents", passages)
                if composed.kind == "denied":  # the evidence says no to the draft's "yes": it is quoted
                    return await self._final(composed, "unverified", passages)
                if composed.kind == "answer" and await self.checks.passes(composed, passages, self.generated):
                    return await self._final(composed, "answered", passages)
                failed += 1
                every_draft_filled_a_gap &= composed.filled_a_gap
                if failed >= MAX_FAILED_ANSWERS:
                    break
            calls_a_draft = 3 if settings.llm_checks else 1
            if not sparse_tried and run.llm.made + calls_a_draft <= MAX_LLM_CALLS:
                sparse_tried = True
                passages = await with_sparse_passages(run, passages)
                continue
            if rewrites >= settings.max_rewrites or run.llm.made + 1 + calls_a_draft > MAX_LLM_CALLS:
                break
            rewrites += 1
            problem = "the answer was not supported by the passages or did not answer the question"
            passages = await run.retrieve_and_grade([await run.transform(problem)], "hybrid") or passages
        closest = await quote_the_closest(run, failed, every_draft_filled_a_gap, fallback=passages)
        return await self._final(closest, "unverified", run.best or passages)

    async def _final(
        self, composed: ComposedAnswer, outcome: Outcome, passages: Sequence[Passage]
    ) -> AgentAnswer:
        """The composed answer as the result; a streaming door gets it as the last draft."""
        await self.run.llm.send_final(composed.text)
        return self.run.result(composed.text, outcome, passages, composed.quotes, composed.stated)

    async def _generate(self, passages: list[Passage]) -> tuple[str, bool]:
        """The model's draft over ``passages``, and whether it ran to its token limit."""
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
            return answer, True
        written = "".join(raw) or reply_text(self.agent.generate, reply)
        self.generated = Conversation.of_call(self.agent.generate, inputs, written)
        answer = reply.answer
        tokens = run.llm.unreported[-1][1] if run.llm.unreported else {}
        if _cut_off(answer, tokens, self.agent.settings.answer_tokens):
            # The model wrote to its token limit; the JSON was mended around an unfinished
            # sentence, which is no claim to check: its whole sentences are the answer.
            answer = whole_sentences(answer) or answer
            await run.step(Step.GENERATE, answer=answer, passages=len(passages), cut_off=True)
            return answer, True
        await run.step(Step.GENERATE, answer=answer, passages=len(passages))
        return answer, False

    async def _cite_sources(self, answer: str, passages: list[Passage], cut_off: bool) -> str:
        """The answer with its sources cited: the passage labels it wrote as headings go
        (:func:`pipeline.answering.sentences.under_label_headings`), each sentence of an answer
        that cites nothing gets the passage that carries its words
        (:mod:`pipeline.answering.sentence_citations`), then each figure it takes from a passage
        it does not cite gets that passage (:mod:`pipeline.answering.figure_citations`; only
        with the figure check)."""
        labels = [p.evidence_label() for p in passages]
        # A draft under a label that runs to the token limit is the prompt copied on, not an answer.
        unlabelled = None if cut_off else under_label_headings(answer, labels, self.run.question)
        evidence = [f"{label}\n{p.text}" for label, p in zip(labels, passages, strict=True)]
        answer, sentences = cite_sentence_sources(
            answer if unlabelled is None else unlabelled, evidence, self.run.question
        )
        if sentences or unlabelled is not None:
            await self.run.step(
                Step.CITE_SENTENCES,
                added=[{"sentence": a.sentence, "passage": a.passage} for a in sentences],
                labels_removed=unlabelled is not None,
            )
        if not self.agent.settings.figure_check:
            return answer
        cited, added = cite_figure_sources(answer, evidence, cited_numbers(answer, len(passages)))
        if added:
            await self.run.step(
                Step.CITE_FIGURES, added=[{"figure": a.figure, "passage": a.passage} for a in added]
            )
        return cited

    async def _compose(self, reply: str, passages: list[Passage]) -> ComposedAnswer:
        """The answer code composes from the reply (:mod:`pipeline.answering.extractive`); its
        making in the trace."""
        composed = compose_answer(
            self.run.question,
            reply,
            passages,
            check_figures=self.agent.settings.figure_check,
            rules=self.agent.rules,
            absent=self.run.absent,
            reply_chars=self.agent.settings.reply_chars,
            rarity=self.run.rarity,
            conversation=self.run.conversation,
            documents_name=self.run.documents_name,
        )
        await self.run.step(
            Step.COMPOSE,
            kind=composed.kind,
            kept=composed.kept,
            quoted=[q.n for q in composed.quotes],
            stated=[q.n for q in composed.stated],
            dropped=[
                {"sentence": d.sentence, "reason": d.reason, "detail": list(d.detail)}
                for d in composed.dropped
            ],
            corrected=composed.corrected,
        )
        return composed


async def quote_the_closest(
    run: QuestionRun, failed: int, every_draft_filled_a_gap: bool, fallback: list[Passage]
) -> ComposedAnswer:
    """The evidence that best answers the question, quoted under a lead that says what the failed
    drafts show: the documents lack it (every draft filled a gap), a name no document mentions,
    or only that no short answer could be verified."""
    read = run.best or fallback
    gap = bool(failed) and every_draft_filled_a_gap
    lead = NOT_CLEARLY_SAID if gap else NOT_VERIFIED
    if run.absent:  # the documents never mention what the question names
        lead = f"{never_mentioned(run.absent)} {CLOSEST}"
    closest = quoted_evidence(run.question, read, lead, run.agent.rules, rarity=run.rarity)
    await run.step(Step.QUOTE_EVIDENCE, reason=f"{failed} draft(s) failed the checks", filled_a_gap=gap)
    return closest


async def with_sparse_passages(run: QuestionRun, passages: list[Passage]) -> list[Passage]:
    """Passages from the sparse set (facts stated nowhere else) added to the evidence.

    They are appended, so the new generate prompt starts with the whole of the last one and
    the LLM server resumes from its prompt cache, as long as they add at most
    ``sparse_tokens`` (estimated) to the prompt: the limit keeps the prompt inside the LLM's
    window. When not even the first fits, the new passages replace the lowest-ranked ones.
    """
    extra = await run.retrieve_and_grade([run.question], "sparse", step=Step.SPARSE_FALLBACK)
    known = {p.chunk.chunk_id for p in passages}
    room = max(1, run.agent.max_passages // 4)
    new = [p for p in extra if p.chunk.chunk_id not in known][:room]
    appended: list[Passage] = []
    growth = 0
    for passage in new:
        growth += estimated_llm_tokens(number_passages([passage]))
        if growth > run.agent.settings.sparse_tokens:
            break
        appended.append(passage)
    if appended or not new:
        return passages + appended
    ranked = sorted(passages, key=lambda p: -p.score)[: max(len(passages) - len(new), 1)]
    return [p for p in passages if p in ranked] + new


_FINISHED = re.compile(r"[.!?:)\]`\"'’”]\s*$")


def _cut_off(answer: str, tokens: dict[str, int], limit: int) -> bool:
    """Whether ``answer`` stops where the model reached its token ``limit``: its reply used every
    token allowed (when the LLM reports its tokens), else its text ends in the middle of a sentence."""
    used = tokens.get("completion", 0)
    if used:
        return used >= limit
    return bool(answer.strip()) and not _FINISHED.search(answer)
