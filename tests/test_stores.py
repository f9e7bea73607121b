"""The conversation and feedback repositories, the same tests on SQLite and on a real PostgreSQL.

PostgreSQL runs when ``TEST_POSTGRES_DSN`` names a server (``.ci/run`` starts one on
loopback); each test gets a fresh database there.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from pipeline.answers import AgentAnswer, AskResult, Citation, Feedback
from pipeline.errors import NotFoundError
from server.stores.conversations import ConversationStore
from server.stores.database import Database, PostgresDatabase, SQLiteDatabase, open_database
from server.stores.feedback import FeedbackStore
from tests.postgres import fresh_database


@pytest.fixture(params=["sqlite", "postgresql"])
def database_factory(request, tmp_path):
    """A function that opens (again) the same fresh database, on each backend."""
    opened: list[Database] = []
    if request.param == "sqlite":

        def factory() -> Database:
            opened.append(SQLiteDatabase(tmp_path / "store.sqlite3", busy_timeout_s=10.0))
            return opened[-1]

        yield factory
    else:
        with fresh_database() as test_dsn:

            def factory() -> Database:
                opened.append(PostgresDatabase(test_dsn, busy_timeout_s=10.0))
                return opened[-1]

            yield factory
            for database in opened:
                database.close()
        return
    for database in opened:
        database.close()


def asked(answer_id: str, conversation_id: str, question: str, answer: str) -> AskResult:
    citation = Citation(
        1, "Handbook", "/docs/h.pdf", (3, 3), ("Setup",), "h-0001", "file:///docs/h.pdf#page=3"
    )
    agent = AgentAnswer(
        answer, "answered", [citation], {"supported": "yes", "useful": "yes"}, question, "alma"
    )
    return AskResult(answer_id, conversation_id, agent, ("manuals",))


def test_conversations_keep_turns_in_order_and_answers_by_id(database_factory):
    store = ConversationStore(database_factory())
    store.record("When?", asked("a1", "c1", "When is it due?", "In April [1]."))
    store.record("And where?", asked("a2", "c1", "Where is it submitted?", "Online [1]."))
    store.record("Other", asked("a3", "c2", "Other?", "No."))
    assert store.history("c1") == [
        ("user", "When?"),
        ("assistant", "In April [1]."),
        ("user", "And where?"),
        ("assistant", "Online [1]."),
    ]
    assert store.history("c1", max_turns=2) == [("user", "And where?"), ("assistant", "Online [1].")]
    answer = store.answer("a2")
    assert (answer.question, answer.domain, answer.collections) == (
        "Where is it submitted?",
        "alma",
        ("manuals",),
    )
    assert answer.sources == ("file:///docs/h.pdf#page=3",)
    with pytest.raises(NotFoundError, match="no answer with id 'nope'"):
        store.answer("nope")

    store.remember_message("slack", "C1:1.1", "a1")
    store.remember_message("slack", "C1:1.1", "a2")  # the message was edited into another answer
    assert store.answer_for_message("slack", "C1:1.1") == "a2"
    with pytest.raises(NotFoundError):
        store.answer_for_message("teams", "C1:1.1")

    reopened = ConversationStore(database_factory())  # tables exist already; data survives
    assert len(reopened.history("c1")) == 4


def test_unanswered_questions_are_listed_for_the_audit(database_factory):
    store = ConversationStore(database_factory())
    store.record("When?", asked("a1", "c1", "When is it due?", "In April [1]."))
    refused = asked("a2", "c1", "Who signs it?", "The documents do not say.")
    store.record(
        "Who?", AskResult("a2", "c1", replace(refused.agent, outcome="not_in_documents"), ("manuals",))
    )
    [(question, outcome, collections, _)] = store.unanswered(["not_in_documents", "unverified"])
    assert (question, outcome, collections) == ("Who signs it?", "not_in_documents", ("manuals",))


def test_an_owners_conversations_are_listed_latest_first_with_their_turns(database_factory):
    store = ConversationStore(database_factory())
    first, second = store.open(None, "key:staff"), store.open(None, "key:staff")
    theirs = store.open(None, "key:other")
    empty = store.open(None, "key:staff")  # opened, never asked in: not listed
    store.record("When?", asked("a1", first, "When is it due?", "In April [1]."))
    store.record("Where?", asked("a2", theirs, "Where is it?", "Here [1]."))
    store.record("Who?", asked("a3", second, "Who signs it?", "The director [1]."))
    store.record("And how?", asked("a4", first, "And how is it sent?", "By mail [1]."))
    listed = store.conversations_of("key:staff")
    assert {c[0] for c in listed} == {first, second} and empty not in {c[0] for c in listed}
    assert {(c[0], c[1], c[3]) for c in listed} == {(first, "When?", 4), (second, "Who?", 2)}
    assert [role for role, *_ in store.transcript(first)] == ["user", "assistant", "user", "assistant"]
    assert [a for _, _, a, _ in store.transcript(first)] == [None, "a1", None, "a4"]
    assert store.conversations_of("key:nobody") == []


def test_feedback_records_retracts_and_keeps_its_pseudonym_key(database_factory):
    conversations = ConversationStore(database_factory())
    conversations.record("When?", asked("a1", "c1", "When is it due?", "In April [1]."))
    answer = conversations.answer("a1")
    store = FeedbackStore(database_factory())
    first = store.add(Feedback("a1", "slack", user="U1", rating=4, reaction="+1", channel="C1"), answer)
    store.add(Feedback("a1", "slack", user="U1", label="Irrelevant", reaction="no_entry_sign"), answer)
    assert first.feedback_id > 0 and first.question == "When is it due?" and first.collections == ("manuals",)
    assert store.retract("a1", "slack", "U1", "+1") == 1 and store.retract("a1", "slack", "U1", "+1") == 0
    [left] = store.records()
    assert left.label == "Irrelevant" and left.user == store.pseudonym("slack", "U1") != "U1"
    again = FeedbackStore(database_factory())
    assert again.pseudonym("slack", "U1") == left.user


def test_api_keys_are_kept_hashed_verified_listed_and_revoked_for_every_server(database_factory):
    from datetime import UTC, datetime, timedelta

    from server.stores.keys import KeyStore

    admin = KeyStore(database_factory())
    assert not admin.has_keys()
    key, secret = admin.create(
        "portal", ["search", "ask"], ["handbook"], datetime.now(UTC) + timedelta(days=1)
    )
    server = KeyStore(database_factory())  # another process sharing the database
    random_part = secret.split("_", 2)[2]  # dfk_<id>_<random>; the random part may hold "_" itself
    assert server.has_keys() and server.verify(secret) == key
    assert server.verify(secret[:-1] + ("A" if secret[-1] != "A" else "B")) is None, "a wrong secret"
    assert server.verify("dfk_" + "0" * 12 + "_" + random_part) is None, "an unknown id"
    with admin.database.read() as tx:
        stored = tx.execute("SELECT secret_sha256 FROM api_keys")
    assert secret not in repr(stored) and random_part not in repr(stored), "only a hash is kept"
    admin.revoke(key.key_id)
    found = server.verify(secret)
    assert found is not None and found.status(datetime.now(UTC)) == "revoked"
    assert [k.key_id for k in server.all_keys()] == [key.key_id]
    assert key.status(datetime.now(UTC) + timedelta(days=2)) == "expired"
    with pytest.raises(NotFoundError):
        admin.revoke("0123456789ab")


def test_a_thousand_concurrent_writes_make_exactly_a_thousand_rows(database_factory):
    conversations = ConversationStore(database_factory())
    conversations.record("When?", asked("a1", "c1", "When is it due?", "In April [1]."))
    answer = conversations.answer("a1")
    store = FeedbackStore(database_factory())
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(
            pool.map(
                lambda n: store.add(Feedback("a1", "teams", user=f"u{n}", rating=5), answer), range(1000)
            )
        )
    assert store.count() == 1000 and len({r.user for r in store.records()}) == 1000


def test_the_service_uses_postgresql_when_a_dsn_is_set(tmp_path, embedder):
    dsn = os.environ.get("TEST_POSTGRES_DSN")
    if not dsn:
        pytest.skip("no PostgreSQL server: TEST_POSTGRES_DSN is unset (.ci/run starts one)")
    from evaluation.doubles.fake_llm import FakeLLMServer
    from index_build.builder import ingest
    from server.service import open_service
    from server.settings import load_settings
    from tests.samples import write_sample_corpus

    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)

    async def scenario(settings):
        async with open_service(settings, embedder=embedder) as service:
            result = await service.ask("When are proposals due?")
            await service.record_feedback(Feedback(result.answer_id, "http", rating=5))
            return result

    with FakeLLMServer() as llm:
        settings = load_settings(
            index__dir=tmp_path / "index", llm__api_base=llm.url, stores__database_url=dsn
        )
        result = asyncio.run(scenario(settings))
    assert not (tmp_path / ".docfinder").exists(), "nothing went to SQLite"
    database = open_database(dsn, tmp_path / "unused.sqlite3", busy_timeout_s=10.0)
    try:
        with database.transaction() as tx:
            rows = tx.execute(
                "SELECT rating, question FROM feedback WHERE answer_id = ?", (result.answer_id,)
            )
    finally:
        database.close()
    assert rows == [(5, "When are proposals due?")]
