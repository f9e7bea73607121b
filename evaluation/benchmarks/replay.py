"""Replay a benchmark run's drafts through today's answer code, without the LLM.

What the user reads is mostly built by code from the model's draft (:mod:`pipeline.extractive`:
sentences kept or dropped, figures moved to the right column, evidence quoted). A change there
can be measured on the drafts an earlier run recorded (``drafts`` in the agent rows of
``bench-results/answers_<dataset>.jsonl``) in seconds, where a live run of the embedded model
takes an hour: each question's first draft is what the generate call returns, and the checks
answer yes. So only the questions whose first draft passed in the run are compared: a draft the
model's check refused would pass here.

With ``--as-run`` every question is replayed as the run went: its drafts in order, the
grounding check refusing each draft but an answered question's last (a draft is written again
only after a refusal), a rewrite searching the question again. So the outcomes after failed
drafts (the evidence quoted, the model's "the documents do not say") are measured too, and all
questions are compared; it gave the 65 SEC answers of the run of 26 November, 22:45, with
every outcome and figure as run. A rewrite's own query is not replayed: where the run's
rewrite found other passages, the later drafts cite what they did not cite there.

The context must be the run's: a draft cites its passages by number, and a change that alters
the context (retrieval, evidence selection, the index) renumbers them. Such changes need a live
run. Replayed rows go to ``bench-results/replay_<dataset>.jsonl``.

    python -m evaluation.benchmarks.replay ../shared/data/sec10q bench-results/answers_sec10q.jsonl [--as-run]
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
from evaluation.benchmarks.answers import summarise, trace_fields
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
    as_run: bool = False,
) -> dict[str, Any]:
    """The run's agent rows beside the same questions answered now from their first drafts
    (every check passing), or ``as_run``, from all their drafts with the run's verdicts."""
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
    first_drafts = {q.text: recorded[q.text]["drafts"][0] for q in questions}
    lm = RecordedRun(recorded) if as_run else replay_lm(first_drafts)
    replayed = asyncio.run(_replay(settings, questions, recorded, lm))
    if rows_file is not None:
        rows_file.parent.mkdir(parents=True, exist_ok=True)
        rows_file.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in replayed))
    passed = {q for q, row in recorded.items() if as_run or _first_draft_passed(row)}
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


class RecordedRun(DummyLM):
    """An LM that answers as a run's model did, one question at a time (see the module
    docstring): :meth:`asking` names the question before the service asks it."""

    def __init__(self, recorded: Mapping[str, Mapping[str, Any]]) -> None:
        self.recorded = recorded
        self.script = _Script()
        super().__init__(self.script, adapter=dspy.JSONAdapter())

    def asking(self, question: str) -> None:
        row = self.recorded[question]
        self.script.start(question.strip(), row["drafts"], row["outcome"] == ANSWERED)


class _Script(dict):
    """DummyLM's answers for the question being asked, built afresh for each call (DummyLM reads
    its answers' ``items()`` on every call and formats the first whose key the prompt holds)."""

    def start(self, question: str, drafts: Sequence[str], answered: bool) -> None:
        self.question, self.drafts, self.answered, self.written = question, drafts, answered, 0

    def items(self):  # type: ignore[override]
        passes = self.answered and self.written == len(self.drafts)
        return [
            (f"[[ ## question ## ]]\n{self.question}\n\n[[ ## passages ## ]]", _NextDraft(self)),
            ("[[ ## problem ## ]]", {"rewritten": self.question}),
            ("[[ ## cited ## ]]", {"supported": "yes" if passes else "no"}),
            ("[[ ## answer ## ]]", {"useful": "yes"}),
        ]


class _NextDraft(dict):
    """The generate call's reply: the question's next draft, taken when DummyLM formats it."""

    def __init__(self, script: _Script) -> None:
        super().__init__()
        self.script = script

    def items(self):  # type: ignore[override]
        draft = self.script.drafts[min(self.script.written, len(self.script.drafts) - 1)]
        self.script.written += 1
        return [("answer", draft), ("sources", [])]


async def _replay(
    settings: Settings, questions: list[Question], recorded: Mapping[str, Mapping[str, Any]], lm: DummyLM
) -> list[dict[str, Any]]:
    rows = []
    async with open_service(settings, lm=lm) as service:
        for question in questions:
            if isinstance(lm, RecordedRun):
                lm.asking(question.text)
            result = await service.ask(question.text)
            row = answer_row(question, result.agent, 0.0)
            row["system"] = "agent"
            row["llm_calls"] = recorded[question.text]["llm_calls"]  # the replay's calls cost nothing
            row["first_evidence_s"] = None
            row.update(trace_fields(result.agent))
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
    parser.add_argument(
        "--as-run", action="store_true", help="all drafts, the run's check verdicts; every question compared"
    )
    args = parser.parse_args(argv)
    run_rows = [row for _, row in read_jsonl(args.rows, {"question", "outcome", "answer"})]
    out = Path("bench-results") / f"replay_{args.dataset.name}.jsonl"
    report = replay_run(args.dataset, run_rows, load_settings(), rows_file=out, as_run=args.as_run)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
