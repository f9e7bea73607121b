"""Conversation history in SQLite (WAL), for the agent's condense step.

A conversation is an id and its turns (``user`` / ``assistant``), oldest first. Each
write is one committed transaction, so an acknowledged turn survives a crash.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

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
"""


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

    def append(self, conversation_id: str, question: str, answer: str, answer_id: str) -> None:
        """Record one exchange (the user's message and the answer) in one transaction."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self._lock:
            self._connection.execute("BEGIN IMMEDIATE")
            try:
                (last,) = self._connection.execute(
                    "SELECT COALESCE(MAX(position), -1) FROM turns WHERE conversation_id = ?",
                    (conversation_id,),
                ).fetchone()
                self._connection.executemany(
                    "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (conversation_id, last + 1, "user", question, None, now),
                        (conversation_id, last + 2, "assistant", answer, answer_id, now),
                    ],
                )
                self._connection.execute("COMMIT")
            except sqlite3.Error:
                self._connection.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._lock:
            self._connection.close()
