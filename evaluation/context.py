"""`docfinder eval context`: how much of each gold answer reaches the LLM's context, per strategy.

For every question of a question CSV (columns ``Question``, ``Source Docs``, ``Answer``, and
optionally ``Question Type``, as in the SEC 10-Q set), the hybrid retrieval takes
``context_candidates`` passages (searching only the documents the question names, as the
service does), and each context strategy selects from them under each token budget; the
``evidence`` strategy deepens into the needed documents first, and ``blend`` (the agent's
own) gives the best passages whole and evidence units the rest. Two pre-LLM measures, over
all questions and per question type:

- gold-document recall: the share of questions with a passage of a gold document (the
  ``Source Docs`` file-name glob) in the selected context;
- answer-figure recall: the share of the gold answer's figures found in the selected
  context, over the questions whose answer has figures: the mean of each question's share
  (macro, ``answer_figure_recall``) and the share of all their figures together (micro,
  ``answer_figure_recall_micro``). Figures follow :mod:`pipeline.figures`: numbers of two or
  more digits, compared without ``$``, ``%``, thousands separators and parentheses; dates,
  list markers, bare years, names such as "10-Q" and the trailing ``SOURCE(S)`` line are
  ignored. A figure also counts when the context states its exact thousandfold form
  ("13.224" billion as "13,224" in millions).

``runs`` holds the rows over all questions, ``runs_by_question_type`` the same measures per
question type (fewer questions each: not the result, a breakdown of it).

Each row also gives the median time to select and order the context (``select_ms_p50``),
the search itself excluded.

The documents folder is indexed once and cached (an unchanged corpus is not rebuilt).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.answers import collection_folders
from evaluation.questions import Question, corpus_name, dataset_docs, load_questions, phrases_found
from index_build.ingest_report import IngestProgress, NoProgress
from pipeline.figures import all_numbers, figures, stated_figures
from pipeline.retrieval.context import ContextConfig
from pipeline.retrieval.conversation import search_query
from server.core.ingest import run_ingest
from server.service import open_service
from server.settings import Settings

BUDGETS = (1000, 2000, 4000)
ALL_TYPES = "all"
HALF = "half:"  # rows per half of the question file (tune: even rows, report: odd rows)


@dataclass(frozen=True, slots=True)
class Strategy:
    """A named context configuration (selection, order and their parameters)."""

    name: str
    overrides: dict[str, Any]


STRATEGIES = (
    Strategy("topk", {"selection": "topk", "order": "score"}),
    Strategy("mmr-0.7", {"selection": "mmr", "order": "score", "mmr_alpha": 0.7}),
    Strategy("mmr-0.5", {"selection": "mmr", "order": "score", "mmr_alpha": 0.5}),
    Strategy("fps-0.5", {"selection": "fps", "order": "score", "fps_weight": 0.5}),
    Strategy("sentences+cluster", {"selection": "sentences", "order": "cluster"}),
    Strategy("evidence", {"selection": "evidence", "order": "document"}),
    # The agent's own context (context.selection's default): without it the bench measured
    # every selection but the one the answers read.
    Strategy("blend", {"selection": "blend", "order": "document"}),
)


def evaluate_context(
    dataset_dir: Path,
    settings: Settings,
    *,
    questions_file: str = "qna_dev.csv",
    docs: Path | None = None,
    budgets: Sequence[int] = BUDGETS,
    strategies: Sequence[Strategy] = STRATEGIES,
    cache_dir: Path = Path(".docfinder/eval"),
    progress: IngestProgress = NoProgress(),
) -> dict[str, Any]:
    """Run every strategy at every budget over all questions; see the module docstring."""
    docs = dataset_docs(dataset_dir, docs)
    questions = load_questions(dataset_dir / questions_file)
    settings = settings.changed({"index.dir": cache_dir / f"{corpus_name(docs)}-docs"})
    folders = collection_folders(docs)
    if folders:
        ingest = run_ingest(settings, folders, progress=progress)
    else:
        ingest = run_ingest(settings, [docs], collection=corpus_name(docs), progress=progress)
    runs = asyncio.run(_run(settings, questions, budgets, strategies))
    return {
        "dataset": str(dataset_dir),
        "documents": str(docs),
        "questions_file": questions_file,
        "questions": len(questions),
        "index": {"version": ingest.version, "documents": ingest.documents, "chunks": ingest.chunks},
        "candidates": settings.context.candidates,
        "runs": [run for run in runs if run["question_type"] == ALL_TYPES],
        "runs_by_half": [run for run in runs if run["question_type"].startswith(HALF)],
        "runs_by_question_type": [
            run
            for run in runs
            if run["question_type"] != ALL_TYPES and not run["question_type"].startswith(HALF)
        ],
    }


async def _run(
    settings: Settings, questions: list[Question], budgets: Sequence[int], strategies: Sequence[Strategy]
) -> list[dict[str, Any]]:
    totals: dict[tuple[str, int, str], dict[str, Any]] = {}
    base = settings.context
    by_ident = {q.ident: q for q in questions if q.ident}
    async with open_service(settings) as service:
        for question in questions:
            gold = figures(question.answer)
            # One retrieval per question; every strategy and budget selects from the same hits.
            # A follow-up is searched as the agent searches it: with the question it continues.
            earlier = by_ident.get(question.follow_up_of)
            query = search_query(question.text, [earlier.text] if earlier else [])
            result = await service.search(query, k=settings.context.candidates)
            for strategy in strategies:
                for budget in budgets:
                    config: ContextConfig = base.model_copy(
                        update={"budget_tokens": budget, **strategy.overrides}
                    )
                    started = time.perf_counter()
                    context = await service.assemble_context(result, config)
                    elapsed_ms = (time.perf_counter() - started) * 1000
                    sources = {p.chunk.source for p in context.pieces}
                    found = all_numbers(context.text)
                    for kind in {ALL_TYPES, question.kind or ALL_TYPES, HALF + question.half}:
                        total = totals.setdefault(
                            (strategy.name, budget, kind),
                            {
                                "questions": 0,
                                "docs": 0.0,
                                "figures": 0.0,
                                "scored": 0,
                                "gold": 0,
                                "stated": 0,
                                "tokens": 0,
                                "ms": [],
                                "phrased": 0,
                                "phrases": 0.0,
                                "phrase_gold": 0,
                                "phrase_found": 0,
                                "phrase_complete": 0,
                            },
                        )
                        total["questions"] += 1
                        total["ms"].append(elapsed_ms)
                        total["tokens"] += context.tokens
                        total["docs"] += question.gold_found(sources)
                        if gold:
                            stated = len(stated_figures(gold, found))
                            total["figures"] += stated / len(gold)
                            total["scored"] += 1
                            total["gold"] += len(gold)
                            total["stated"] += stated
                        if question.must_have:
                            found_phrases = len(phrases_found(question.must_have, context.text))
                            total["phrased"] += 1
                            total["phrases"] += found_phrases / len(question.must_have)
                            total["phrase_gold"] += len(question.must_have)
                            total["phrase_found"] += found_phrases
                            total["phrase_complete"] += found_phrases == len(question.must_have)
    return [
        {
            "strategy": name,
            "budget": budget,
            "question_type": kind,
            "questions": int(total["questions"]),
            "gold_doc_recall": round(total["docs"] / total["questions"], 4),
            "answer_figure_recall": round(total["figures"] / max(total["scored"], 1), 4),
            "answer_figure_recall_micro": round(total["stated"] / max(total["gold"], 1), 4),
            "questions_with_figures": int(total["scored"]),
            "gold_figures": int(total["gold"]),
            **_phrase_measures(total),
            "mean_tokens": round(total["tokens"] / total["questions"], 1),
            "select_ms_p50": round(statistics.median(total["ms"]), 1),
        }
        for (name, budget, kind), total in sorted(
            totals.items(), key=lambda item: (item[0][2] != ALL_TYPES, item[0])
        )
    ]


def _phrase_measures(total: dict[str, Any]) -> dict[str, Any]:
    """Must-have phrase recall (macro, micro, complete share), for question files that have phrases."""
    if not total["phrased"]:
        return {}
    return {
        "must_have_recall": round(total["phrases"] / total["phrased"], 4),
        "must_have_recall_micro": round(total["phrase_found"] / total["phrase_gold"], 4),
        "must_have_complete": round(total["phrase_complete"] / total["phrased"], 4),
        "questions_with_phrases": int(total["phrased"]),
    }
