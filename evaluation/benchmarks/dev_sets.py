"""`make bench ONLY=answers`: the agent against one plain LLM call, on every dev set in one run.

Every answer-shaping change is judged on all the question sets of ``../shared/data`` at once
(techdocs, manual-qa, SEC 10-Q), because a rule argued from one set's questions tends to help
that set and nothing else. Each set is split by the row of its question file: the even rows
are the **tune** half (look at them, change things), the odd rows the **report** half (the
figures the README gives). Both halves are run and summarised side by side, each set on its
own and as a macro over the sets, with the plain baseline answering the same questions in the
same run on the same machine. The unanswerable probe (six questions of our own over the sample
PDFs) runs beside them as the set ``probe``, never tuned on and outside the macro.

Two systems answer each question over the same index, with the configured LLM:

- ``agent``: docfinder's answering agent as every door runs it (``service.ask``), follow-ups
  asked in the conversation of the question they continue;
- ``plain``: top-k chunks (the agent's context budget, best first) and one chat call asking for a
  specific, cited answer (:class:`PlainAnswer`); a follow-up is searched with the question it
  continues and given that question and its answer.

What is measured, per question (a row of ``bench-results/answers_<set>.jsonl``):

- **own**: the must-have phrases (techdocs, manual-qa) or gold figures (SEC) in the reply's own
  sentences: its text before the first quoted line;
- **draft**: the same in what the model first wrote, before any check read it (the plain call's
  reply is its draft): own below draft is what the checks dropped, draft below the plain call's
  is what the model did not write from the agent's context and prompt;
- **whole**: the same in everything the user reads: the sentences, the quotes in the text and
  the evidence listed under it;
- **context**: the same in the passages the model read;
- the gold source among the cited documents; whether the reply gives no answer, saying the
  documents do not answer or that none could be verified
  (:func:`evaluation.questions.says_not_answered`, one rule for both systems): right for an
  unanswerable question, a refusal for an answerable one;
- the reply's length in characters (all of it), latency, time to the first evidence shown,
  LLM calls.

``targets`` compares the two systems per set and half against the bar of issue 56 (own at least
plain's; whole at least plain's + 0.10; length at most 1.5 and latency at most 1.1 times
plain's p50; unanswerable refused at least 80 %; answerable refused no more than plain; on
techdocs, context at least 0.85, whole at least 0.55, gold page cited at least 0.90).

``BENCH_SETS=techdocs,probe`` runs those sets only, ``BENCH_HALF=tune`` one half (a follow-up
whose first question lies in the other half still gets that question asked first, unscored),
``BENCH_SYSTEMS=agent`` one system. ``python -m evaluation.benchmarks.dev_sets --summarise
ROWS...`` summarises rows of earlier runs (an agent run beside an earlier plain run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import dspy

from evaluation.answers import indexed_dataset
from evaluation.benchmarks import DATA
from evaluation.benchmarks.dev_set_summary import (
    HALVES,
    SYSTEMS,
    summarise,
    summarise_files,
)
from evaluation.questions import Question, dataset_docs, load_questions, phrases_found, says_not_answered
from pipeline.answering.rule_packs.reporting_periods.ratios import derived_figures
from pipeline.answers import AgentAnswer
from pipeline.citations import cited_numbers
from pipeline.errors import LLMUnavailableError, UnreadableReplyError
from pipeline.figures import all_numbers, figures, stated_figures
from pipeline.retrieval.context import Passage
from pipeline.steps import Step
from programs.agent import answer_of_a_cut_reply, number_passages
from programs.llm_calls import LLMCalls
from server.service import open_service
from server.settings import Settings

PROBES = Path(__file__).resolve().parents[1] / "probes"
Measure = Literal["phrases", "figures"]


@dataclass(frozen=True, slots=True)
class DevSet:
    """A question set and the documents it asks about; ``probe`` sets are reported, never tuned
    on, and stay out of the macro."""

    name: str
    questions: Path
    docs: Path
    measure: Measure
    probe: bool = False


def dev_sets(data: Path = DATA) -> list[DevSet]:
    """The sets whose data is present, in the order they are run (the everyday case first)."""
    sets = [
        DevSet("techdocs", data / "techdocs" / "qna_dev.csv", data / "techdocs" / "docs", "phrases"),
        DevSet("manual-qa", data / "manual-qa" / "qna_dev.csv", data / "pdf-samples", "phrases"),
        DevSet("sec10q", data / "sec10q" / "qna_dev.csv", data / "sec10q" / "docs", "figures"),
        DevSet("probe", PROBES / "unanswerable.csv", data / "pdf-samples", "phrases", probe=True),
    ]
    return [s for s in sets if s.questions.is_file() and s.docs.is_dir()]


class PlainAnswer(dspy.Signature):
    """Answer the question from the numbered passages. Be specific: give the names, dates, figures
    and items that answer it, and cite each claim as [n]. If the passages do not answer it, say so."""

    question: str = dspy.InputField()
    passages: str = dspy.InputField()
    answer: str = dspy.OutputField(desc="a specific answer with [n] citations")


def bench_dev_sets(
    settings: Settings,
    sets: Sequence[DevSet] | None = None,
    halves: Sequence[str] = HALVES,
    systems: Sequence[str] = SYSTEMS,
    lm: Any = None,
    cache_dir: Path = Path(".docfinder/eval"),
    out: Path = Path("bench-results"),
) -> dict[str, Any]:
    """Both systems over every set's chosen halves; see the module docstring."""
    sets = list(dev_sets() if sets is None else sets)
    out.mkdir(exist_ok=True)
    rows: list[dict[str, Any]] = []
    for dev_set in sets:
        questions = load_questions(dev_set.questions)
        chosen = questions if dev_set.probe else [q for q in questions if q.half in halves]
        indexed = indexed_dataset(
            settings, dataset_docs(dev_set.questions.parent, dev_set.docs), cache_dir, "bench"
        )
        rows_file = out / f"answers_{dev_set.name}.jsonl"
        rows_file.write_text("")
        rows += asyncio.run(_answer_set(indexed, dev_set, questions, chosen, systems, lm, rows_file))
    return {
        "llm": "injected" if lm is not None else settings.llm.api_base or "embedded",
        "halves": list(halves),
        "sets": {s.name: {"questions": str(s.questions), "probe": s.probe} for s in sets},
        **summarise(rows, {s.name: s.probe for s in sets}),
    }


async def _answer_set(
    settings: Settings,
    dev_set: DevSet,
    questions: list[Question],
    chosen: list[Question],
    systems: Sequence[str],
    lm: Any,
    rows_file: Path,
) -> list[dict[str, Any]]:
    """Every chosen question answered by each system, a follow-up after the question it continues."""
    by_ident = {q.ident: q for q in questions if q.ident}
    rows = []
    async with open_service(settings, lm=lm) as service:
        await service.language_model()  # start the embedded server before timing anything
        askers = [_Asker(service, system) for system in systems]
        for question in chosen:  # the systems take turns, so that both meet the machine's same moods
            for asker in askers:
                earlier = by_ident.get(question.follow_up_of)
                if earlier is not None and earlier.ident not in asker.asked:
                    await asker.ask(earlier, None)  # its conversation, unscored
                reply = await asker.ask(question, earlier)
                row = {"set": dev_set.name, "system": asker.system, **score(question, reply, dev_set.measure)}
                rows.append(row)
                with rows_file.open("a") as handle:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return rows


@dataclass(slots=True)
class Reply:
    """What one system returned for a question, as the user reads it and as it was made."""

    text: str  # the reply's text (for the agent, sentences and the quotes it writes in)
    evidence: list[str]  # quotes listed under the text
    context: list[str]  # the passages the model read
    sources: list[str]  # the cited documents
    seconds: float
    first_evidence_s: float | None
    llm_calls: int
    outcome: str
    trace: list[dict[str, Any]]


class _Asker:
    """One system asking questions, remembering each asked question's conversation."""

    def __init__(self, service: Any, system: str) -> None:
        self.service = service
        self.system = system
        self.asked: dict[str, tuple[str, str]] = {}  # ident → (conversation id, reply text)

    async def ask(self, question: Question, earlier: Question | None) -> Reply:
        before = self.asked.get(earlier.ident) if earlier is not None else None
        if self.system == "agent":
            reply, conversation = await _ask_agent(self.service, question.text, before[0] if before else None)
        else:
            history = (earlier.text, before[1]) if earlier is not None and before else None
            reply, conversation = await _ask_plain(self.service, question.text, history), ""
        if question.ident:
            self.asked[question.ident] = (conversation, reply.text)
        return reply


async def _ask_agent(service: Any, text: str, conversation_id: str | None) -> tuple[Reply, str]:
    started = time.perf_counter()
    first_evidence: list[float] = []

    async def on_status(event: dict[str, Any]) -> None:
        if event["step"] == Step.EVIDENCE and not first_evidence:
            first_evidence.append(time.perf_counter() - started)

    result = await service.ask(text, conversation_id=conversation_id, on_status=on_status)
    agent: AgentAnswer = result.agent
    reply = Reply(
        agent.answer,
        [q.readable() for q in agent.evidence],
        list(agent.context),
        [c.source for c in agent.citations],
        time.perf_counter() - started,
        first_evidence[0] if first_evidence else None,
        sum("llm_call" in e for e in agent.trace),
        agent.outcome,
        agent.trace,
    )
    return reply, result.conversation_id


async def _ask_plain(service: Any, text: str, history: tuple[str, str] | None) -> Reply:
    """Top-k chunks under the agent's context budget and one call (see the module docstring)."""
    started = time.perf_counter()
    query = f"{history[0]} {text}" if history else text
    found = await service.search(query, k=service.settings.context.candidates)
    config = service.settings.context.model_copy(
        update={
            "selection": "topk",
            "order": "score",
            "budget_tokens": service.settings.context.budget_tokens,
        }
    )
    passages: list[Passage] = (await service.assemble_context(found, config)).passages()
    asked = (
        f"Earlier question: {history[0]}\nEarlier answer: {history[1]}\nQuestion: {text}" if history else text
    )
    # The same bounded call as the agent's (settings.llm.timeout_s): a call that times out or
    # cannot be read is this question's failure, scored as a reply without facts, not the run's end.
    outcome = "answered"
    with dspy.context(**await service.dspy_settings()):
        try:
            prediction, _ = await LLMCalls(service.settings.llm.timeout_s).ask(
                dspy.Predict(PlainAnswer), {"question": asked, "passages": number_passages(passages)}
            )
            answer = prediction.answer
        except UnreadableReplyError as exc:
            answer = answer_of_a_cut_reply(exc.reply)  # the agent keeps a cut reply's sentences too
        except LLMUnavailableError:
            answer, outcome = "", "llm_unavailable"
    cited = cited_numbers(answer, len(passages))
    return Reply(
        answer,
        [],
        [f"{p.label()}\n{p.text}" for p in passages],
        [p.chunk.source for n, p in enumerate(passages, start=1) if n in cited],
        time.perf_counter() - started,
        None,
        1,
        outcome,
        [],
    )


def own_sentences(text: str) -> str:
    """A reply's own sentences: its text before the first quoted line (a line opening with “)."""
    lines = []
    for line in text.splitlines():
        if line.lstrip().startswith("“"):
            break
        lines.append(line)
    return "\n".join(lines).strip()


def found(question: Question, text: str, measure: Measure, lenient: bool = False) -> int:
    """How many of the question's must-have phrases, or gold figures, ``text`` states; ``lenient``
    counts a gold figure among all the numbers of a context (as :mod:`evaluation.context` does)."""
    if measure == "phrases":
        return len(phrases_found(question.must_have, text))
    gold = figures(question.answer)
    return len(stated_figures(gold, all_numbers(text) if lenient else figures(text)))


def wanted(question: Question, measure: Measure) -> int:
    """How many phrases or figures an answer to ``question`` should state (0: not scored)."""
    return len(question.must_have) if measure == "phrases" else len(figures(question.answer))


def score(question: Question, reply: Reply, measure: Measure) -> dict[str, Any]:
    """One question's row (see the module docstring)."""
    own = own_sentences(reply.text)
    whole = "\n".join([reply.text, *reply.evidence])
    generated = [e for e in reply.trace if e.get("step") == Step.GENERATE]
    drafts = [e["answer"] for e in generated]
    return {
        "half": question.half,
        "row": question.row,
        "id": question.ident,
        "follow_up_of": question.follow_up_of,
        "question": question.text,
        "question_type": question.kind,
        "answerable": question.answerable,
        "outcome": reply.outcome,
        "answer": reply.text,
        "evidence": reply.evidence,
        "reply_chars": len(reply.text) + sum(len(q) for q in reply.evidence),
        "wanted": wanted(question, measure),
        "own": found(question, own, measure),
        "draft": found(question, drafts[0] if drafts else reply.text, measure),
        "whole": found(question, whole, measure),
        "context": found(question, "\n".join(reply.context), measure, lenient=True),
        "context_chars": sum(len(c) for c in reply.context),
        "gold_cited": question.gold_found(reply.sources) if question.answerable else None,
        # A reply the LLM never wrote answers nothing: counted with the refusals, never hidden.
        "refused": reply.outcome == "llm_unavailable" or says_not_answered(own),
        "unstated_figures": sorted(unstated_in_answer(reply)),
        "seconds": round(reply.seconds, 3),
        "first_evidence_s": round(reply.first_evidence_s, 3) if reply.first_evidence_s is not None else None,
        "llm_calls": reply.llm_calls,
        "sources": sorted(set(reply.sources)),
        "steps": [e.get("step") for e in reply.trace],
        "drafts": drafts,
        # which drafts ran to the token limit (the answer code reads a cut draft differently)
        "drafts_cut": [bool(e.get("cut_off")) for e in generated],
        "dropped": [d for e in reply.trace if e.get("step") == Step.COMPOSE for d in e["dropped"]],
    }


def unstated_in_answer(reply: Reply) -> set[str]:
    """Figures of an answered reply's text that no passage it was written from states, nor a
    share code derived with its inputs shown: a verified answer should have none."""
    if reply.outcome != "answered":
        return set()
    wanted = figures(reply.text) - derived_figures(reply.text)
    return wanted - stated_figures(wanted, all_numbers("\n".join(reply.context)))


def bench_dev_sets_of(settings: Settings, *names: str) -> dict[str, Any]:
    """:func:`bench_dev_sets` on the named sets only, both halves."""
    return bench_dev_sets(settings, [s for s in dev_sets() if s.name in names])


def from_environment(settings: Settings) -> dict[str, Any]:
    """:func:`bench_dev_sets` with the sets, half and systems of ``BENCH_SETS``, ``BENCH_HALF``
    and ``BENCH_SYSTEMS`` (all by default)."""
    names = [n.strip() for n in os.environ.get("BENCH_SETS", "").split(",") if n.strip()]
    sets = [s for s in dev_sets() if not names or s.name in names]
    half = os.environ.get("BENCH_HALF", "both")
    systems = [s.strip() for s in os.environ.get("BENCH_SYSTEMS", ",".join(SYSTEMS)).split(",") if s.strip()]
    return bench_dev_sets(settings, sets, HALVES if half == "both" else (half,), systems)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="evaluation.benchmarks.dev_sets", description=__doc__)
    parser.add_argument("--summarise", nargs="+", type=Path, required=True, help="JSONL rows of earlier runs")
    args = parser.parse_args(argv)
    print(json.dumps(summarise_files(args.summarise), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
