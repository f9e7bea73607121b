"""The answer judge: COS-Mix's five metrics, and citation precision, asked of an LLM.

Every metric is a share of yes verdicts over numbered items that the judge reads in one
call, so that a small model judges short, concrete things and a question costs six calls:

- faithfulness: the answer's sentences (its claims) supported by the context it was given.
  The judge never sees the gold answer here.
- answer relevancy: the answer's sentences that help answer the question.
- contextual relevancy: the context's passages relevant to the question (judged per passage,
  not per statement, to keep the reply short).
- contextual precision: the passages useful for reaching the gold answer, weighted by rank
  (COS-Mix, after DeepEval): ``(1/R) Σ_k rel_k · precision@k``, 0 when none is useful.
- contextual recall: the gold answer's sentences that the context supports (uses the gold
  answer, as COS-Mix defines it).
- citation precision: the (sentence, cited passage) pairs where the passage states the sentence.

An answer that is not an answer (the agent found nothing, or could not verify one) has no
answer-level scores. The judge must give exactly one verdict per item: the reply's JSON
schema fixes the list's length, so a server that constrains its output (llama.cpp, vLLM)
cannot give too few or too many; a reply that still does not fit is a judge error, counted
and reported, never a score.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import dspy
from annotated_types import Len

from pipeline.errors import JudgeReplyError
from pipeline.ordering import split_sentences

Verdict = Literal["yes", "no"]
_CITATION = re.compile(r"\[(\d+)\]")
_CITATION_MARK = re.compile(r"\s*\[\d+\]")  # with the space before it
_MIN_STATEMENT_CHARS = 12  # shorter pieces ("Yes.", a bare citation) are not claims


class StatementsSupported(dspy.Signature):
    """For each numbered statement, answer "yes" if the context states it or it follows directly
    from what the context states, and "no" if the context does not say it or says otherwise. Give
    one verdict per statement, in order. Figures must match exactly."""

    context: str = dspy.InputField(desc="numbered passages")
    statements: str = dspy.InputField(desc="numbered statements, one per line")
    verdicts: list[Verdict] = dspy.OutputField(desc="one yes/no per statement, in order")


class ItemsRelevant(dspy.Signature):
    """For each numbered item, answer "yes" if it helps answer the question (it gives information
    the question asks for), and "no" if it is off the question. Give one verdict per item, in order."""

    question: str = dspy.InputField()
    items: str = dspy.InputField(desc="numbered items")
    verdicts: list[Verdict] = dspy.OutputField(desc="one yes/no per item, in order")


class PassagesUseful(dspy.Signature):
    """For each numbered passage, answer "yes" if it contains information used in the reference
    answer to the question, and "no" if it does not. Give one verdict per passage, in order."""

    question: str = dspy.InputField()
    reference_answer: str = dspy.InputField(desc="the correct answer")
    passages: str = dspy.InputField(desc="numbered passages")
    verdicts: list[Verdict] = dspy.OutputField(desc="one yes/no per passage, in order")


class CitationsSupported(dspy.Signature):
    """Each numbered line is a statement followed by the passage number it cites. For each line,
    answer "yes" if that passage states the statement, "no" if it does not. Give one verdict per
    line, in order. Figures must match exactly."""

    passages: str = dspy.InputField(desc="the cited passages, numbered")
    citations: str = dspy.InputField(desc="numbered lines: 'statement — cites [n]'")
    verdicts: list[Verdict] = dspy.OutputField(desc="one yes/no per line, in order")


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


ANSWER_METRICS = ("faithfulness", "answer_relevancy", "citation_precision")
CONTEXT_METRICS = ("contextual_precision", "contextual_recall", "contextual_relevancy")
JUDGED_METRICS = (*CONTEXT_METRICS, "faithfulness", "answer_relevancy", "citation_precision")


def _without_citations(sentence: str) -> str:
    return " ".join(_CITATION_MARK.sub("", sentence).split())


def statements(text: str) -> list[str]:
    """The sentences of ``text`` as claims to judge, citation markers removed."""
    found = []
    for sentence in split_sentences(text):
        plain = _without_citations(sentence)
        if len(plain) >= _MIN_STATEMENT_CHARS and any(c.isalpha() for c in plain):
            found.append(plain)
    return found


def citation_pairs(answer: str, passages: int) -> list[tuple[str, int]]:
    """Each (sentence, passage number) that the answer cites inline, for numbers that exist.

    Citations standing alone after a sentence ("… in 2023. [2]") belong to that sentence.
    """
    cited: list[tuple[str, list[int]]] = []
    for sentence in split_sentences(answer):
        plain = _without_citations(sentence)
        numbers = [int(n) for n in _CITATION.findall(sentence) if 1 <= int(n) <= passages]
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


def numbered(items: Sequence[str]) -> str:
    """``1. item`` lines: how the judge reads the items it gives verdicts on."""
    return "\n".join(f"{n}. {item}" for n, item in enumerate(items, start=1))


def numbered_passages(passages: Sequence[str], numbers: Sequence[int] | None = None) -> str:
    """``[n] passage`` blocks, numbered from 1 or by ``numbers`` (the answer's citation numbers)."""
    numbers = numbers or range(1, len(passages) + 1)
    return "\n\n".join(f"[{n}] {text}" for n, text in zip(numbers, passages, strict=True))


class AnswerJudge(dspy.Module):
    """Scores answers with the judge's four signatures; see the module docstring."""

    def __init__(self) -> None:
        super().__init__()
        self.statements_supported = dspy.Predict(StatementsSupported)
        self.items_relevant = dspy.Predict(ItemsRelevant)
        self.passages_useful = dspy.Predict(PassagesUseful)
        self.citations_supported = dspy.Predict(CitationsSupported)

    async def ajudge(self, case: JudgeCase, metrics: Sequence[str] = JUDGED_METRICS) -> Judgement:
        """The judged ``metrics`` of ``case`` (run under the judge's ``dspy.context``)."""
        judgement = Judgement()
        claims = statements(case.answer) if case.answered else []
        context = numbered_passages(case.context)
        pairs = citation_pairs(case.answer, len(case.context)) if case.answered else []
        citations = [f"{sentence} — cites [{n}]" for sentence, n in pairs]
        cited = sorted({n for _, n in pairs})
        reference = statements(case.reference) if case.reference else []
        asks: dict[str, tuple[dspy.Predict, list[str], dict[str, str]]] = {
            "faithfulness": (
                self.statements_supported,
                claims,
                {"context": context, "statements": numbered(claims)},
            ),
            "answer_relevancy": (
                self.items_relevant,
                claims,
                {"question": case.question, "items": numbered(claims)},
            ),
            "citation_precision": (
                self.citations_supported,
                citations,
                {
                    "passages": numbered_passages([case.context[n - 1] for n in cited], cited),
                    "citations": numbered(citations),
                },
            ),
            "contextual_relevancy": (
                self.items_relevant,
                list(case.context),
                {"question": case.question, "items": context},
            ),
            "contextual_precision": (
                self.passages_useful,
                list(case.context),
                {"question": case.question, "reference_answer": case.reference or "", "passages": context},
            ),
            "contextual_recall": (
                self.statements_supported,
                reference,
                {"context": context, "statements": numbered(reference)},
            ),
        }
        for metric in metrics:
            predictor, items, inputs = asks[metric]
            needs_reference = metric in ("contextual_precision", "contextual_recall")
            if not items or (needs_reference and not case.reference):
                judgement.scores[metric] = None
                continue
            try:
                verdicts = await _verdicts(predictor, len(items), inputs)
            except _judge_errors() as exc:
                judgement.scores[metric] = None
                judgement.errors[metric] = f"{type(exc).__name__}: {exc}"[:300]
                continue
            judgement.verdicts[metric] = verdicts
            judgement.scores[metric] = (
                ranked_precision(verdicts) if metric == "contextual_precision" else share(verdicts)
            )
        return judgement


async def _verdicts(predictor: dspy.Predict, count: int, inputs: dict[str, str]) -> list[str]:
    """Exactly ``count`` verdicts: the reply's schema fixes the list's length."""
    exact = Annotated[list[Verdict], Len(count, count)]
    signature = predictor.signature.with_updated_fields("verdicts", type_=exact)
    fixed = dspy.Predict(signature)
    fixed.demos = predictor.demos
    reply = await fixed.acall(**inputs)
    verdicts = list(reply.verdicts)
    if len(verdicts) != count:  # a server that does not enforce the schema's length
        raise JudgeReplyError(f"{len(verdicts)} verdicts for {count} items")
    return verdicts


def _judge_errors() -> tuple[type[BaseException], ...]:
    """A judge reply that cannot be read, or a judge that does not answer."""
    from dspy.utils.exceptions import AdapterParseError, LMServerError, LMTimeoutError, LMTransportError

    return (
        AdapterParseError,
        JudgeReplyError,
        LMServerError,
        LMTimeoutError,
        LMTransportError,
        TimeoutError,
        OSError,
    )


def judgement_row(judgement: Judgement) -> dict[str, Any]:
    """The judgement as a JSON row: scores rounded, verdicts and errors kept."""
    return {
        "scores": {k: (round(v, 4) if v is not None else None) for k, v in judgement.scores.items()},
        "verdicts": judgement.verdicts,
        "judge_errors": judgement.errors,
    }
