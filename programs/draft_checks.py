"""Whether a composed draft passes: code's checks, and the LLM's when ``agent.llm_checks`` asks."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pipeline.answering.composed import ComposedAnswer
from pipeline.answering.sentences import in_the_documents_words
from pipeline.citations import marker
from pipeline.retrieval.context import Passage
from pipeline.steps import Step
from programs.agent import cited_passages
from programs.continuation import Conversation

if TYPE_CHECKING:  # the run imports its drafting: only the type goes the other way
    from programs.question_run import QuestionRun


class DraftChecks:
    """The checks of one question's drafts; the verdicts go to the run (its trace and answer)."""

    def __init__(self, run: QuestionRun) -> None:
        self.run = run
        self.agent = run.agent

    async def passes(
        self, composed: ComposedAnswer, passages: list[Passage], generated: Conversation | None
    ) -> bool:
        """Whether a composed answer passes. Code has checked it (:mod:`pipeline.answering.extractive`):
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
        assert generated is not None, "the checks follow a generate call"
        numbers = {p.chunk.chunk_id: n for n, p in enumerate(passages, start=1)}
        supported_inputs = {"cited": ", ".join(marker(numbers[p.chunk.chunk_id]) for p in cited)}
        useful_inputs = {"question": run.question, "answer": composed.kept}
        replies = await asyncio.gather(
            run.llm.ask(self.agent.supported, supported_inputs, continues=generated),
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
