"""Conversation history and the answers given, in SQLite or PostgreSQL (see :mod:`server.stores.database`).

A conversation is an id and its turns (``user`` / ``assistant``), oldest first; the condense
step reads them. Every answer is also kept by its id with its sources, domain and
collections, so feedback arriving later (a reaction hours after) can describe what it judges,
and the chat message that shows it is noted, so a reaction to that message finds it.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pipeline.answers import AskResult
from pipeline.errors import NotFoundError
from server.stores.database import Database, Dialect, create_tables

_TABLES = """
CREATE TABLE IF NOT EXISTS turns (
    conversation_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    text TEXT NOT NULL,
    answer_id TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (conversation_id, position)
);
CREATE TABLE IF NOT EXISTS answers (
    answer_id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    outcome TEXT NOT NULL,
    domain TEXT,
    collections TEXT NOT NULL,
    sources TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS conversations (
    conversation_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    platform TEXT NOT NULL,
    message_ref TEXT NOT NULL,
    answer_id TEXT NOT NULL,
    PRIMARY KEY (platform, message_ref)
)
"""
SCHEMA: dict[Dialect, str] = {"sqlite": _TABLES, "postgresql": _TABLES}


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """An answer as it was given: what feedback on it records."""

    answer_id: str
    conversation_id: str
    question: str
    answer: str
    outcome: str
    domain: str | None
    collections: tuple[str, ...]
    sources: tuple[str, ...]
    created_at: str


class ConversationStore:
    """Reads and appends conversation turns and answers; safe to share between threads."""

    def __init__(self, database: Database) -> None:
        self._db = database
        create_tables(database, SCHEMA)

    @staticmethod
    def new_id() -> str:
        """A fresh, unguessable conversation id (144 random bits)."""
        return secrets.token_urlsafe(18)

    def open(self, conversation_id: str | None, owner: str, create_named: bool = False) -> str:
        """The conversation to continue: a new one for ``None``, else ``conversation_id`` if ``owner`` has it.

        Another owner's conversation, and one that does not exist, are the same
        :class:`NotFoundError`: a caller cannot tell them apart. ``create_named`` (chat bots,
        whose thread is the conversation) starts an unknown id under ``owner`` instead.
        """
        now = datetime.now(UTC).isoformat(timespec="seconds")
        if conversation_id is None:
            conversation_id = self.new_id()
            with self._db.transaction() as tx:
                tx.execute("INSERT INTO conversations VALUES (?, ?, ?)", (conversation_id, owner, now))
            return conversation_id
        with self._db.read() as tx:
            rows = tx.execute("SELECT owner FROM conversations WHERE conversation_id = ?", (conversation_id,))
        if not rows and create_named:
            with self._db.transaction() as tx:
                tx.execute(
                    "INSERT INTO conversations VALUES (?, ?, ?) ON CONFLICT (conversation_id) DO NOTHING",
                    (conversation_id, owner, now),
                )
                rows = tx.execute(
                    "SELECT owner FROM conversations WHERE conversation_id = ?", (conversation_id,)
                )
        if not rows or rows[0][0] != owner:
            raise NotFoundError(f"no conversation with id {conversation_id!r}")
        return conversation_id

    def owner(self, conversation_id: str) -> str | None:
        """Who a conversation belongs to (None when there is no such conversation)."""
        with self._db.read() as tx:
            rows = tx.execute("SELECT owner FROM conversations WHERE conversation_id = ?", (conversation_id,))
        return rows[0][0] if rows else None

    def history(self, conversation_id: str, max_turns: int = 10) -> list[tuple[str, str]]:
        """The last ``max_turns`` turns as (role, text), oldest first."""
        with self._db.read() as tx:
            rows = tx.execute(
                "SELECT role, text FROM turns WHERE conversation_id = ? ORDER BY position DESC LIMIT ?",
                (conversation_id, max_turns),
            )
        return [(role, text) for role, text in reversed(rows)]

    def record(self, message: str, result: AskResult) -> None:
        """Record one exchange (the user's message and the answer) and the answer itself, atomically."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        agent = result.agent
        sources = [c.link or c.source for c in agent.citations]
        with self._db.transaction() as tx:
            if self._db.dialect == "postgresql":  # serialise appends to one conversation
                tx.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (result.conversation_id,))
            [(last,)] = tx.execute(
                "SELECT COALESCE(MAX(position), -1) FROM turns WHERE conversation_id = ?",
                (result.conversation_id,),
            )
            tx.executemany(
                "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (result.conversation_id, last + 1, "user", message, None, now),
                    (result.conversation_id, last + 2, "assistant", agent.answer, result.answer_id, now),
                ],
            )
            tx.execute(
                "INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    result.answer_id,
                    result.conversation_id,
                    agent.question,
                    agent.answer,
                    agent.outcome,
                    agent.domain,
                    json.dumps(list(result.collections)),
                    json.dumps(sources),
                    now,
                ),
            )

    def conversations_of(self, owner: str, limit: int = 50) -> list[tuple[str, str, str, int]]:
        """(conversation id, its first question, when it was last added to, its turns) of
        ``owner``'s conversations that hold a turn, the latest first."""
        with self._db.read() as tx:
            rows = tx.execute(
                "SELECT c.conversation_id, MAX(t.created_at), COUNT(*),"
                " MIN(CASE WHEN t.position = 0 THEN t.text END)"
                " FROM conversations c JOIN turns t ON t.conversation_id = c.conversation_id"
                " WHERE c.owner = ? GROUP BY c.conversation_id ORDER BY MAX(t.created_at) DESC,"
                " c.conversation_id LIMIT ?",
                (owner, limit),
            )
        return [(cid, first or "", last, int(turns)) for cid, last, turns, first in rows]

    def transcript(self, conversation_id: str) -> list[tuple[str, str, str | None, str]]:
        """Every turn of a conversation as (role, text, answer id, when), oldest first."""
        with self._db.read() as tx:
            rows = tx.execute(
                "SELECT role, text, answer_id, created_at FROM turns WHERE conversation_id = ?"
                " ORDER BY position",
                (conversation_id,),
            )
        return [(role, text, answer_id, when) for role, text, answer_id, when in rows]

    def unanswered(self, outcomes: Sequence[str]) -> list[tuple[str, str, tuple[str, ...], str]]:
        """(question, outcome, collections, asked at) of every answer whose outcome is one of
        ``outcomes`` ("not_in_documents"), oldest first."""
        marks = ", ".join("?" for _ in outcomes)
        with self._db.read() as tx:
            rows = tx.execute(
                f"SELECT question, outcome, collections, created_at FROM answers WHERE outcome IN ({marks})"
                " ORDER BY created_at",
                tuple(outcomes),
            )
        return [(question, outcome, tuple(json.loads(c)), when) for question, outcome, c, when in rows]

    def answer(self, answer_id: str) -> StoredAnswer:
        """The answer given under ``answer_id``; :class:`NotFoundError` when there is none."""
        with self._db.read() as tx:
            rows = tx.execute("SELECT * FROM answers WHERE answer_id = ?", (answer_id,))
        if not rows:
            raise NotFoundError(f"no answer with id {answer_id!r}")
        (answer_id, conversation_id, question, answer, outcome, domain, collections, sources, created) = rows[
            0
        ]
        return StoredAnswer(
            answer_id,
            conversation_id,
            question,
            answer,
            outcome,
            domain,
            tuple(json.loads(collections)),
            tuple(json.loads(sources)),
            created,
        )

    def remember_message(self, platform: str, message_ref: str, answer_id: str) -> None:
        """Note that chat message ``message_ref`` on ``platform`` shows answer ``answer_id``."""
        with self._db.transaction() as tx:
            tx.execute(
                "INSERT INTO messages VALUES (?, ?, ?) ON CONFLICT (platform, message_ref)"
                " DO UPDATE SET answer_id = excluded.answer_id",
                (platform, message_ref, answer_id),
            )

    def answer_for_message(self, platform: str, message_ref: str) -> str:
        """The answer id a chat message shows; :class:`NotFoundError` for a message that is not an answer."""
        with self._db.read() as tx:
            rows = tx.execute(
                "SELECT answer_id FROM messages WHERE platform = ? AND message_ref = ?",
                (platform, message_ref),
            )
        if not rows:
            raise NotFoundError(f"{platform} message {message_ref!r} is not a docfinder answer")
        return rows[0][0]
