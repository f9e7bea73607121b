"""Feedback: the SQLite store, the admin report with charts, and export → ``eval feedback``."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from evaluation.doubles.fake_llm import FakeLLMServer
from evaluation.feedback_report import summarise
from index_build.builder import ingest
from pipeline.answers import Feedback
from pipeline.errors import InvalidRequestError, NotFoundError
from server.doors.cli import main as cli_main
from server.service import open_service
from server.settings import load_settings
from server.stores.conversations import StoredAnswer
from server.stores.database import SQLiteDatabase
from server.stores.feedback import FeedbackStore
from tests.samples import write_sample_corpus

ANSWER = StoredAnswer(
    "a1", "c1", "When?", "In April [1].", "answered", "general", ("handbook",), ("file:///h.md",), ""
)


def test_the_store_pseudonymises_users_and_retracts_only_the_matching_reaction(tmp_path):
    store = FeedbackStore(SQLiteDatabase(tmp_path / "f.sqlite3", busy_timeout_s=10.0))
    store.add(Feedback("a1", "slack", user="U1", rating=4, reaction="+1"), ANSWER)
    store.add(Feedback("a1", "slack", user="U1", rating=1, label="Incorrect answer", reaction="x"), ANSWER)
    store.add(Feedback("a1", "slack", user="U2", rating=4, reaction="+1"), ANSWER)
    users = {r.user for r in store.records()}
    assert len(users) == 2 and "U1" not in users and all(len(u) == 16 for u in users)
    assert store.retract("a1", "slack", "U1", "+1") == 1
    assert sorted((r.rating, r.reaction) for r in store.records()) == [(1, "x"), (4, "+1")]

    reopened = FeedbackStore(
        SQLiteDatabase(tmp_path / "f.sqlite3", busy_timeout_s=10.0)
    )  # the pseudonym key is kept in the store
    assert {r.user for r in reopened.records()} <= users
    assert reopened.pseudonym("slack", "U2") in users
    assert reopened.records(since=datetime.now(UTC) + timedelta(minutes=1)) == []


def test_feedback_without_a_judgement_or_with_an_unknown_label_is_refused(tmp_path):
    store = FeedbackStore(SQLiteDatabase(tmp_path / "f.sqlite3", busy_timeout_s=10.0))
    with pytest.raises(InvalidRequestError, match="needs a rating"):
        store.add(Feedback("a1", "http"), ANSWER)
    with pytest.raises(InvalidRequestError, match="unknown label"):
        store.add(Feedback("a1", "http", label="Great"), ANSWER)
    with pytest.raises(InvalidRequestError, match="from 1 to 5"):
        store.add(Feedback("a1", "http", rating=9), ANSWER)
    assert store.records() == []


def test_the_summary_puts_the_worst_rated_questions_first(tmp_path):
    store = FeedbackStore(SQLiteDatabase(tmp_path / "f.sqlite3", busy_timeout_s=10.0))
    good = ANSWER
    bad = StoredAnswer("a2", "c2", "Why?", "No idea.", "answered", "alma", ("kb",), (), "")
    store.add(Feedback("a1", "teams", user="u", rating=5, label="Perfect answer, accurate"), good)
    store.add(Feedback("a2", "teams", user="u", rating=1, label="Irrelevant"), bad)
    store.add(Feedback("a2", "slack", user="v", rating=2), bad)
    summary = summarise(store.records())
    assert summary.ratings == {1: 1, 2: 1, 3: 0, 4: 0, 5: 1} and summary.mean_rating == pytest.approx(
        8 / 3, 1e-3
    )
    assert [w["question"] for w in summary.worst_questions] == ["Why?", "When?"]
    assert (
        summary.by_domain["alma"]["mean_rating"] == 1.5 and summary.by_collection["handbook"]["records"] == 1
    )
    assert summary.labels["Irrelevant"] == 1 and summary.by_platform == {"teams": 2, "slack": 1}


def test_report_charts_and_an_export_that_round_trips_into_eval(tmp_path, embedder, monkeypatch, capsys):
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    env = {
        "DOCFINDER_INDEX__DIR": str(tmp_path / "index"),
        "DOCFINDER_STORES__CONVERSATIONS_PATH": str(tmp_path / "c.sqlite3"),
        "DOCFINDER_STORES__FEEDBACK_PATH": str(tmp_path / "f.sqlite3"),
    }
    with FakeLLMServer() as llm:
        for name, value in {**env, "DOCFINDER_LLM__API_BASE": llm.url}.items():
            monkeypatch.setenv(name, value)
        asyncio.run(_seed(load_settings(), embedder))

    assert cli_main(["feedback", "report", "--out", str(tmp_path / "report")]) == 0
    assert cli_main(["feedback", "report", "--format", "html", "--out", str(tmp_path / "report")]) == 0
    for chart in ("ratings.png", "labels.png", "by_domain.png"):
        assert (tmp_path / "report" / chart).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert (
        "4 judgements" in markdown
        and "| Incorrect answer | 1 |" in markdown
        and "![ratings](ratings.png)" in markdown
    )
    assert "<table>" in (tmp_path / "report" / "report.html").read_text()

    items = tmp_path / "items.jsonl"
    assert cli_main(["feedback", "export", "--out", str(items)]) == 0
    exported = [json.loads(line) for line in items.read_text().splitlines()]
    assert len(exported) == 4 and sum(i["good"] for i in exported) == 2
    capsys.readouterr()
    assert cli_main(["eval", "feedback", "--items", str(items)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["good_with_sources"] == 2 and report["gold_source_hit@10"] == 1.0 and report["mrr"] > 0.5
    assert report["judged_bad"] == 2 and report["to_review"] == ["How are data delivered?"]


async def _seed(settings, embedder) -> None:
    async with open_service(settings, embedder=embedder) as service:
        due = await service.ask("When are proposals due?")
        limit = await service.ask("How many co-investigators may a proposal name?")
        other = await service.ask("How are data delivered?")
        judgements = [
            Feedback(
                due.answer_id, "slack", user="U1", rating=5, label="Perfect answer, accurate", reaction="x1"
            ),
            Feedback(limit.answer_id, "teams", user="U2", rating=4),
            Feedback(other.answer_id, "slack", user="U1", rating=1, label="Incorrect answer"),
            Feedback(other.answer_id, "mcp", rating=2, comment="too vague"),
        ]
        for judgement in judgements:
            await service.record_feedback(judgement)
        with pytest.raises(NotFoundError):
            await service.record_feedback(Feedback("no-such-answer", "http", rating=3))
