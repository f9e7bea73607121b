"""`docfinder optimize`: feedback in, a compiled program out (or none), and the service answering with it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import dspy
import pytest
from dspy.utils import DummyLM

from evaluation.doubles.fake_llm import FakeLLMServer
from evaluation.feedback_report import export_items, load_items
from evaluation.optimize import (
    FeedbackExample,
    answer_score,
    drop_long_demos,
    feedback_examples,
    optimize_program,
    split_examples,
    why_not_save,
)
from evaluation.questions import Question
from index_build.builder import ingest
from pipeline.answers import AgentAnswer, Citation, Feedback
from pipeline.errors import ConfigurationError, InvalidRequestError
from programs.agent import AnswerAgent
from programs.saved import load_program, save_program
from server.service import open_service
from server.settings import load_settings
from tests.conftest import REPO
from tests.samples import write_sample_corpus
from tests.test_ask import FIRST
from tests.test_eval_answers import small_dataset


def item(question: str, rating: int | None, answer: str = "an answer", label: str | None = None) -> dict:
    return {
        "question": question,
        "answer": answer,
        "rating": rating,
        "label": label,
        "sources": ["file:///a.pdf#page=2"],
    }


def test_feedback_becomes_examples_with_references_and_rejected_answers():
    items = [
        item("q1", 5),
        item("q1", 2),  # as many good as bad: the good answer is the reference, nothing rejected
        item("q2", 1, answer="Revenue was 12 [1]."),
        item("q3", None, label="Perfect answer, accurate"),
        item("q4", None),  # nobody judged it
        item("q5", 3),  # neither good nor bad
        item("q6", 1, answer="It was $9 million."),  # judged bad, but its gold answer is known
    ]
    gold = [
        Question("q3", ("3 *.pdf",), "It was $1,234 million."),
        Question("q6", ("6 *.pdf",), "It was $6,000."),
    ]
    examples = {e.question: e for e in feedback_examples(items, gold)}
    assert set(examples) == {"q1", "q2", "q3", "q6"}
    assert examples["q1"].positive and examples["q1"].reference_sources == ("file:///a.pdf",)
    assert examples["q1"].rejected is None
    assert not examples["q2"].positive and examples["q2"].rejected == "Revenue was 12 [1]."
    assert examples["q3"].reference == "It was $1,234 million." and examples["q3"].gold_docs == ("3 *.pdf",)
    assert examples["q6"].positive and examples["q6"].rejected == "It was $9 million."


def test_the_split_is_seeded_keeps_negatives_out_of_training_and_refuses_too_little():
    examples = [FeedbackExample(f"good {n}", reference="x") for n in range(7)]
    examples += [FeedbackExample(f"bad {n}", rejected="y") for n in range(4)]
    train, validation = split_examples(examples, 0.3, seed=1)
    assert (train, validation) == split_examples(examples, 0.3, seed=1)
    assert split_examples(examples, 0.3, seed=2) != (train, validation)
    assert len(train) == 5 and all(e.positive for e in train)
    assert sum(not e.positive for e in validation) == 1 and len(validation) == 3
    again = [FeedbackExample(f"rejected {n}", reference="x", rejected="y") for n in range(5)]
    train, _ = split_examples(again + examples, 0.3, seed=1)
    rejected_first = [e.rejected is not None for e in train]
    assert rejected_first == sorted(rejected_first) and len(set(rejected_first)) == 2  # likelier demos first
    with pytest.raises(InvalidRequestError, match="at least two"):
        split_examples([FeedbackExample("only", reference="x")], 0.3, seed=0)


def answered(text: str, source: str = "/docs/2023 Q1 AAPL.pdf", outcome: str = "answered") -> AgentAnswer:
    citation = Citation(1, "t", source, (2, 2), ("h",), "c1", "")
    return AgentAnswer(text, outcome, [citation], {}, "q", None)


def test_an_answer_scores_by_gold_figures_gold_documents_and_faithfulness():
    example = FeedbackExample("q", reference="Sales were $81,797 million.", gold_docs=("2023 Q1 AAPL.pdf",))
    assert answer_score(example, answered("Sales were $81,797 million [1]."), 1.0, {}) == 1.0
    assert answer_score(example, answered("Sales were $90,000 million [1]."), 1.0, {}) == pytest.approx(2 / 3)
    wrong_document = answered("Sales were $81,797 million [1].", source="/docs/2023 Q1 MSFT.pdf")
    assert answer_score(example, wrong_document, 0.5, {}) == pytest.approx(0.5)
    assert answer_score(example, answered("x", outcome="unverified"), None, {}) == 0.0
    rejected = FeedbackExample("q", rejected="Revenue was 12 million dollars [1].")
    assert answer_score(rejected, answered("Revenue was 12 million dollars [1]."), 1.0, {}) == 0.0
    assert answer_score(rejected, answered("Net sales were $81,797 million [1]."), 1.0, {}) == 1.0
    both = FeedbackExample(
        "q", reference="Sales were $81,797 million.", rejected="Sales were $90,000 million."
    )
    assert answer_score(both, answered("Sales were $90,000 million."), 1.0, {}) == 0.0  # what people rejected
    assert answer_score(both, answered("Sales were $81,797 million [1]."), 1.0, {}) == 1.0


def test_demos_too_long_for_the_llms_window_are_dropped():
    agent = AnswerAgent({}, max_passages=8, llm_timeout_s=30.0)
    agent.generate.demos = [dspy.Example(question="q", passages="x" * 4000, answer="a [1]")]
    agent.understand.demos = [dspy.Example(message="q", standalone_question="q", domain="general")]
    assert drop_long_demos(agent, context_tokens=4096) == {
        "generate": 1
    }  # 4,000 chars > 15 % of 4,096 tokens
    assert agent.generate.demos == [] and len(agent.understand.demos) == 1


def test_a_program_is_saved_only_when_it_learnt_something_and_does_not_score_lower():
    assert why_not_save(0.5, 0.6, 2, "bootstrap") is None
    assert why_not_save(0.5, 0.5, 1, "bootstrap") is None
    assert "below" in why_not_save(0.5, 0.4, 2, "bootstrap")
    assert "no training run" in why_not_save(0.5, 0.9, 0, "bootstrap")


QUESTIONS = [
    "How many channels does the spectrometer support?",
    "When is the proposal deadline?",
    "How many co-investigators may a proposal name?",
    "When are calibrated data delivered?",
    "How often is the cryostat warmed up?",
]


@pytest.fixture
def index(tmp_path, embedder):
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    return tmp_path / "index"


async def rated_feedback(service, path):
    """Answers rated as people would in Slack (the last one badly), exported as an admin would."""
    for number, question in enumerate(QUESTIONS):
        result = await service.ask(question)
        rating = 2 if number == len(QUESTIONS) - 1 else 5
        await service.record_feedback(Feedback(result.answer_id, "slack", user="U1", rating=rating))
    export_items(service.feedback.records(), path)


def test_optimize_compiles_saves_and_reloads_a_program_from_exported_feedback(tmp_path, index, embedder):
    feedback, out = tmp_path / "feedback.jsonl", tmp_path / "programs" / "handbook.json"

    async def scenario():
        with FakeLLMServer() as server:
            settings = load_settings(index__dir=index, llm__api_base=server.url, llm__model="fake")
            async with open_service(settings, embedder=embedder) as service:
                await rated_feedback(service, feedback)
                return await optimize_program(
                    service, feedback, out, judged_by=await service.dspy_settings(), seed=3
                )

    report = asyncio.run(scenario())
    assert report["examples"] == {"train": 3, "validation": 2, "validation_negatives": 1}
    assert report["saved"] and report["reloaded"] and report["demos_learnt"] >= 1
    assert 0 <= report["validation_before"]["score"] <= report["validation_after"]["score"] <= 1
    saved = json.loads(out.read_text())
    assert saved["metadata"]["optimizer"] == "bootstrap" and len(saved["metadata"]["data_sha256"]) == 64
    assert saved["metadata"]["score_after"] == report["validation_after"]["score"]
    demos = [d for state in saved["state"].values() for d in state["demos"]]
    assert any(d.get("question") in QUESTIONS[:-1] for d in demos)  # learnt from a well-rated question


def test_optimize_with_miprov2_proposes_instructions_and_saves_only_a_program_that_fits(
    tmp_path, index, embedder
):
    feedback, out = tmp_path / "feedback.jsonl", tmp_path / "mipro.json"

    async def scenario():
        with FakeLLMServer() as server:
            settings = load_settings(index__dir=index, llm__api_base=server.url, llm__model="fake")
            async with open_service(settings, embedder=embedder) as service:
                await rated_feedback(service, feedback)
                report = await optimize_program(
                    service, feedback, out, judged_by=await service.dspy_settings(), optimizer="mipro"
                )
            return report, server.schemas

    report, schemas = asyncio.run(scenario())
    assert any("proposed_instruction" in s.get("properties", {}) for s in schemas)  # MIPROv2 proposed
    # The last validation question was rated badly and the fake repeats itself: it scores 0.
    assert report["validation_before"]["scores"][-1] == 0.0
    assert report["saved"] and report["program"]["optimizer"] == "mipro"
    load_program(AnswerAgent({}, max_passages=8, llm_timeout_s=30.0), out)


def test_ask_answers_with_the_compiled_program_the_setting_names(tmp_path, index, embedder):
    agent = AnswerAgent({}, max_passages=8, llm_timeout_s=30.0)
    demo = dspy.Example(
        question="Which band covers 100 GHz?",
        passages="[1] Instrument Guide\nBand 3 covers 84-116 GHz.",
        glossary="",
        answer="Band 3 covers 100 GHz [1].",
        sources=[1],
    )
    agent.generate.demos = [demo]
    path = tmp_path / "handbook-v2.json"
    save_program(agent, path, {"optimizer": "bootstrap", "score_before": 0.4, "score_after": 0.6})
    settings = load_settings(
        index__dir=index, stores__conversations_path=tmp_path / "c.sqlite3", agent__program_path=path
    )
    model = DummyLM(FIRST, adapter=dspy.JSONAdapter())

    async def scenario():
        async with open_service(settings, embedder=embedder, lm=model, llm_history=True) as service:
            result = await service.ask("When are proposals due?")
            return result, await service.health(), await service.index_info()

    result, health, info = asyncio.run(scenario())
    assert result.agent.outcome == "answered"
    generate_prompt = str(model.history[0]["messages"])  # a first question: generate is the first call
    assert "Band 3 covers 100 GHz [1]." in generate_prompt  # the learnt demo reached the LLM
    assert health["program"] == "handbook-v2"
    assert info["program"] == {
        "name": "handbook-v2",
        "optimizer": "bootstrap",
        "score_before": 0.4,
        "score_after": 0.6,
    }


def test_a_program_file_that_does_not_fit_the_agent_fails_at_start(tmp_path, index, embedder):
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"format": "docfinder-program/1", "metadata": {}, "state": {"generate": {}}}))
    settings = load_settings(index__dir=index, agent__program_path=wrong)

    async def start():
        async with open_service(settings, embedder=embedder):
            pass

    with pytest.raises(ConfigurationError, match=r"program_path: .*wrong\.json holds predictors"):
        asyncio.run(start())
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ConfigurationError, match="not JSON"):
        load_program(AnswerAgent({}, max_passages=8, llm_timeout_s=30.0), tmp_path / "broken.json")


def docfinder(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "server.doors.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        timeout=600,
    )


def test_the_admin_workflow_on_the_command_line(tmp_path):
    """eval answers (with simulated reactions) → optimize → index info names the live program."""
    dataset = small_dataset(tmp_path / "handbook-qa")
    feedback, program = tmp_path / "feedback.jsonl", tmp_path / "handbook.json"
    cache, report = tmp_path / "cache", tmp_path / "report"
    with FakeLLMServer() as server:
        env = {"DOCFINDER_LLM__API_BASE": server.url, "DOCFINDER_LLM__MODEL": "fake"}
        evaluated = docfinder(
            "eval", "answers", "--dataset", str(dataset), "--questions", "questions.csv", "--json",
            "--cache", str(cache), "--rows", str(tmp_path / "rows.jsonl"), "--report", str(report),
            "--simulate-feedback", str(feedback), env=env,
        )  # fmt: skip
        assert evaluated.returncode == 0, evaluated.stderr
        assert json.loads(evaluated.stdout)["metrics"]["faithfulness"]["scored"] == 3
        assert (report / "report.md").is_file() and len(load_items(feedback)) == 3
        index = cache / "handbook-qa-docs"
        optimized = docfinder(
            "optimize", "--feedback", str(feedback), "--questions", str(dataset / "questions.csv"),
            "--out", str(program), "--index", str(index), "--validation-share", "0.4", env=env,
        )  # fmt: skip
    assert optimized.returncode == 0, optimized.stderr
    result = json.loads(optimized.stdout)  # stdout is the report alone: DSPy's progress went to stderr
    assert result["saved"] and result["program"]["name"] == "handbook"
    info = docfinder(
        "index", "info", "--json", "--index", str(index), env={"DOCFINDER_AGENT__PROGRAM_PATH": str(program)}
    )
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["program"]["name"] == "handbook"
