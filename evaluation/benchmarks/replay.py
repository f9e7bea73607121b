"""Replay a benchmark run's drafts through today's answer code, without the LLM.

What the user reads is mostly built by code from the model's draft (:mod:`pipeline.extractive`:
sentences kept or dropped, figures moved to the right column, evidence quoted). A change there
can be measured on the drafts an earlier run recorded (``drafts`` in the agent rows of
``bench-results/answers_<dataset>.jsonl``) in seconds, where a live run of the embedded model
takes an hour: each question's first draft is what the generate call returns, and the checks
answer yes. So only the questions whose first draft passed in the run are compared: a draft the
model's check refused would pass here.

The context must be the run's: a draft cites its passages by number, and a change that alters
the context (retrieval, evidence selection, the index) renumbers them. Such changes need a live
run. Replayed rows go to ``bench-results/replay_<dataset>.jsonl``.

    python -m evaluation.benchmarks.replay ../shared/data/sec10q bench-results/answers_sec10q.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dspy
from dspy.utils import DummyLM

from evaluation.answers import ANSWERED, answer_row, indexed_dataset
from evaluation.benchmarks.answers import summarise
from evaluation.questions import Question, dataset_docs, load_questions
from evaluation.report_format import read_jsonl
from pipeline.errors import InvalidRequestError
from server.service import open_service
from server.settings import Settings, load_settings


def replay_run(
    dataset: Path,
    run_rows: Sequence[Mapping[str, Any]],
    settings: Settings,
    cache_dir: Path = Path(".docfinder/eval"),
    questions_file: str = "qna_dev.csv",
    rows_file: Path | None = None,
) -> dict[str, Any]:
    """The run's agent rows beside the same questions answered now from their first drafts."""
    agent_rows = [row for row in run_rows if row.get("system", "agent") == "agent"]
    missing = [row["question"] for row in agent_rows if "drafts" not in row]
    if missing:
        raise InvalidRequestError(
            f"{len(missing)} of the run's agent rows have no drafts (kept since 26 November), "
            f"such as {missing[0]!r}"
        )
    # A question the model never drafted for (no passage found, the LLM down) has nothing to replay.
    recorded = {row["question"]: row for row in agent_rows if row["drafts"]}
    questions = [q for q in load_questions(dataset / questions_file) if q.text in recorded]
    settings = indexed_dataset(settings, dataset_docs(dataset), cache_dir, "replay")
    replayed = asyncio.run(_replay(settings, questions, recorded))
    if rows_file is not None:
        rows_file.parent.mkdir(parents=True, exist_ok=True)
        rows_file.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in replayed))
    passed = {q for q, row in recorded.items() if _first_draft_passed(row)}
    compared = [row for row in replayed if row["question"] in passed]
    return {
        "dataset": str(dataset),
        "questions": len(replayed),
        "compared": len(compared),
        "as_run": summarise([recorded[row["question"]] for row in compared]),
        "replayed": summarise(compared),
        "characters": {
            "as_run": _mean_length([recorded[row["question"]] for row in compared]),
            "replayed": _mean_length(compared),
        },
    }


def replay_lm(drafts: Mapping[str, str]) -> DummyLM:
    """An LM that answers each question's generate call with its draft, and every check yes
    (the question as the service asks it: stripped)."""
    answers: dict[str, dict[str, Any]] = {
        f"[[ ## question ## ]]\n{question.strip()}\n\n[[ ## passages ## ]]": {"answer": draft, "sources": []}
        for question, draft in drafts.items()
    }
    answers["[[ ## cited ## ]]"] = {"supported": "yes"}
    answers["[[ ## answer ## ]]"] = {"useful": "yes"}
    return DummyLM(answers, adapter=dspy.JSONAdapter())


async def _replay(
    settings: Settings, questions: list[Question], recorded: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    lm = replay_lm({q.text: recorded[q.text]["drafts"][0] for q in questions})
    rows = []
    async with open_service(settings, lm=lm) as service:
        for question in questions:
            result = await service.ask(question.text)
            row = answer_row(question, result.agent, 0.0)
            row["system"] = "agent"
            row["llm_calls"] = recorded[question.text]["llm_calls"]  # the replay's calls cost nothing
            row["first_evidence_s"] = None
            del row["context"]
            rows.append(row)
    return rows


def _first_draft_passed(row: Mapping[str, Any]) -> bool:
    return row["outcome"] == ANSWERED and row.get("steps", []).count("generate") == 1


def _mean_length(rows: Sequence[Mapping[str, Any]]) -> float | None:
    return round(sum(len(r["answer"]) for r in rows) / len(rows)) if rows else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="evaluation.benchmarks.replay", description=__doc__.split("\n")[0])
    parser.add_argument("dataset", type=Path, help="a dataset folder of ../shared/data")
    parser.add_argument("rows", type=Path, help="the run's rows (bench-results/answers_<dataset>.jsonl)")
    args = parser.parse_args(argv)
    run_rows = [row for _, row in read_jsonl(args.rows, {"question", "outcome", "answer"})]
    out = Path("bench-results") / f"replay_{args.dataset.name}.jsonl"
    report = replay_run(args.dataset, run_rows, load_settings(), rows_file=out)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
