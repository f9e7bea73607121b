"""The answering agent: one DSPy Module with explicit, async control flow.

understand (condense, classify_query, review_query: one LLM call; skipped on a conversation's
  first message unless the service asks for it, see ``agent.understand``)
  → classify_query by embedding (with a classifier: the nearest domain, no LLM call)
  → retrieve → grade_documents
  → (nothing kept: transform_query and retrieve again, at most ``max_rewrites`` times,
     then a "no documents" answer without calling generate)
  → evidence (the strongest units, reported before the LLM is called, so every door shows
     the documents' words at once)
  → generate (one or two cited sentences) → cite_figures (a figure the answer takes from a
     passage it does not cite gets that passage's citation) → compose (code keeps the
     sentences it can trace to the cited evidence and quotes the units that carry them,
     :mod:`pipeline.extractive`; "the documents do not say" ends here, with the nearest
     evidence) → supported (the LLM asked in the next turn of generate's conversation;
     usefulness is decided by code, and also asked of a server LLM at the same time)
  → (a draft fails: first the sparse-information fallback, else transform_query and retry;
     after two failed drafts, the evidence that best matches the question, quoted).

Every step is recorded in the trace and sent to ``on_status`` as it happens; the event that
reports an LLM call names it (``llm_call``) and carries its tokens. With ``on_token``, the
generate call streams: the draft's text goes to ``on_token`` as the LLM writes it (each new
draft numbered so that it replaces the text shown), then the composed answer as the last
token. Grading uses the retrieval scores, not the LLM. So an answer that passes costs two LLM
calls, three when the question is understood first, and never more than five. When the LLM
is down or too slow, the user gets a clear message and the sources retrieved so far.
Retrieval comes in as a plain async callable that returns numbered passages (evidence
units grouped by chunk, or whole chunks), so the module knows nothing of indexes.

Under the answer come further quoted evidence units (:mod:`pipeline.quotes`), never one the
answer quotes already.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

import dspy

from pipeline.answers import AgentAnswer, Citation, Outcome, Quote, StatusSink, TokenSink
from pipeline.citations import MARKERS_AFTER, citation_link, cited_numbers, has_markers, marker
from pipeline.context import Passage, Retrieved, quotable
from pipeline.domains import DomainChoice
from pipeline.errors import LLMUnavailableError, UnreadableReplyError
from pipeline.extractive import ComposedAnswer, compose_answer, in_the_documents_words, quoted_evidence
from pipeline.figure_citations import cite_figure_sources
from pipeline.quotes import choose_quotes
from pipeline.steps import Step
from pipeline.streaming import AnswerToken, StreamedField
from pipeline.text import analyze
from programs.agent_settings import AgentSettings
from programs.continuation import Conversation, continuing, current_adapter, reply_text
from programs.signatures import Generate, Supported, Transform, Understand, Useful

log = logging.getLogger(__name__)

Retriever = Callable[[Sequence[str], str | None, str], Awaitable[Retrieved]]
DomainClassifier = Callable[[str], Awaitable[DomainChoice]]

NO_DOCUMENTS = "I could not find anything in the documents that answers this question."
# Leads for the evidence quoted when no draft could be verified. Where every failed draft put
# forward a figure or a name its sources do not state, the model filled a gap: the documents do
# not say it. Any other failure (a vague sentence, a figure from the wrong column, a claim the
# grounding check refused) says nothing of the documents, only that no short answer passed, and
# the lead says just that. Where code finds what the question names (a row by its label, a share
# it divides), the evidence is led by "The documents say:" (:func:`pipeline.extractive.quoted_evidence`).
NOT_CLEARLY_SAID = (
    "The documents do not say this clearly enough for a short answer. What they say that comes closest:"
)
NOT_VERIFIED = "I could not verify a short answer to this. What the documents say that comes closest:"
MAX_FAILED_ANSWERS = 2  # drafts whose checks failed before the best evidence is quoted instead
MAX_LLM_CALLS = 5  # a retry that would take more is not started: the evidence is quoted instead
EVIDENCE_PREVIEW = 3  # units shown as soon as the evidence is found
LLM_UNAVAILABLE = (
    "The language model is not available right now, so I cannot write an answer. These sources look relevant:"
)

MAX_APPENDED_MARKERS = 3  # citations added for an answer that declared its sources but cited none inline


def number_passages(passages: Sequence[Passage]) -> str:
    """The passages as the generate step reads them: ``[n] title (period) — heading, p. x`` then the text."""
    return "\n\n".join(f"{marker(n)} {p.evidence_label()}\n{p.text}" for n, p in enumerate(passages, start=1))


_ANSWER_FIELD = re.compile(r'"answer"\s*:\s*"((?:[^"\\]|\\.)*)')
# A sentence ends where text goes on after it: the reply was cut, so its last words are not one.
_LAST_SENTENCE_END = re.compile(rf"^.*[.!?](?:{MARKERS_AFTER.pattern})?(?=\s)", re.DOTALL)


def answer_of_a_cut_reply(reply: str) -> str:
    """The whole sentences of the ``answer`` field of a JSON reply cut off mid-way (the model
    reached its token limit: a long list of figures); empty when there is none.

    Seen on SEC dev (a question on debt across quarters): the reply ran to the 400-token limit,
    the JSON never closed, and the user was told the language model was not available.
    """
    found = _ANSWER_FIELD.search(reply)
    if found is None:
        return ""
    text = found.group(1).removesuffix("\\")
    try:
        text = json.loads(f'"{text}"')
    except json.JSONDecodeError:
        return ""
    whole = _LAST_SENTENCE_END.match(text)
    return whole.group().strip() if whole else ""


def estimated_llm_tokens(text: str) -> int:
    """An upper estimate of ``text``'s length in LLM tokens, without the LLM's tokenizer.

    Tokenizers like Qwen's give each digit a token of its own, so tables of figures cost far
    more tokens per character than prose: a digit counts one, any other 1.8 characters one.
    Over the SEC filings' evidence passages this overestimates every passage, by 7 % at least
    and about 60 % for a typical one; one rate for every character, low enough for tables
    (1.4 characters a token), would count prose 2.5 times over.
    """
    digits = sum(c.isdigit() for c in text)
    return digits + math.ceil((len(text) - digits) / 1.8)


def cited_passages(passages: Sequence[Passage], answer: str) -> list[Passage]:
    """The passages the answer cites by number; all of them when it cites none that exist.

    The grounding check is asked about these: the claim must stand on what it cites.
    """
    cited = cited_numbers(answer, len(passages))
    chosen = [p for n, p in enumerate(passages, start=1) if n in cited]
    return chosen or list(passages)


def with_citation_markers(answer: str, sources: Sequence[int], passage_texts: Sequence[str]) -> str:
    """The answer with ``[n]`` markers appended for its declared sources when it has none inline.

    Small models often name their sources in the structured field but forget the inline
    markers; the markers are what ties an answer to its citations. A model that declares more
    than ``MAX_APPENDED_MARKERS`` sources (often all of them) gets the ones whose words the
    answer shares most (none that shares no word), so that a citation still points at what the
    answer rests on.
    """
    if has_markers(answer):
        return answer
    numbers = sorted({n for n in sources if 1 <= n <= len(passage_texts)})
    if len(numbers) > MAX_APPENDED_MARKERS:
        said = set(analyze(answer))
        shared = {n: len(said & set(analyze(passage_texts[n - 1]))) for n in numbers}
        ranked = sorted(numbers, key=lambda n: (-shared[n], n))
        numbers = sorted(
            [n for n in ranked if shared[n]][:MAX_APPENDED_MARKERS] or ranked[:MAX_APPENDED_MARKERS]
        )
    return answer.rstrip() + " " + "".join(marker(n) for n in numbers) if numbers else answer


def citations_for(
    passages: Sequence[Passage], answer: str | None = None, url_prefixes: Mapping[str, str] = {}
) -> list[Citation]:
    """Citations of the passages the answer cites (all of them if it cites none or there is no answer)."""
    chosen = {
        p.chunk.chunk_id for p in (cited_passages(passages, answer) if answer is not None else passages)
    }
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
        if p.chunk.chunk_id in chosen
    ]


def quotes_for(
    passages: Sequence[Passage],
    answer: str | None = None,
    url_prefixes: Mapping[str, str] = {},
    already_quoted: Collection[str] = (),
) -> list[Quote]:
    """The evidence to quote under an answer (the closest evidence when there is no answer),
    without the units the answer's text quotes already."""
    cited = cited_numbers(answer, len(passages)) if answer is not None else set()
    quotes = []
    for candidate in choose_quotes(answer, passages, cited):
        if candidate.text in already_quoted:
            continue
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
    """The self-correcting answering loop; see the module docstring."""

    def __init__(
        self,
        domains: dict[str, str],
        glossary: str = "",
        settings: AgentSettings = AgentSettings(),
        *,
        max_passages: int = 8,
        llm_timeout_s: float = 120.0,
        concurrent_checks: bool = False,
        url_prefixes: Mapping[str, str] = {},
        understand_first_turn: bool = True,
        classify: DomainClassifier | None = None,
    ) -> None:
        """``max_passages`` caps the passages a retrieval keeps; ``llm_timeout_s`` bounds one LLM
        call; ``concurrent_checks`` runs both answer checks at once (a server LLM serves them in
        parallel). With ``classify``, every question is placed in a domain by that classifier
        (the nearest domain by embedding) instead of by the understanding call."""
        super().__init__()
        self.domains = domains
        self.understand_first_turn = understand_first_turn
        self.classify = classify
        self.glossary = glossary
        self.settings = settings
        self.max_passages = max_passages
        self.llm_timeout_s = llm_timeout_s
        self.concurrent_checks = concurrent_checks
        self.url_prefixes = dict(url_prefixes)
        self.understand = dspy.Predict(Understand)
        self.transform_query = dspy.Predict(Transform)
        self.generate = dspy.Predict(Generate)
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
    ) -> AgentAnswer:
        run = _Run(self, retrieve, on_status, on_token)
        try:
            return await run.answer(message, history, sparse_available)
        except LLMUnavailableError as exc:
            await run.step(Step.LLM_UNAVAILABLE, error=str(exc))
            if not run.best:
                retrieved = await retrieve([run.question or message], run.domain, "hybrid")
                run.best = _grade(retrieved.passages, self.settings.grade_threshold)
            return run.result(LLM_UNAVAILABLE, "llm_unavailable", run.best)
        finally:
            run.stop_widening()


class _Run:
    """The state of one question going through the loop."""

    def __init__(
        self,
        agent: AnswerAgent,
        retrieve: Retriever,
        on_status: StatusSink | None,
        on_token: TokenSink | None = None,
    ) -> None:
        self.agent = agent
        self.retrieve = retrieve
        self.on_status = on_status
        self.on_token = on_token
        self.drafts = 0
        self.streamed = False  # whether any draft's text reached the token sink
        self.calls_made = 0
        self.trace: list[dict[str, Any]] = []
        self.question = ""
        self.domain: str | None = None
        self.best: list[Passage] = []
        # The latest retrieval's evidence beyond the LLM's budget, selected while the LLM reads.
        self.widen: Callable[[], Awaitable[list[Passage]]] | None = None
        self.widening: asyncio.Task[list[Passage]] | None = None
        self.more: list[Passage] = []
        self.generated: Conversation | None = None  # the last generate call, which the check continues
        self.verdicts: dict[str, str | None] = {"supported": None, "useful": None}
        self.started = time.perf_counter()
        self.llm_calls: list[tuple[str, dict[str, int]]] = []  # made, not yet reported by a step

    async def step(self, name: Step, **details: Any) -> None:
        event = {"step": name, "t": round(time.perf_counter() - self.started, 3), **details}
        if self.llm_calls:  # the first step after an LLM call reports it
            event["llm_call"], event["tokens"] = self.llm_calls.pop(0)
        self.trace.append(event)
        if self.on_status is not None:
            await self.on_status(event)

    async def call(
        self,
        name: str,
        predictor: dspy.Predict,
        stream: str | None = None,
        raw: list[str] | None = None,
        continues: Conversation | None = None,
        **inputs: Any,
    ) -> dspy.Prediction:
        """One LLM call, reported by the next step; with ``stream`` (an output field) and a token
        sink, that field streams and ``raw`` receives the reply's text as written; with
        ``continues``, the call is the next turn of that conversation."""
        prediction, tokens = await self._ask(predictor, stream, inputs, raw, continues)
        self.llm_calls.append((name, tokens))
        self.calls_made += 1
        return prediction

    async def _ask(
        self,
        predictor: dspy.Predict,
        stream: str | None,
        inputs: dict[str, Any],
        raw: list[str] | None = None,
        continues: Conversation | None = None,
    ) -> tuple[dspy.Prediction, dict[str, int]]:
        """The prediction and the tokens it used, or :class:`LLMUnavailableError`."""
        sink = self.on_token
        if stream is not None and sink is not None:
            reply = self._streaming(predictor, stream, sink, inputs, raw if raw is not None else [])
        elif continues is not None:
            reply = _continuing(predictor, continues, inputs)
        else:
            reply = predictor.acall(**inputs)
        try:
            with dspy.track_usage() as usage:  # this call's tokens only (a contextvar: safe per task)
                prediction = await asyncio.wait_for(reply, timeout=self.agent.llm_timeout_s)
        # The message reaches clients (the trace, chat replies): it names what went wrong, never
        # the server's address or model; the log has the details.
        except TimeoutError as exc:
            raise LLMUnavailableError(
                f"no answer from the language model in {self.agent.llm_timeout_s:g} s"
            ) from exc
        except _unavailable_errors() as exc:
            log.warning("the language model cannot be reached: %s", exc)
            raise LLMUnavailableError("the language model cannot be reached") from exc
        except _parse_errors() as exc:
            log.warning("the language model's reply could not be read: %s", exc)
            raise UnreadableReplyError(
                "the language model's reply could not be read", getattr(exc, "lm_response", None) or ""
            ) from exc
        except _too_long_errors() as exc:
            log.warning("the prompt is longer than the language model's window: %s", exc)
            raise LLMUnavailableError("the prompt is longer than the language model's window") from exc
        by_model = usage.get_total_tokens().values()
        tokens = {
            "prompt": sum(u.get("prompt_tokens") or 0 for u in by_model),
            "completion": sum(u.get("completion_tokens") or 0 for u in by_model),
        }
        return prediction, tokens

    async def _streaming(
        self, predictor: dspy.Predict, field: str, sink: TokenSink, inputs: dict[str, Any], raw: list[str]
    ) -> dspy.Prediction:
        """``predictor`` with the LLM's reply streamed, ``field``'s text sent to ``sink`` as it comes
        and every piece of the reply appended to ``raw``.

        DSPy sends the raw chunks of a streamed completion to ``send_stream``; the reply is
        still parsed whole at the end, so the prediction is the same as without streaming.
        """
        import anyio

        self.drafts += 1
        draft = self.drafts
        decoded = StreamedField(field)
        send, receive = anyio.create_memory_object_stream[Any](64)

        async def relay() -> None:
            async with receive:
                async for chunk in receive:
                    piece = _chunk_text(chunk)
                    raw.append(piece)
                    if text := decoded.feed(piece):
                        self.streamed = True
                        await sink(AnswerToken(text, decoded.value, draft))

        relaying = asyncio.create_task(relay())
        try:
            async with send:  # closed when the call ends, which ends the relay
                with dspy.context(send_stream=send):
                    return await predictor.acall(**inputs)
        finally:
            await relaying

    def result(
        self,
        text: str,
        outcome: Outcome,
        passages: Sequence[Passage],
        answer: str | None = None,
        already_quoted: Collection[str] = (),
    ) -> AgentAnswer:
        """The answer with the citations and quoted evidence of ``passages`` (those ``answer`` cites)."""
        prefixes = self.agent.url_prefixes
        return AgentAnswer(
            text,
            outcome,
            citations_for(passages, answer, prefixes),
            dict(self.verdicts),
            self.question,
            self.domain,
            self.trace,
            quotes_for(passages, answer, prefixes, already_quoted),
            [f"{p.label()}\n{p.text}" for p in passages],
        )

    async def composed_result(
        self, composed: ComposedAnswer, outcome: Outcome, passages: Sequence[Passage]
    ) -> AgentAnswer:
        """The composed answer as the result; a streaming door gets it as the last draft, which
        replaces the model's own text shown while it was written."""
        if self.on_token is not None and self.streamed:
            self.drafts += 1
            await self.on_token(AnswerToken(composed.text, composed.text, self.drafts, composed=True))
        quoted = {q.text for q in composed.quotes}
        return self.result(composed.text, outcome, passages, composed.text, quoted)

    async def answer(
        self, message: str, history: Sequence[tuple[str, str]], sparse_available: bool
    ) -> AgentAnswer:
        settings = self.agent.settings
        if history or self.agent.understand_first_turn:
            variant = await self._understand(message, history)
            queries = [self.question, variant]
        else:
            self.question = message
            queries = [message]
            await self.step(Step.UNDERSTAND_SKIPPED, reason="a first question is searched as typed")
        if self.agent.classify is not None:
            await self._classify(self.agent.classify)
        rewrites = 0
        passages = await self._retrieve_and_grade(queries, "hybrid")
        while not passages:
            if rewrites >= settings.max_rewrites:
                return self.result(NO_DOCUMENTS, "no_documents", [])
            queries = [await self._transform("no passage passed the relevance threshold")]
            rewrites += 1
            passages = await self._retrieve_and_grade(queries, "hybrid")

        await self._show_evidence(passages)
        sparse_tried = not sparse_available
        generated: set[frozenset[str]] = set()
        failed = 0
        every_draft_filled_a_gap = True
        while True:
            attempt = frozenset(piece.key for p in passages for piece in p.pieces)
            if attempt in generated:  # temperature 0: the same passages would give the same answer
                await self.step(Step.GENERATE_SKIPPED, reason="these passages were already tried")
            else:
                generated.add(attempt)
                self.start_widening()
                reply = await self._cite_figure_sources(await self._generate(passages), passages)
                evidence = quotable(passages, await self.wider_evidence())
                composed = await self._compose(reply, evidence, read=len(passages))
                if composed.kind == "not_in_documents":
                    return await self.composed_result(composed, "not_in_documents", evidence)
                if composed.kind == "answer" and await self._checks(composed, passages):
                    return await self.composed_result(composed, "answered", evidence)
                failed += 1
                every_draft_filled_a_gap &= composed.filled_a_gap
                if failed >= MAX_FAILED_ANSWERS:
                    break
            draft_calls = 3 if self.agent.concurrent_checks else 2  # generate, supported (and useful)
            if not sparse_tried and self.calls_made + draft_calls <= MAX_LLM_CALLS:
                sparse_tried = True
                passages = await self._add_sparse(passages)
                continue
            if rewrites >= settings.max_rewrites or self.calls_made + 1 + draft_calls > MAX_LLM_CALLS:
                break
            rewrites += 1
            problem = "the answer was not supported by the passages or did not answer the question"
            retried = await self._retrieve_and_grade([await self._transform(problem)], "hybrid")
            passages = retried or passages
        read = self.best or passages
        best = quotable(read, await self.wider_evidence())
        gap = bool(failed) and every_draft_filled_a_gap
        closest = quoted_evidence(
            self.question, best, NOT_CLEARLY_SAID if gap else NOT_VERIFIED, read=len(read)
        )
        await self.step(Step.QUOTE_EVIDENCE, reason=f"{failed} draft(s) failed the checks", filled_a_gap=gap)
        return await self.composed_result(closest, "unverified", best)

    def start_widening(self) -> None:
        """Starts the latest retrieval's wider selection (:attr:`Retrieved.widen`), once the
        evidence is shown: it runs while the LLM reads."""
        if self.widen is not None:
            self.widening = asyncio.create_task(self.widen())
            self.widen = None

    async def wider_evidence(self) -> list[Passage]:
        """The latest retrieval's wider selection, once it is ready."""
        self.start_widening()
        if self.widening is not None:
            self.more = await self.widening
            self.widening = None
        return self.more

    def stop_widening(self) -> None:
        """Drops a wider selection no answer will quote (a new retrieval's, or the run is over)."""
        self.widen = None
        if self.widening is not None:
            self.widening.cancel()
            self.widening = None

    async def _show_evidence(self, passages: list[Passage]) -> None:
        """The strongest evidence, as soon as it is found (before the LLM has read its prompt):
        every door shows it while the answer is written, so the user reads the documents' words
        within a second or two; the answer replaces it when ready."""
        quotes = quotes_for(passages, self.question, self.agent.url_prefixes)[:EVIDENCE_PREVIEW]
        await self.step(
            Step.EVIDENCE,
            quotes=[
                {"n": q.n, "text": q.readable(), "source": q.source, "pages": list(q.pages), "link": q.link}
                for q in quotes
            ],
        )

    async def _compose(self, reply: str, passages: list[Passage], read: int) -> ComposedAnswer:
        """The extractive-first answer (:mod:`pipeline.extractive`) from ``passages``, the LLM
        having read the first ``read``; its making in the trace."""
        composed = compose_answer(
            self.question, reply, passages, check_figures=self.agent.settings.figure_check, read=read
        )
        await self.step(
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

    async def _generate(self, passages: list[Passage]) -> str:
        inputs = {
            "question": self.question,
            "passages": number_passages(passages),
            "glossary": self.agent.glossary,
        }
        raw: list[str] = []
        try:
            reply = await self.call("generate", self.agent.generate, stream="answer", raw=raw, **inputs)
        except UnreadableReplyError as exc:
            answer = answer_of_a_cut_reply(exc.reply)
            if not answer:
                raise
            # The model wrote past its token limit: its whole sentences are still an answer to check.
            self.calls_made += 1  # made, though `call` did not count it: its reply did not parse
            self.generated = Conversation.of_call(self.agent.generate, inputs, exc.reply)
            await self.step(Step.GENERATE, answer=answer, sources=[], passages=len(passages), cut_off=True)
            return answer
        written = "".join(raw) or reply_text(self.agent.generate, reply)
        self.generated = Conversation.of_call(self.agent.generate, inputs, written)
        answer = with_citation_markers(reply.answer, reply.sources, [p.text for p in passages])
        await self.step(Step.GENERATE, answer=answer, sources=reply.sources, passages=len(passages))
        return answer

    async def _cite_figure_sources(self, answer: str, passages: list[Passage]) -> str:
        """The answer with a citation added for each figure it takes from a passage it does not
        cite (:mod:`pipeline.figure_citations`); unchanged without the figure check."""
        if not self.agent.settings.figure_check:
            return answer
        evidence = [_evidence_text(p) for p in passages]
        cited, added = cite_figure_sources(answer, evidence, cited_numbers(answer, len(passages)))
        if added:
            await self.step(
                Step.CITE_FIGURES, added=[{"figure": a.figure, "passage": a.passage} for a in added]
            )
        return cited

    async def _add_sparse(self, passages: list[Passage]) -> list[Passage]:
        """Passages from the sparse set (facts stated nowhere else) added to the evidence.

        They are appended, so the new generate prompt starts with the whole of the last one and
        the LLM server resumes from its prompt cache, reading only the new passages, as long as
        they add at most ``sparse_tokens`` (estimated) to the prompt: the limit keeps the prompt
        inside the LLM's window. When not even the first fits, the new passages replace the
        lowest-ranked ones instead (the whole prompt is read again).
        """
        extra = await self._retrieve_and_grade([self.question], "sparse", step=Step.SPARSE_FALLBACK)
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

    async def _understand(self, message: str, history: Sequence[tuple[str, str]]) -> str:
        """One call: the standalone question, its domain and a search variant. Returns the variant.

        Without history the message is the question as it stands: a small model asked to
        repeat it may still change it.
        """
        # Placed by embedding instead, the question's domain is not asked of the LLM (fewer prompt tokens).
        domains = self.agent.domains if self.agent.classify is None else {}
        names = list(domains)
        listing = "\n".join(f"{name}: {description}" for name, description in domains.items())
        turns = "\n".join(f"{role}: {text}" for role, text in history)
        reply = await self.call(
            "understand", self.agent.understand, history=turns, message=message, domains=listing or "general"
        )
        standalone = reply.standalone_question.strip()
        self.question = standalone if history and standalone else message
        if history:
            await self.step(Step.CONDENSE, message=message, question=self.question)
        if names:
            chosen = reply.domain.strip().strip("'\"").lower()
            self.domain = chosen if chosen in names else ("general" if "general" in names else None)
            await self.step(Step.CLASSIFY_QUERY, domain=self.domain, raw=reply.domain)
        await self.step(Step.REVIEW_QUERY, variant=reply.rephrased)
        return reply.rephrased

    async def _classify(self, classify: DomainClassifier) -> None:
        """Place the (standalone) question in the nearest domain, without an LLM call."""
        choice = await classify(self.question)
        self.domain = choice.domain
        details: dict[str, Any] = {"domain": choice.domain, "method": "embedding"}
        if choice.domain is None:
            details["note"] = "no domains configured: every collection weighs 1"
        else:
            details["similarities"] = dict(choice.similarities)
        await self.step(Step.CLASSIFY_QUERY, **details)

    async def _transform(self, problem: str) -> str:
        tried = "\n".join(
            dict.fromkeys(q for e in self.trace if e["step"] == Step.RETRIEVE for q in e["queries"])
        )
        rewritten = (
            await self.call(
                "transform_query",
                self.agent.transform_query,
                question=self.question,
                problem=problem,
                tried=tried,
            )
        ).rewritten
        await self.step(Step.TRANSFORM_QUERY, query=rewritten, problem=problem)
        return rewritten

    async def _retrieve_and_grade(
        self, queries: list[str], mode: str, step: Step = Step.RETRIEVE
    ) -> list[Passage]:
        retrieved = await self.retrieve(queries, self.domain, mode)
        if retrieved.widen is not None:
            self.stop_widening()
            self.widen = retrieved.widen
        await self.step(
            step,
            queries=queries,
            mode=mode,
            candidates=[[p.chunk.chunk_id, round(p.score, 4)] for p in retrieved.passages],
            **retrieved.details,
        )
        kept = _grade(retrieved.passages, self.agent.settings.grade_threshold)
        if kept and not self.best:
            self.best = kept
        await self.step(
            Step.GRADE_DOCUMENTS,
            threshold=self.agent.settings.grade_threshold,
            kept=[p.chunk.chunk_id for p in kept],
        )
        return kept

    async def _checks(self, composed: ComposedAnswer, passages: list[Passage]) -> bool:
        """The grounding and usefulness checks of a composed answer.

        Code has checked it already (:mod:`pipeline.extractive`): each figure and name stated by
        the evidence it cites, no "yes" against a negation, something said that the question did
        not. The LLM is then asked whether the reply is supported, as the next turn of the
        generate call's conversation (the evidence is in the server's prompt cache); when code
        dropped sentences, the reply that conversation holds is no longer the answer, and the
        code's verdict stands; so it does, on the embedded model, when the answer is in the cited
        passages' own words (:func:`~pipeline.extractive.in_the_documents_words`: grounded by
        construction, where the 1.5B judge rejected correct ones). Usefulness is the code's
        verdict; on a server LLM (``concurrent_checks``) the LLM is asked both, at the same time:
        a strong model judges well and its calls cost little.
        """
        assert self.generated is not None, "the checks follow a generate call"
        numbers = {p.chunk.chunk_id: n for n, p in enumerate(passages, start=1)}
        cited = cited_passages(passages, composed.kept)
        if composed.dropped:
            self.verdicts = {"supported": "code", "useful": "code"}
            await self.step(
                Step.SUPPORTED, verdict="code", passages=len(cited), dropped=len(composed.dropped)
            )
            self.best = passages
            return True
        shown = [text for p in cited for text in (p.chunk.title, *p.chunk.heading_path, p.chunk.text)]
        # On the embedded model only: a server LLM is a judge worth asking.
        if not self.agent.concurrent_checks and in_the_documents_words(composed.kept, self.question, shown):
            self.verdicts = {"supported": "code", "useful": "code"}
            await self.step(
                Step.SUPPORTED, verdict="code", passages=len(cited), reason="in the passages' own words"
            )
            await self.step(Step.USEFUL, verdict="code")
            self.best = passages
            return True
        supported_inputs = {"cited": ", ".join(marker(numbers[p.chunk.chunk_id]) for p in cited)}
        useful = "code"
        if self.agent.concurrent_checks:
            useful_inputs = {"question": self.question, "answer": composed.kept}
            replies = await asyncio.gather(
                self._ask(self.agent.supported, None, supported_inputs, continues=self.generated),
                self._ask(self.agent.useful, None, useful_inputs),
                return_exceptions=True,
            )
            for reply in replies:
                if isinstance(reply, BaseException):
                    raise reply
            (supported_reply, supported_tokens), (useful_reply, useful_tokens) = replies  # type: ignore[misc]
            self.llm_calls += [("supported", supported_tokens), ("useful", useful_tokens)]
            self.calls_made += 2
            supported, useful = supported_reply.supported, useful_reply.useful
        else:
            supported = (
                await self.call(
                    "supported", self.agent.supported, continues=self.generated, **supported_inputs
                )
            ).supported
        self.verdicts = {"supported": supported, "useful": useful}
        await self.step(Step.SUPPORTED, verdict=supported, passages=len(cited))
        if supported == "yes" or self.agent.concurrent_checks:
            await self.step(Step.USEFUL, verdict=useful)
        if supported == "yes" and useful in ("yes", "code"):
            self.best = passages
            return True
        return False


async def _continuing(
    predictor: dspy.Predict, earlier: Conversation, inputs: dict[str, Any]
) -> dspy.Prediction:
    """``predictor``'s call as the next turn of ``earlier`` (through the adapter in use)."""
    with dspy.context(adapter=continuing(current_adapter(), earlier)):
        return await predictor.acall(**inputs)


def _evidence_text(passage: Passage) -> str:
    """A passage as the figure check reads it: its label (title, period, page) and its text."""
    return f"{passage.evidence_label()}\n{passage.text}"


def _grade(passages: Sequence[Passage], threshold: float | None) -> list[Passage]:
    """The passages at or above the grade threshold, if one is set (the context's token budget
    already bounds them)."""
    return [p for p in passages if threshold is None or p.score >= threshold]


def _chunk_text(chunk: Any) -> str:
    """The text of one streamed completion chunk (anything else DSPy sends carries none)."""
    choices = getattr(chunk, "choices", None)
    if not choices:
        return ""
    return getattr(choices[0].delta, "content", None) or ""


def _unavailable_errors() -> tuple[type[BaseException], ...]:
    """LM errors meaning the server is down, overloaded or too slow (not a bad request)."""
    from dspy.utils.exceptions import LMRateLimitError, LMServerError, LMTimeoutError, LMTransportError

    return (OSError, LMTransportError, LMTimeoutError, LMServerError, LMRateLimitError)


def _too_long_errors() -> tuple[type[BaseException], ...]:
    """A prompt the model cannot read whole (its context window is too small for it)."""
    from dspy.utils.exceptions import ContextWindowExceededError

    return (ContextWindowExceededError,)


def _parse_errors() -> tuple[type[BaseException], ...]:
    """A reply that does not fit the signature's output fields, even after DSPy's own fallbacks."""
    from dspy.utils.exceptions import AdapterParseError

    return (AdapterParseError,)
