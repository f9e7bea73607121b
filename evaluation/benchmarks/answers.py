"""The agent's answers end to end, beside the plainest baseline, on a question set of ../shared/data.

Two systems answer every question with the configured LLM (the embedded model by default), over
the same index:

- ``agent``: docfinder's answering agent, as every door runs it;
- ``plain``: the plainest baseline: top-k chunks (``PLAIN_BUDGET`` tokens, best first) and one chat
  call asking for a specific, cited answer (:class:`PlainAnswer`).

Measured on what the user reads as the answer (its text, not the evidence listed under it):
gold figures (SEC 10-Q: :mod:`pipeline.figures`) and must-have phrases (manual-qa) in the answer
text, and with the quoted evidence; a gold document among the cited sources; unanswerable
questions answered "the documents do not say" and answerable ones refused (one text rule for
both systems, :func:`evaluation.questions.says_not_answered`); the agent's verified
answers with a figure that no passage it cites states; LLM calls; latency; and the time to
the first evidence shown (the agent's ``evidence`` status event); and COS-Mix's classical
metrics of the answer text against the gold answer (:mod:`evaluation.overlap`).

``BENCH_AGENT_QUESTIONS=N`` limits a run to N questions spread evenly over the file (the
embedded model needs 10 to 60 s a question on two cores). Rows go to
``bench-results/answers_<dataset>.jsonl`` as each question is done.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dspy

from evaluation.answers import OVERLAP_METRICS, answer_row, evenly_spread, indexed_dataset
from evaluation.questions import Question, dataset_docs, load_questions
from evaluation.retrieval import percentile
from pipeline.answers import AgentAnswer, Citation
from pipeline.citations import cited_numbers
from pipeline.figures import all_numbers, figures, stated_figures
from pipeline.ratios import derived_figures
from programs.agent import number_passages
from server.service import open_service
from server.settings import Settings

PLAIN_BUDGET = 1300
SYSTEMS = ("agent", "plain")


class PlainAnswer(dspy.Signature):
    """Answer the question from the numbered passages. Be specific: give the names, dates, figures
    and items that answer it, and cite each claim as [n]. If the passages do not answer it, say so."""

    question: str = dspy.InputField()
    passages: str = dspy.InputField()
    answer: str = dspy.OutputField(desc="a specific answer with [n] citations")


def bench_answers(
    dataset: Path,
    settings: Settings,
    cache_dir: Path = Path(".docfinder/eval"),
    questions_file: str = "qna_dev.csv",
    systems: Sequence[str] = SYSTEMS,
    lm: Any = None,
    docs: Path | None = None,
) -> dict[str, Any]:
    """Both systems over the dataset's questions (over ``docs`` when given, else the dataset's
    own documents); see the module docstring."""
    questions = load_questions(dataset / questions_file)
    questions = evenly_spread(questions, int(os.environ.get("BENCH_AGENT_QUESTIONS", "0")) or len(questions))
    settings = indexed_dataset(settings, dataset_docs(dataset, docs), cache_dir, "bench")
    rows_file = Path("bench-results") / f"answers_{dataset.name}.jsonl"
    rows_file.parent.mkdir(exist_ok=True)
    rows_file.write_text("")
    rows = asyncio.run(_answer_all(settings, questions, systems, lm, rows_file))
    return {
        "dataset": str(dataset),
        "split": "dev",
        "questions": len(questions),
        "llm": "injected" if lm is not None else settings.llm.api_base or "embedded",
        **{system: summarise([r for r in rows if r["system"] == system]) for system in systems},
    }


async def _answer_all(
    settings: Settings, questions: list[Question], systems: Sequence[str], lm: Any, rows_file: Path
) -> list[dict[str, Any]]:
    rows = []
    async with open_service(settings, lm=lm) as service:
        await service.language_model()  # start the embedded server before timing anything
        for question in questions:
            for system in systems:
                ask = _ask_agent if system == "agent" else _ask_plain
                row = {"system": system, **await ask(service, question)}
                rows.append(row)
                with rows_file.open("a") as out:
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return rows


async def _ask_agent(service: Any, question: Question) -> dict[str, Any]:
    started = time.perf_counter()
    first_evidence: list[float] = []

    async def on_status(event: dict[str, Any]) -> None:
        if event["step"] == "evidence" and not first_evidence:
            first_evidence.append(time.perf_counter() - started)

    result = await service.ask(question.text, on_status=on_status)
    row = answer_row(question, result.agent, time.perf_counter() - started)
    row["first_evidence_s"] = round(first_evidence[0], 3) if first_evidence else None
    row["unstated_figures"] = sorted(_unstated_in_answer(result.agent))
    row.update(trace_fields(result.agent))
    # The model's drafts as written, so that later code can be replayed on them without the LLM.
    row["drafts"] = [e["answer"] for e in result.agent.trace if e["step"] == "generate"]
    del row["context"]
    return row


def trace_fields(answer: AgentAnswer) -> dict[str, list[Any]]:
    """What an answer's trace says of how it was composed: its steps, the sentences code dropped
    (with why) and the figures it moved to the right column."""
    compose_steps = [e for e in answer.trace if e["step"] == "compose"]
    return {
        "steps": [e["step"] for e in answer.trace],
        "dropped": [d for e in compose_steps for d in e["dropped"]],
        "corrected": [c for e in compose_steps for c in e["corrected"]],
    }


async def _ask_plain(service: Any, question: Question) -> dict[str, Any]:
    started = time.perf_counter()
    found = await service.search(question.text, k=service.settings.context.candidates)
    config = service.settings.context.model_copy(
        update={"selection": "topk", "order": "score", "budget_tokens": PLAIN_BUDGET}
    )
    context = await service.assemble_context(found, config)
    passages = context.passages()
    with dspy.context(**await service.dspy_settings()):
        reply = await dspy.Predict(PlainAnswer).acall(
            question=question.text, passages=number_passages(passages)
        )
    citations = [
        Citation(n, p.chunk.title, p.chunk.source, p.chunk.pages, p.chunk.heading_path, p.chunk.chunk_id)
        for n, p in enumerate(passages, start=1)
        if n in cited_numbers(reply.answer, len(passages))
    ]
    answer = AgentAnswer(
        reply.answer, "answered", citations, {}, question.text, None, [{"llm_call": "plain"}]
    )
    row = answer_row(question, answer, time.perf_counter() - started)
    row["first_evidence_s"] = None
    del row["context"]
    return row


def _unstated_in_answer(answer: AgentAnswer) -> set[str]:
    """Figures of a verified answer's text that none of the passages it was written from states."""
    if answer.outcome != "answered":
        return set()
    wanted = figures(answer.answer) - derived_figures(answer.answer)
    return wanted - stated_figures(wanted, all_numbers("\n".join(answer.context)))


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One system's measures over its rows (see the module docstring)."""
    if not rows:
        return {}
    with_figures = [r for r in rows if r["gold_figures"]]
    with_phrases = [r for r in rows if r.get("must_have")]
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    latencies = [r["seconds"] for r in rows]
    calls = sorted(r["llm_calls"] for r in rows)
    first = [r["first_evidence_s"] for r in rows if r.get("first_evidence_s") is not None]

    def mean(key: str, among: list[dict[str, Any]], total: str) -> float | None:
        return round(sum(r[key] / r[total] for r in among) / len(among), 4) if among else None

    def micro(key: str, among: list[dict[str, Any]], total: str) -> float | None:
        return round(sum(r[key] for r in among) / sum(r[total] for r in among), 4) if among else None

    return {
        "answers": len(rows),
        "answered": round(sum(r["outcome"] == "answered" for r in rows) / len(rows), 4),
        "outcomes": {o: sum(r["outcome"] == o for r in rows) for o in sorted({r["outcome"] for r in rows})},
        "gold_document_cited": round(
            sum(r["gold_document_cited"] for r in answerable) / max(len(answerable), 1), 4
        ),
        "figure_recall_in_answer_text": mean("figures_in_text", with_figures, "gold_figures"),
        "figure_recall_in_answer_text_micro": micro("figures_in_text", with_figures, "gold_figures"),
        "figure_recall_with_quotes": mean("figures_found", with_figures, "gold_figures"),
        "questions_with_figures": len(with_figures),
        "must_have_recall_in_answer_text": mean("phrases_in_text", with_phrases, "must_have"),
        "must_have_recall_in_answer_text_micro": micro("phrases_in_text", with_phrases, "must_have"),
        "must_have_recall_with_quotes": mean("phrases_found", with_phrases, "must_have"),
        "questions_with_phrases": len(with_phrases),
        **{  # COS-Mix's classical metrics against the gold answer, over the answerable questions
            metric: round(statistics.fmean(r[metric] for r in answerable if metric in r), 4)
            for metric in OVERLAP_METRICS
            if any(metric in r for r in answerable)
        },
        "unanswerable_refused": f"{sum(r['refused'] for r in unanswerable)}/{len(unanswerable)}",
        "answerable_refused": f"{sum(r['refused'] for r in answerable)}/{len(answerable)}",
        "verified_with_unstated_figure": sum(bool(r.get("unstated_figures")) for r in rows),
        "llm_calls": {"p50": statistics.median(calls), "max": calls[-1]},
        "latency_s": {
            "p50": round(statistics.median(latencies), 2),
            "p95": round(percentile(latencies, 0.95), 2),
        },
        "first_evidence_s": {"p50": round(statistics.median(first), 3), "max": round(max(first), 3)}
        if first
        else None,
    }
