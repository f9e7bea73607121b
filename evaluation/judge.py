"""The answer judge: COS-Mix's five metrics, and citation precision, asked of an LLM.

Every metric is a share of yes verdicts, one verdict per item, each asked in its own short
call. Asked for a list of verdicts in one call, the embedded 1.5B model answered by position,
not by item (``no, yes, no, no, …`` whatever the items: 20 SEC dev answers, 23 November
2026). One call per item costs little: the shared part of the prompt (the context, the
question) comes first and the item last, so llama.cpp reuses the prompt it has already read,
and a server LLM takes the calls of one metric at once (``concurrent``).

- faithfulness: the answer's sentences (its claims) that the context it was given supports.
  The judge never sees the gold answer here.
- answer relevancy: the answer's sentences that help answer the question.
- contextual relevancy: the context's passages relevant to the question (judged per passage,
  not per statement, to keep the calls few).
- contextual precision: the passages useful for reaching the gold answer, weighted by rank
  (COS-Mix, after DeepEval): ``(1/R) Σ_k rel_k · precision@k``, 0 when none is useful.
- contextual recall: the gold answer's sentences that the context supports (uses the gold
  answer, as COS-Mix defines it).
- citation precision: the (sentence, cited passage) pairs where the passage states the sentence.

An answer that is not an answer (the agent found nothing, or could not verify one) has no
answer-level scores. A judge reply that cannot be read, or a judge that does not answer, is
a judge error for that metric, counted and reported, never a score.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import dspy

from pipeline.citations import marked_numbers, marker, strip_markers
from pipeline.retrieval.ordering import split_sentences

Verdict = Literal["yes", "no"]
_MIN_STATEMENT_CHARS = 12  # shorter pieces ("Yes.", a bare citation) are not claims


class StatementSupported(dspy.Signature):
    """Does the context support the statement? Answer "yes" if the context states it or it follows
    directly from what the context states; "no" if the context does not say it or says otherwise.
    Figures must match exactly."""

    context: str = dspy.InputField(desc="passages from documents")
    statement: str = dspy.InputField()
    verdict: Verdict = dspy.OutputField()


class RelevantToQuestion(dspy.Signature):
    """Does the text help answer the question? Answer "yes" if it gives information the question
    asks for, "no" if it is off the question."""

    question: str = dspy.InputField()
    text: str = dspy.InputField()
    verdict: Verdict = dspy.OutputField()


class UsefulForReference(dspy.Signature):
    """Does the passage contain information used in the reference answer to the question? Answer
    "yes" or "no"."""

    question: str = dspy.InputField()
    reference_answer: str = dspy.InputField(desc="the correct answer")
    passage: str = dspy.InputField()
    verdict: Verdict = dspy.OutputField()


@dataclass(frozen=True, slots=True)
class JudgeCase:
    """One answer to judge: the question, the answer, the numbered context it was written from
    (``context[n-1]`` is passage ``[n]``), whether it is an answer at all, and the gold answer
    (``reference``) when there is one."""

    question: str
    answer: str
    context: Sequence[str]
    answered: bool = True
    reference: str | None = None


@dataclass(slots=True)
class Judgement:
    """The scores (None: not applicable) and what the judge said, item by item."""

    scores: dict[str, float | None] = field(default_factory=dict)
    verdicts: dict[str, list[str]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


JUDGED_METRICS = (
    "contextual_precision",
    "contextual_recall",
    "contextual_relevancy",
    "faithfulness",
    "answer_relevancy",
    "citation_precision",
)


def statements(text: str) -> list[str]:
    """The sentences of ``text`` as claims to judge, citation markers removed."""
    found = []
    for sentence in split_sentences(text):
        plain = strip_markers(sentence)
        if len(plain) >= _MIN_STATEMENT_CHARS and any(c.isalpha() for c in plain):
            found.append(plain)
    return found


def citation_pairs(answer: str, passages: int) -> list[tuple[str, int]]:
    """Each (sentence, passage number) that the answer cites inline, for numbers that exist.

    Citations standing alone after a sentence ("… in 2023. [2]") belong to that sentence.
    """
    cited: list[tuple[str, list[int]]] = []
    for sentence in split_sentences(answer):
        plain = strip_markers(sentence)
        numbers = marked_numbers(sentence, passages)
        if any(c.isalpha() for c in plain) or not cited:
            cited.append((plain, numbers))
        else:
            cited[-1][1].extend(numbers)
    return [(plain, n) for plain, numbers in cited if plain for n in dict.fromkeys(numbers)]


def share(verdicts: Sequence[str]) -> float | None:
    """The share of yes verdicts (None for no items)."""
    return sum(v == "yes" for v in verdicts) / len(verdicts) if verdicts else None


def ranked_precision(verdicts: Sequence[str]) -> float:
    """Contextual precision: the mean of precision@k over the ranks k of useful passages."""
    useful, total = 0, 0.0
    for k, verdict in enumerate(verdicts, start=1):
        if verdict == "yes":
            useful += 1
            total += useful / k
    return total / useful if useful else 0.0


class AnswerJudge(dspy.Module):
    """Scores answers with the judge's three signatures; see the module docstring.

    ``concurrent``: ask the calls of one metric at once (a server LLM batches them; the
    embedded one answers one at a time and reuses the shared prompt best in order).
    """

    def __init__(self, concurrent: bool = False) -> None:
        super().__init__()
        self.concurrent = concurrent
        self.statement_supported = dspy.Predict(StatementSupported)
        self.relevant_to_question = dspy.Predict(RelevantToQuestion)
        self.useful_for_reference = dspy.Predict(UsefulForReference)

    async def ajudge(self, case: JudgeCase, metrics: Sequence[str] = JUDGED_METRICS) -> Judgement:
        """The judged ``metrics`` of ``case`` (run under the judge's ``dspy.context``)."""
        judgement = Judgement()
        claims = statements(case.answer) if case.answered else []
        passages = [f"{marker(n)} {text}" for n, text in enumerate(case.context, start=1)]
        context = "\n\n".join(passages)
        pairs = citation_pairs(case.answer, len(case.context)) if case.answered else []
        reference = statements(case.reference) if case.reference else []
        asks: dict[str, tuple[dspy.Predict, list[dict[str, str]]]] = {
            "faithfulness": (
                self.statement_supported,
                [{"context": context, "statement": claim} for claim in claims],
            ),
            "answer_relevancy": (
                self.relevant_to_question,
                [{"question": case.question, "text": claim} for claim in claims],
            ),
            "citation_precision": (
                self.statement_supported,
                [{"context": passages[n - 1], "statement": sentence} for sentence, n in pairs],
            ),
            "contextual_relevancy": (
                self.relevant_to_question,
                [{"question": case.question, "text": passage} for passage in passages],
            ),
            "contextual_precision": (
                self.useful_for_reference,
                [
                    {"question": case.question, "reference_answer": case.reference or "", "passage": passage}
                    for passage in passages
                ],
            ),
            "contextual_recall": (
                self.statement_supported,
                [{"context": context, "statement": sentence} for sentence in reference],
            ),
        }
        for metric in metrics:
            predictor, calls = asks[metric]
            needs_reference = metric in ("contextual_precision", "contextual_recall")
            if not calls or (needs_reference and not case.reference):
                judgement.scores[metric] = None
                continue
            try:
                verdicts = await self._verdicts(predictor, calls)
            except _judge_errors() as exc:
                judgement.scores[metric] = None
                judgement.errors[metric] = f"{type(exc).__name__}: {exc}"[:300]
                continue
            judgement.verdicts[metric] = verdicts
            judgement.scores[metric] = (
                ranked_precision(verdicts) if metric == "contextual_precision" else share(verdicts)
            )
        return judgement

    async def _verdicts(self, predictor: dspy.Predict, calls: list[dict[str, str]]) -> list[str]:
        """One verdict per call, in order."""
        if self.concurrent:
            replies = await asyncio.gather(*(predictor.acall(**inputs) for inputs in calls))
        else:
            replies = [await predictor.acall(**inputs) for inputs in calls]
        return [reply.verdict for reply in replies]


def _judge_errors() -> tuple[type[BaseException], ...]:
    """A judge reply that cannot be read, or a judge that does not answer."""
    from dspy.utils.exceptions import AdapterParseError, LMServerError, LMTimeoutError, LMTransportError

    return (AdapterParseError, LMServerError, LMTimeoutError, LMTransportError, TimeoutError, OSError)


def judgement_row(judgement: Judgement) -> dict[str, Any]:
    """The judgement as a JSON row: scores rounded, verdicts and errors kept."""
    return {
        "scores": {k: (round(v, 4) if v is not None else None) for k, v in judgement.scores.items()},
        "verdicts": judgement.verdicts,
        "judge_errors": judgement.errors,
    }
