"""The answering agent: one DSPy Module with explicit, async control flow, one LLM call on the
common path.

understand (by code: a follow-up is searched with the user's previous question; an LLM call
  condenses and rephrases instead when ``agent.understand`` is ``llm``)
  → classify_query by embedding (the nearest domain, no LLM call)
  → retrieve → grade_documents
  → (nothing kept: transform_query and retrieve again, at most ``max_rewrites`` times,
     then a "no documents" answer without calling generate)
  → evidence (the units that best answer the question, reported before the LLM is called, so
     every door shows the documents' words at once)
  → generate (the one call: a short, specific answer citing [n], the conversation in view)
  → cite_sentences (passage labels the draft wrote as headings removed; an answer citing nothing:
     each sentence cited to the passage carrying its words)
  → cite_figures (a figure taken from a passage the answer does not cite gets its citation)
  → compose (code keeps the sentences it can trace to the evidence and picks at most three
     quotes that answer, :mod:`pipeline.answering.extractive`; "the documents do not say" ends here,
     with the nearest evidence) → supported, useful (code's verdicts; the LLM is asked too
     only with ``agent.llm_checks``)
  → (a draft fails: the sparse-information fallback, else transform_query, and a second
     draft; after two failed drafts, the evidence that best answers the question, quoted).

Every step is recorded in the trace and sent to ``on_status`` as it happens; the event that
reports an LLM call names it (``llm_call``) and carries its tokens. With ``on_token``, the
generate call streams: the draft's text goes to ``on_token`` as the LLM writes it, then the
composed answer as the last token. An answer that passes costs one LLM call, and never more
than five. When the LLM is down or too slow, the user gets a clear message and the sources
retrieved so far. Retrieval comes in as a plain async callable that returns numbered passages,
so the module knows nothing of indexes.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence

import dspy

from pipeline.answering.answer_rules import AnswerRules
from pipeline.answering.quotes import QuoteCandidate, answering_quotes
from pipeline.answers import AgentAnswer, Citation, Quote, StatusSink, TokenSink
from pipeline.citations import MARKERS_AFTER, citation_link, cited_numbers, marker
from pipeline.errors import LLMUnavailableError
from pipeline.retrieval.context import Passage, Retrieved
from pipeline.retrieval.conversation import user_questions
from pipeline.retrieval.domains import DomainChoice
from pipeline.steps import Step
from programs.agent_settings import AgentSettings
from programs.llm_calls import LLMCalls
from programs.signatures import Generate, Supported, Transform, Understand, Useful

Retriever = Callable[[Sequence[str], str | None, str], Awaitable[Retrieved]]
DomainClassifier = Callable[[str], Awaitable[DomainChoice]]

NO_DOCUMENTS = "I could not find anything in the documents that answers this question."
# Leads for the evidence quoted when no draft could be verified. Where every failed draft put
# forward a figure or a name its sources do not state, the model filled a gap: the documents do
# not say it. Any other failure (a vague sentence, a claim the checks refused) says nothing of
# the documents, only that no short answer passed, and the lead says just that.
CLOSEST = "What they say that comes closest:"
NOT_CLEARLY_SAID = f"The documents do not say this clearly enough for a short answer. {CLOSEST}"
NOT_VERIFIED = (
    f"I could not verify a short answer to this. {CLOSEST.replace('they say', 'the documents say')}"
)
LLM_UNAVAILABLE = (
    "The language model is not available right now, so I cannot write an answer. These sources look relevant:"
)
MAX_FAILED_ANSWERS = 2  # drafts whose checks failed before the best evidence is quoted instead
MAX_LLM_CALLS = 5  # a retry that would take more is not started: the evidence is quoted instead
EVIDENCE_PREVIEW = 3  # units shown as soon as the evidence is found


def number_passages(passages: Sequence[Passage]) -> str:
    """The passages as the generate step reads them: ``[n] title (period) — heading, p. x`` then the text."""
    return "\n\n".join(f"{marker(n)} {p.evidence_label()}\n{p.text}" for n, p in enumerate(passages, start=1))


def conversation_text(history: Sequence[tuple[str, str]]) -> str:
    """The user's earlier questions, oldest first, one per line: what a follow-up may refer to.

    The answers are left out: the small model copied an earlier answer's wording ("The documents
    do not say.") as its answer to the follow-up, and the evidence it reads is the new search's.
    """
    return "\n".join(user_questions(history))


_ANSWER_FIELD = re.compile(r'"answer"\s*:\s*"((?:[^"\\]|\\.)*)')
# A sentence ends where text goes on after it: the reply was cut, so its last words are not one.
_LAST_SENTENCE_END = re.compile(rf"^.*[.!?](?:{MARKERS_AFTER.pattern})?(?=\s)", re.DOTALL)


def answer_of_a_cut_reply(reply: str) -> str:
    """The whole sentences of the ``answer`` field of a JSON reply cut off mid-way (the model
    reached its token limit: a long list of figures); empty when there is none."""
    found = _ANSWER_FIELD.search(reply)
    if found is None:
        return ""
    text = found.group(1).removesuffix("\\")
    try:
        text = json.loads(f'"{text}"')
    except json.JSONDecodeError:
        return ""
    return whole_sentences(text)


def whole_sentences(text: str) -> str:
    """``text`` up to the end of its last whole sentence (with the citations after it); empty
    when no sentence ends in it."""
    whole = _LAST_SENTENCE_END.match(text)
    return whole.group().strip() if whole else ""


def estimated_llm_tokens(text: str) -> int:
    """An upper estimate of ``text``'s length in LLM tokens, without the LLM's tokenizer.

    Tokenizers like Qwen's give each digit a token of its own, so tables of figures cost far
    more tokens per character than prose: a digit counts one, any other 1.8 characters one.
    """
    digits = sum(c.isdigit() for c in text)
    return digits + math.ceil((len(text) - digits) / 1.8)


def cited_passages(passages: Sequence[Passage], answer: str) -> list[Passage]:
    """The passages the answer cites by number; all of them when it cites none that exist."""
    cited = cited_numbers(answer, len(passages))
    chosen = [p for n, p in enumerate(passages, start=1) if n in cited]
    return chosen or list(passages)


def citations_for(
    passages: Sequence[Passage], numbers: set[int] | None = None, url_prefixes: Mapping[str, str] = {}
) -> list[Citation]:
    """Citations of the passages numbered ``numbers`` (all of them when None or empty)."""
    return [
        Citation(
            n,
            p.chunk.title,
            p.chunk.source,
            p.chunk.pages,
            p.chunk.heading_path,
            p.chunk.chunk_id,
            citation_link(p.chunk.source, p.chunk.pages, url_prefixes),
        )
        for n, p in enumerate(passages, start=1)
        if not numbers or n in numbers
    ]


def quotes_of(
    candidates: Sequence[QuoteCandidate], passages: Sequence[Passage], url_prefixes: Mapping[str, str] = {}
) -> list[Quote]:
    """The chosen units as quotes, each with its passage's source and the page it stands on."""
    quotes = []
    for candidate in candidates:
        chunk = passages[candidate.n - 1].chunk
        pages = (candidate.page, candidate.page) if candidate.page else chunk.pages
        quotes.append(
            Quote(
                candidate.n,
                candidate.text,
                chunk.source,
                pages,
                chunk.heading_path,
                chunk.chunk_id,
                candidate.table_header,
                citation_link(chunk.source, pages, url_prefixes),
            )
        )
    return quotes


class AnswerAgent(dspy.Module):
    """The answering loop; see the module docstring."""

    def __init__(
        self,
        domains: dict[str, str],
        glossary: str = "",
        settings: AgentSettings = AgentSettings(),
        *,
        max_passages: int,
        llm_timeout_s: float,
        url_prefixes: Mapping[str, str] = {},
        classify: DomainClassifier | None = None,
        rules: Sequence[AnswerRules] = (),
    ) -> None:
        """``max_passages`` caps the passages a retrieval keeps; ``llm_timeout_s`` bounds one LLM
        call. With ``classify``, every question is placed in a domain by that classifier (the
        nearest domain by embedding); else, with ``settings.understand`` = llm, by the LLM.
        ``rules`` are the answer rule packs in use (:mod:`pipeline.answering.answer_rules`)."""
        super().__init__()
        self.domains = domains
        self.classify = classify
        self.glossary = glossary
        self.settings = settings
        self.max_passages = max_passages
        self.llm_timeout_s = llm_timeout_s
        self.url_prefixes = dict(url_prefixes)
        self.rules = tuple(rules)
        self.understand = dspy.Predict(Understand)
        self.transform_query = dspy.Predict(Transform)
        self.generate = dspy.Predict(Generate, max_tokens=settings.answer_tokens)
        self.supported = dspy.Predict(Supported)
        self.useful = dspy.Predict(Useful)

    async def aforward(
        self,
        message: str,
        retrieve: Retriever,
        history: Sequence[tuple[str, str]] = (),
        on_status: StatusSink | None = None,
        sparse_available: bool = True,
        on_token: TokenSink | None = None,
        slot: asyncio.Semaphore | None = None,
    ) -> AgentAnswer:
        """The answer to ``message``. ``slot`` is the LLM's admission: the evidence is found and
        shown whatever the LLM is doing, and its calls wait there (the trace says queued)."""
        from programs.question_run import QuestionRun

        llm = LLMCalls(self.llm_timeout_s, on_token, slot)
        run = QuestionRun(self, retrieve, on_status, llm)
        llm.on_wait = lambda: run.step(Step.QUEUED, reason="the language model is answering other questions")
        try:
            return await run.answer(message, history, sparse_available)
        except LLMUnavailableError as exc:
            await run.step(Step.LLM_UNAVAILABLE, error=str(exc))
            if not run.best:
                retrieved = await retrieve([run.question or message], run.domain, "hybrid")
                run.best = graded(retrieved.passages, self.settings.grade_threshold)
                run.rarity = retrieved.details.get("rarity", {})
            quotes = answering_quotes(run.question or message, "", run.best, rarity=run.rarity)
            return run.result(LLM_UNAVAILABLE, "llm_unavailable", run.best, quotes)


def graded(passages: Sequence[Passage], threshold: float | None) -> list[Passage]:
    """The passages at or above the grade threshold, if one is set (the context's token budget
    already bounds them)."""
    return [p for p in passages if threshold is None or p.score >= threshold]
