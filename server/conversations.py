"""Conversation history and the answers given, in SQLite (WAL).

A conversation is an id and its turns (``user`` / ``assistant``), oldest first; the condense
step reads them. Every answer is also kept by its id with its sources, domain and
collections, so feedback arriving later (a reaction hours after) can describe what it judges.
Each write is one committed transaction, so an acknowledged turn survives a crash.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pipeline.answers import AskResult
from pipeline.errors import NotFoundError

SCHEMA = """
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
CREATE TABLE IF NOT EXISTS messages (
    platform TEXT NOT NULL,
    message_ref TEXT NOT NULL,
    answer_id TEXT NOT NULL,
    PRIMARY KEY (platform, message_ref)
);
"""


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
    """Reads and appends conversation turns; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=FULL")
        self._connection.executescript(SCHEMA)
        self._lock = threading.Lock()

    @staticmethod
    def new_id() -> str:
        """A fresh conversation id."""
        return uuid.uuid4().hex

    def history(self, conversation_id: str, max_turns: int = 10) -> list[tuple[str, str]]:
        """The last ``max_turns`` turns as (role, text), oldest first."""
        with self._lock:
            rows = self._connection.execute(
                "SELECT role, text FROM turns WHERE conversation_id = ? ORDER BY position DESC LIMIT ?",
                (conversation_id, max_turns),
            ).fetchall()
        return [(role, text) for role, text in reversed(rows)]

    def record(self, message: str, result: AskResult) -> None:
        """Record one exchange (the user's message and the answer) and the answer itself, atomically."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        agent = result.agent
        sources = [c.link or c.source for c in agent.citations]
        with self._lock:
            self._connection.execute("BEGIN IMMEDIATE")
            try:
                (last,) = self._connection.execute(
                    "SELECT COALESCE(MAX(position), -1) FROM turns WHERE conversation_id = ?",
                    (result.conversation_id,),
                ).fetchone()
                self._connection.executemany(
                    "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (result.conversation_id, last + 1, "user", message, None, now),
                        (result.conversation_id, last + 2, "assistant", agent.answer, result.answer_id, now),
                    ],
                )
                self._connection.execute(
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
                self._connection.execute("COMMIT")
            except sqlite3.Error:
                self._connection.execute("ROLLBACK")
                raise

    def answer(self, answer_id: str) -> StoredAnswer:
        """The answer given under ``answer_id``; :class:`NotFoundError` when there is none."""
        with self._lock:
            row = self._connection.execute(
                "SELECT * FROM answers WHERE answer_id = ?", (answer_id,)
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no answer with id {answer_id!r}")
        (answer_id, conversation_id, question, answer, outcome, domain, collections, sources, created) = row
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
        with self._lock:
            self._connection.execute(
                "INSERT OR REPLACE INTO messages VALUES (?, ?, ?)", (platform, message_ref, answer_id)
            )

    def answer_for_message(self, platform: str, message_ref: str) -> str:
        """The answer id a chat message shows; :class:`NotFoundError` for a message that is not an answer."""
        with self._lock:
            row = self._connection.execute(
                "SELECT answer_id FROM messages WHERE platform = ? AND message_ref = ?",
                (platform, message_ref),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"{platform} message {message_ref!r} is not a docfinder answer")
        return row[0]

    def close(self) -> None:
        with self._lock:
            self._connection.close()
