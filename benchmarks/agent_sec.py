"""The answering agent end to end on the SEC 10-Q questions, with the configured LLM (embedded by default).

Per question: whether a gold document is among the cited sources, the share of the gold
answer's figures that appear in the answer text, in its quoted evidence, and in either,
whether both checks passed, the number of LLM calls, the latency, and the time to the
first status event. ``BENCH_AGENT_QUESTIONS=N`` limits the run to N questions spread evenly
over the file, so that every question type is sampled (the embedded model needs one to three
minutes per question on two cores). Each
question's row is appended to ``bench-results/agent_sec10q.jsonl`` as soon as it is done, so a
long run can be watched and its rows inspected.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from pipeline.streaming import AnswerToken
from server.evaluation.answers import answer_row, evenly_spread
from server.evaluation.questions import load_questions
from server.evaluation.retrieval import percentile
from server.service import open_service, run_ingest
from server.settings import Settings


def bench_agent(
    dataset: Path,
    settings: Settings,
    cache_dir: Path = Path(".docfinder/eval"),
    questions_file: str = "qna_dev.csv",
    lm: Any = None,
) -> dict[str, Any]:
    questions = load_questions(dataset / questions_file)
    questions = evenly_spread(questions, int(os.environ.get("BENCH_AGENT_QUESTIONS", "0")) or len(questions))
    settings = settings.model_copy(
        update={
            "index_dir": cache_dir / f"{dataset.name}-docs",
            "conversations_path": cache_dir / "bench-conversations.sqlite3",
        }
    )
    run_ingest(settings, [dataset / "docs"], collection=dataset.name)
    rows_file = Path("bench-results") / "agent_sec10q.jsonl"
    rows_file.parent.mkdir(exist_ok=True)
    rows_file.write_text("")
    rows = asyncio.run(_ask_all(settings, questions, lm, rows_file))
    latencies = [r["seconds"] for r in rows]
    first_status = [r["first_status_s"] for r in rows if r["first_status_s"] is not None]
    first_token = [r["first_token_s"] for r in rows if r["first_token_s"] is not None]
    with_figures = [r for r in rows if r["gold_figures"]]

    def recall(key: str) -> float:
        return round(sum(r[key] / r["gold_figures"] for r in with_figures) / max(len(with_figures), 1), 4)

    calls = sorted(r["llm_calls"] for r in rows)
    return {
        "dataset": str(dataset),
        "questions": len(rows),
        "llm": "injected" if lm is not None else settings.llm_api_base or "embedded",
        "gold_document_cited_rate": round(sum(r["gold_document_cited"] for r in rows) / len(rows), 4),
        "answer_figure_recall": recall("figures_found"),
        "answer_text_figure_recall": recall("figures_in_text"),
        "evidence_figure_recall": recall("figures_in_evidence"),
        "llm_calls": {"p50": statistics.median(calls), "max": calls[-1]},
        "checks_pass_rate": round(sum(r["outcome"] == "answered" for r in rows) / len(rows), 4),
        "outcomes": {o: sum(r["outcome"] == o for r in rows) for o in {r["outcome"] for r in rows}},
        "latency_s": {
            "p50": round(statistics.median(latencies), 2),
            "p95": round(percentile(latencies, 0.95), 2),
        },
        "first_status_s": {
            "p50": round(statistics.median(first_status), 3) if first_status else None,
            "max": round(max(first_status), 3) if first_status else None,
        },
        "first_answer_token_s": {  # the answer starts to appear (streamed generate call)
            "p50": round(statistics.median(first_token), 2) if first_token else None,
            "max": round(max(first_token), 2) if first_token else None,
        },
    }


async def _ask_all(settings: Settings, questions: list, lm: Any, rows_file: Path) -> list[dict[str, Any]]:
    rows = []
    async with open_service(settings, lm=lm) as service:
        await service.language_model()  # start the embedded server before timing anything
        for question in questions:
            started = time.perf_counter()
            first: list[float] = []
            first_token: list[float] = []

            async def on_status(
                event: dict[str, Any], started: float = started, first: list[float] = first
            ) -> None:
                if not first:
                    first.append(time.perf_counter() - started)

            async def on_token(
                token: AnswerToken, started: float = started, first: list[float] = first_token
            ) -> None:
                if not first:
                    first.append(time.perf_counter() - started)

            result = await service.ask(question.text, on_status=on_status, on_token=on_token)
            row = answer_row(question, result.agent, time.perf_counter() - started)
            del row["context"]
            row["first_status_s"] = first[0] if first else None
            row["first_token_s"] = first_token[0] if first_token else None
            row["steps"] = [e["step"] for e in result.agent.trace]
            rows.append(row)
            with rows_file.open("a") as out:
                out.write(json.dumps(row) + "\n")
    return rows
