"""``docfinder eval answers``: the agent's answers judged by COS-Mix's metrics, and by gold measures.

For each question of a question CSV (``Question``, ``Source Docs``, ``Answer``, optionally
``Question Type``) the agent answers over the dataset's documents (indexed once and cached),
or the answers come from a JSONL file of earlier rows (``--answers``). Each answer is then
scored:

- by the judge (:mod:`evaluation.judge`): faithfulness, answer relevancy, contextual
  precision, contextual recall, contextual relevancy, and citation precision. The judge is
  the configured LLM or a separate OpenAI-compatible endpoint; it never sees the gold answer
  for the answer-level metrics, and sees it for contextual precision and recall;
- without a judge: the share of the gold answer's figures in the answer and its quoted
  evidence (and in the answer text alone), whether a cited source is a gold document, the
  outcome, the LLM calls and the latency; and COS-Mix's classical metrics of the answer text
  against the gold answer: word-overlap precision, recall and F-score, and METEOR
  (:mod:`evaluation.overlap`).

Rows go to a JSONL file as each question is done; the summary gives each metric's mean over
the answers it applies to, overall and per question type. ``--report DIR`` adds a Markdown
or HTML report with charts and the worst answers.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from evaluation.judge import JUDGED_METRICS, AnswerJudge, JudgeCase, judgement_row
from evaluation.overlap import overlap_scores
from evaluation.questions import (
    Question,
    corpus_name,
    dataset_docs,
    load_questions,
    phrases_found,
    says_not_answered,
)
from evaluation.report_format import read_jsonl
from evaluation.retrieval import percentile
from pipeline.answers import AgentAnswer
from pipeline.citations import citation_link
from pipeline.errors import InvalidRequestError
from pipeline.figures import figures, stated_figures
from server.core.ingest import run_ingest
from server.models.llm import judge_lm_settings, make_adapter, open_lm
from server.service import open_service
from server.settings import Settings

OVERLAP_METRICS = ("answer_precision", "answer_recall", "answer_f_score", "answer_meteor")
DETERMINISTIC_METRICS = (
    "gold_figure_recall",
    "answer_text_figure_recall",
    "gold_document_cited",
    "phrase_recall",
    "answer_text_phrase_recall",
    *OVERLAP_METRICS,
)
ALL_METRICS = (*JUDGED_METRICS, *DETERMINISTIC_METRICS)
ANSWERED = "answered"


def evenly_spread(items: Sequence[Any], count: int) -> list[Any]:
    """``count`` of ``items`` at even steps through the list (all of them when ``count`` is larger)."""
    if count <= 0 or count >= len(items):
        return list(items)
    return [items[i * len(items) // count] for i in range(count)]


def gold_scores(
    question: Question, answer: str, quoted: Sequence[str], sources: Sequence[str]
) -> dict[str, Any]:
    """The measures that need no judge: gold figures and must-have phrases in the answer text and
    in it with its quotes, the gold documents among the cited ``sources``, and whether the answer
    says the documents do not answer (right for an unanswerable question, wrong otherwise)."""
    gold = figures(question.answer)
    quoted_figures = set().union(*(figures(q) for q in quoted))
    in_text = stated_figures(gold, figures(answer))
    in_quotes = stated_figures(gold, quoted_figures)
    return {
        "gold_figures": len(gold),
        "figures_in_text": len(in_text),
        "figures_in_evidence": len(in_quotes),
        "figures_found": len(in_text | in_quotes),
        "gold_figure_recall": len(in_text | in_quotes) / len(gold) if gold else None,
        "answer_text_figure_recall": len(in_text) / len(gold) if gold else None,
        "gold_document_cited": question.gold_found(sources),
        "answerable": question.answerable,
        "refused": says_not_answered(answer),
        **_phrase_scores(question.must_have, answer, quoted),
        **_overlap(answer, question.answer),
    }


def _overlap(answer: str, gold_answer: str) -> dict[str, float]:
    """COS-Mix's classical metrics of the answer text against the gold answer (none without one)."""
    if not gold_answer.strip():
        return {}
    scores = overlap_scores(answer, gold_answer)
    values = (scores.precision, scores.recall, scores.f_score, scores.meteor)
    return {name: round(value, 4) for name, value in zip(OVERLAP_METRICS, values, strict=True)}


def _phrase_scores(must_have: Sequence[str], answer: str, quoted: Sequence[str]) -> dict[str, Any]:
    """Must-have phrases found in the answer text, and in it with its quoted evidence."""
    if not must_have:
        return {}
    in_text = phrases_found(must_have, answer)
    in_either = phrases_found(must_have, "\n".join([answer, *quoted]))
    return {
        "must_have": len(must_have),
        "phrases_in_text": len(in_text),
        "phrases_found": len(in_either),
        "answer_text_phrase_recall": len(in_text) / len(must_have),
        "phrase_recall": len(in_either) / len(must_have),
    }


def indexed_dataset(settings: Settings, docs: Path, cache_dir: Path, purpose: str) -> Settings:
    """``settings`` answering over ``docs``, indexed (or brought up to date) in ``cache_dir``, with a
    conversation store of their own for ``purpose`` ("eval", "bench", "replay").

    A folder that holds only folders (techdocs: ``postgresql/``, ``debian-reference/``) is one
    collection per folder, named by it; any other folder is one collection, named by the corpus.
    """
    settings = settings.changed(
        {
            "index.dir": cache_dir / f"{corpus_name(docs)}-docs",
            "stores.conversations_path": cache_dir / f"{purpose}-conversations.sqlite3",
        }
    )
    folders = collection_folders(docs)
    if folders:
        run_ingest(settings, folders)
    else:
        run_ingest(settings, [docs], collection=corpus_name(docs))
    return settings


def collection_folders(docs: Path) -> list[Path]:
    """The folders of ``docs`` when it holds nothing else (each one a collection), else []."""
    entries = sorted(p for p in docs.iterdir() if not p.name.startswith("."))
    return entries if entries and all(p.is_dir() for p in entries) else []


def answer_row(question: Question, agent: AgentAnswer, seconds: float) -> dict[str, Any]:
    """One question's row before judging: the answer, what it rests on, and the gold measures."""
    sources = [c.source for c in agent.citations]
    return {
        "question": question.text,
        "question_type": question.kind,
        "outcome": agent.outcome,
        "answer": agent.answer,
        "seconds": round(seconds, 3),
        "llm_calls": sum("llm_call" in e for e in agent.trace),
        "citations": [{"n": c.n, "source": c.source, "pages": list(c.pages)} for c in agent.citations],
        "evidence": [q.readable() for q in agent.evidence],
        "context": list(agent.context),
        **gold_scores(question, agent.answer, [f"{q.context}\n{q.text}" for q in agent.evidence], sources),
    }


def read_answer_rows(path: Path, questions: Sequence[Question]) -> list[tuple[Question, dict[str, Any]]]:
    """Rows written by an earlier run (``--answers``), each with its question (matched by text)."""
    by_text = {q.text: q for q in questions}
    rows = []
    for number, row in read_jsonl(path, {"question", "answer", "outcome", "context", "citations"}):
        if row["question"] not in by_text:
            raise InvalidRequestError(f"{path}:{number}: the question is not in the question file")
        question = by_text[row["question"]]
        sources = [c["source"] for c in row["citations"]]
        rows.append(
            (question, {**row, **gold_scores(question, row["answer"], row.get("evidence", []), sources)})
        )
    return rows


async def judge_row(judge: AnswerJudge, question: Question, row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with the judge's scores, verdicts and errors (run under the judge's ``dspy.context``)."""
    started = time.perf_counter()
    case = JudgeCase(
        question.text, row["answer"], row["context"], row["outcome"] == ANSWERED, question.answer or None
    )
    judged = judgement_row(await judge.ajudge(case))
    return {**row, **judged, "judge_seconds": round(time.perf_counter() - started, 2)}


def summarise_rows(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each metric's mean over the rows it applies to (and how many), overall and per question type."""

    def means(group: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        summary = {}
        for metric in ALL_METRICS:
            scored = [v for v in (metric_value(row, metric) for row in group) if v is not None]
            summary[metric] = {
                "mean": round(statistics.fmean(scored), 4) if scored else None,
                "scored": len(scored),
            }
        return summary

    kinds = sorted({row.get("question_type") or "" for row in rows} - {""})
    latencies = [row["seconds"] for row in rows if row.get("seconds") is not None]
    return {
        "questions": len(rows),
        "metrics": means(rows),
        "by_question_type": {
            kind: {
                "questions": sum(r.get("question_type") == kind for r in rows),
                **{
                    m: v["mean"]
                    for m, v in means([r for r in rows if r.get("question_type") == kind]).items()
                },
            }
            for kind in kinds
        },
        "outcomes": {o: sum(r["outcome"] == o for r in rows) for o in sorted({r["outcome"] for r in rows})},
        "latency_s": {
            "p50": round(statistics.median(latencies), 2) if latencies else None,
            "p95": round(percentile(latencies, 0.95), 2) if latencies else None,
        },
        "llm_calls_p50": statistics.median([r["llm_calls"] for r in rows if "llm_calls" in r] or [0]),
        "judge_errors": sum(len(r.get("judge_errors", {})) for r in rows),
    }


def metric_value(row: dict[str, Any], metric: str) -> float | None:
    """One metric of a row (a judged score, or a gold measure; a yes/no as 1.0/0.0), None if not scored."""
    value = row.get(metric) if metric in DETERMINISTIC_METRICS else row.get("scores", {}).get(metric)
    return float(value) if value is not None else None


def row_mean(row: dict[str, Any]) -> float | None:
    """The mean of a row's judged scores: how the report ranks the worst answers."""
    scores = [v for v in row.get("scores", {}).values() if v is not None]
    return statistics.fmean(scores) if scores else None


RowSink = Callable[[dict[str, Any]], None]


def appender(path: Path) -> RowSink:
    """A sink that appends each row to ``path`` as one JSON line (the file is emptied first)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("", encoding="utf-8")

    def append(row: dict[str, Any]) -> None:
        with path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")

    return append


def evaluate_answers(
    dataset_dir: Path,
    settings: Settings,
    *,
    questions_file: str = "qna_dev.csv",
    docs: Path | None = None,
    limit: int = 0,
    answers_file: Path | None = None,
    judge_api_base: str | None = None,
    judge_model: str | None = None,
    rows_path: Path = Path("bench-results/eval_answers.jsonl"),
    cache_dir: Path = Path(".docfinder/eval"),
    on_row: RowSink | None = None,
) -> dict[str, Any]:
    """Answer (or read answers), judge and summarise; see the module docstring.

    ``limit`` takes that many questions spread evenly over the file, so that every question
    type is sampled. Without ``judge_api_base`` the configured LLM judges its own answers.
    """
    questions = load_questions(dataset_dir / questions_file)
    pending: list[tuple[Question, dict[str, Any] | None]] = (
        list(read_answer_rows(answers_file, questions)) if answers_file else [(q, None) for q in questions]
    )
    pending = evenly_spread(pending, limit)
    write = appender(rows_path)
    if answers_file is None:
        settings = indexed_dataset(settings, dataset_docs(dataset_dir, docs), cache_dir, "eval")
    rows = asyncio.run(_answer_and_judge(settings, pending, judge_api_base, judge_model, write, on_row))
    answerer = str(answers_file) if answers_file else settings.llm.api_base or "embedded"
    return {
        "dataset": str(dataset_dir),
        "questions_file": questions_file,
        "answers": answerer,
        "judge": judge_api_base
        or ("the answering LLM" if answers_file is None else settings.llm.api_base)
        or "embedded",
        "rows": str(rows_path),
        **summarise_rows(rows),
    }


async def _answer_and_judge(
    settings: Settings,
    pending: list[tuple[Question, dict[str, Any] | None]],
    judge_api_base: str | None,
    judge_model: str | None,
    write: RowSink,
    on_row: RowSink | None,
) -> list[dict[str, Any]]:
    import dspy

    # A server judges the items of a metric at once; the embedded model takes them in order.
    judge = AnswerJudge(concurrent=judge_api_base is not None or settings.llm.api_base is not None)
    rows: list[dict[str, Any]] = []
    answering = any(row is None for _, row in pending)
    async with AsyncExitStack() as stack:
        service = (
            await stack.enter_async_context(open_service(settings, start_llm=True)) if answering else None
        )
        if judge_api_base is not None:
            judged_by = judge_lm_settings(settings, judge_api_base, judge_model)
        elif service is not None:
            judged_by = await service.dspy_settings()
        else:
            lm = await stack.enter_async_context(open_lm(settings))
            judged_by = {"lm": lm, "adapter": make_adapter(settings)}
        for question, row in pending:
            if service is not None and row is None:
                started = time.perf_counter()
                result = await service.ask(question.text)
                row = answer_row(question, result.agent, time.perf_counter() - started)
            assert row is not None  # every row without an answer was answered above
            with dspy.context(**judged_by, disable_history=True, trace=None):
                row = await judge_row(judge, question, row)
            rows.append(row)
            write(row)
            if on_row is not None:
                on_row(row)
    return rows


def simulated_feedback(rows: Sequence[dict[str, Any]], url_prefixes: dict[str, str]) -> list[dict[str, Any]]:
    """Feedback items as ``docfinder feedback export`` writes them, with reactions simulated from
    the gold measures: rating ``1 + round(4 × gold figure recall)``; for a question without gold
    figures, 5 when a gold document is cited and 2 when not; 1 when the agent gave no answer.

    For trying ``docfinder optimize`` where nobody has reacted yet; the items say they are
    simulated (platform ``simulated``).
    """
    items = []
    for number, row in enumerate(rows, start=1):
        if row["outcome"] != ANSWERED:
            rating = 1
        elif row.get("gold_figure_recall") is not None:
            rating = 1 + round(4 * row["gold_figure_recall"])
        else:
            rating = 5 if row.get("gold_document_cited") else 2
        items.append(
            {
                "feedback_id": number,
                "answer_id": f"simulated-{number}",
                "platform": "simulated",
                "user": "",
                "rating": rating,
                "label": None,
                "comment": "simulated from the gold answer's figures and documents",
                "channel": "",
                "reaction": "",
                "question": row["question"],
                "answer": row["answer"],
                "sources": [
                    citation_link(c["source"], tuple(c["pages"]), url_prefixes) for c in row["citations"]
                ],
                "domain": None,
                "collections": [],
                "created_at": "",
                "good": rating >= 4,
            }
        )
    return items
