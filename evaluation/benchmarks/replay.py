"""Replay a dev-sets run's drafts through today's answer code, without the LLM.

What the user reads is built by code from the model's draft (:mod:`pipeline.answering.extractive`:
sentences kept or dropped, quotes chosen and cut). A change there can be measured on the drafts
an earlier ``make bench ONLY=answers`` run recorded (``drafts`` in the agent rows of
``bench-results/answers_<set>.jsonl``) in minutes, where a live run of the embedded model takes
an hour or two: every question is asked again through the service, and the scripted LM writes
that question's drafts in the order the run's model wrote them (a rewrite of the search is the
question again; a draft asked for beyond those recorded repeats the last; the scripted LM reports
each draft's tokens as far as the answer code reads them: every token allowed for a draft the run
records as cut at the token limit (written with an unfinished clause after it, as the model's
words went on past the last one recorded), fewer for one it did not, so a draft ending without a
full stop, "… <heading>, p. 11", is read whole, as in the run; rows recorded before 29
November say neither and report no tokens: a draft of theirs ending mid-sentence is read as
cut). Retrieval is deterministic, so the model's citations keep their meaning as long as the
index and the retrieval code are the run's; a change that alters the context needs a live run.

The replayed rows are scored like the run's (:func:`evaluation.benchmarks.dev_sets.score`) and
summarised beside the run's plain rows, so the bench's table and targets come out as if the run
had been made with today's code; latency and LLM calls are the run's.

    python -m evaluation.benchmarks.replay bench-results/answers_techdocs.jsonl [...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import dspy
from dspy.clients.engines.dummy_engine import AsyncDummyEngine, DummyEngine
from dspy.lm15 import Usage
from dspy.utils import DummyLM

from evaluation.answers import indexed_dataset
from evaluation.benchmarks.dev_set_summary import summarise
from evaluation.benchmarks.dev_sets import DevSet, Reply, dev_sets, score
from evaluation.questions import Question, dataset_docs, load_questions
from server.service import open_service
from server.settings import Settings, load_settings

UNFINISHED = " and the"  # after a draft the run's model cut off at its token limit: words went on
WHOLE_DRAFT_TOKENS = 1  # reported for a draft the run did not cut: any count under the limit


class Drafts(DummyLM):
    """An LM that writes a run's drafts for the question being asked (:meth:`asking`), each with
    the tokens the answer code reads a cut from (``answer_tokens``: the run's limit)."""

    def __init__(self, answer_tokens: int) -> None:
        self.script = _Script()
        self.answer_tokens = answer_tokens
        super().__init__(self.script, adapter=dspy.JSONAdapter())
        self._engine_spec = _CountingEngine(self)  # DummyLM's engine, reporting the draft's tokens
        self._async_engine_spec = AsyncDummyEngine(self._engine_spec)

    def asking(self, question: str, drafts: Sequence[str], cut: Sequence[bool] = ()) -> None:
        drafts = list(drafts) or ["The documents do not say."]
        # Rows before 29 Nov record no cuts: their drafts report no tokens.
        flags = [*cut[: len(drafts)], *[None] * (len(drafts) - len(cut))]
        written = [f"{draft}{UNFINISHED}" if was_cut else draft for draft, was_cut in zip(drafts, flags)]
        reported = {True: self.answer_tokens, False: WHOLE_DRAFT_TOKENS, None: 0}
        self.script.start(question.strip(), written, [reported[was_cut] for was_cut in flags])


class _CountingEngine(DummyEngine):
    """DummyLM's engine with the written draft's tokens in the response's usage (none for a call
    that writes no draft: the query's rewrite)."""

    def _complete_messages(self, messages):  # type: ignore[no-untyped-def]
        self.owner.script.tokens = 0
        response = super()._complete_messages(messages)
        tokens = self.owner.script.tokens
        return replace(response, usage=Usage(input_tokens=0, output_tokens=tokens, total_tokens=tokens))


class _Script(dict):
    """DummyLM's answers for the question being asked, built afresh for each call (DummyLM reads
    its answers' ``items()`` on every call and formats the first whose key the prompt holds)."""

    def start(self, question: str, drafts: list[str], tokens: Sequence[int]) -> None:
        self.question, self.drafts, self.written = question, drafts, 0
        self.draft_tokens, self.tokens = list(tokens), 0

    def items(self):  # type: ignore[override]
        return [
            ("[[ ## problem ## ]]", {"rewritten": self.question}),
            ("[[ ## passages ## ]]", _NextDraft(self)),
        ]


class _NextDraft(dict):
    """The answering call's reply: the question's next draft, taken when DummyLM formats it."""

    def __init__(self, script: _Script) -> None:
        super().__init__()
        self.script = script

    def items(self):  # type: ignore[override]
        at = min(self.script.written, len(self.script.drafts) - 1)
        draft = self.script.drafts[at]
        self.script.tokens = self.script.draft_tokens[at]
        self.script.written += 1
        return [("answer", draft)]


def replay_rows(
    run_rows: Sequence[Mapping[str, Any]],
    settings: Settings,
    cache_dir: Path = Path(".docfinder/eval"),
    sets: Sequence[DevSet] | None = None,
) -> list[dict[str, Any]]:
    """The run's agent rows answered again by today's code from their drafts, set by set."""
    replayed = []
    for dev_set in sets or dev_sets():
        rows = {r["row"]: r for r in run_rows if r["set"] == dev_set.name and r["system"] == "agent"}
        if not rows:
            continue
        questions = load_questions(dev_set.questions)
        indexed = indexed_dataset(
            settings, dataset_docs(dev_set.questions.parent, dev_set.docs), cache_dir, "replay"
        )
        replayed += asyncio.run(_replay_set(indexed, dev_set, questions, rows))
    return replayed


async def _replay_set(
    settings: Settings, dev_set: DevSet, questions: list[Question], rows: Mapping[int, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    lm = Drafts(settings.agent.answer_tokens)
    by_ident = {q.ident: q for q in questions if q.ident}
    by_text = {r["question"]: r for r in rows.values()}
    conversations: dict[str, str] = {}
    replayed = []
    async with open_service(settings, lm=lm) as service:
        for question in questions:
            run = rows.get(question.row)
            if run is None:
                continue
            earlier = by_ident.get(question.follow_up_of)
            conversation = None
            if earlier is not None:
                if earlier.ident not in conversations:
                    lead = by_text.get(earlier.text, {"drafts": []})
                    lm.asking(earlier.text, lead["drafts"], lead.get("drafts_cut", ()))
                    conversations[earlier.ident] = (await service.ask(earlier.text)).conversation_id
                conversation = conversations[earlier.ident]
            lm.asking(question.text, run["drafts"], run.get("drafts_cut", ()))
            result = await service.ask(question.text, conversation_id=conversation)
            if question.ident:
                conversations[question.ident] = result.conversation_id
            agent = result.agent
            reply = Reply(
                agent.answer,
                [q.readable() for q in agent.evidence],
                list(agent.context),
                [c.source for c in agent.citations],
                run["seconds"],
                run["first_evidence_s"],
                run["llm_calls"],
                agent.outcome,
                agent.trace,
            )
            replayed.append(
                {"set": dev_set.name, "system": "agent", **score(question, reply, dev_set.measure)}
            )
    return replayed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="evaluation.benchmarks.replay", description=__doc__.split("\n")[0])
    parser.add_argument("rows", type=Path, nargs="+", help="a run's rows (bench-results/answers_<set>.jsonl)")
    parser.add_argument("--out", type=Path, default=Path("bench-results"), help="where replayed rows go")
    args = parser.parse_args(argv)
    run_rows = [
        json.loads(line) for path in args.rows for line in path.read_text().splitlines() if line.strip()
    ]
    replayed = replay_rows(run_rows, load_settings())
    args.out.mkdir(parents=True, exist_ok=True)
    for name in dict.fromkeys(r["set"] for r in replayed):
        mine = [r for r in replayed if r["set"] == name]
        (args.out / f"replay_{name}.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in mine)
        )
    plain = [r for r in run_rows if r["system"] == "plain"]
    print(
        json.dumps({"replayed": summarise(replayed + plain), "as_run": summarise(list(run_rows))}, indent=2)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
