"""The stores on the configured database: PostgreSQL with ``database_url``, else SQLite files.

One PostgreSQL pool serves both stores; with SQLite each store has its own file. Opened on
first use and closed together with :meth:`Stores.close`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline.errors import DocfinderError
from server.settings import Settings
from server.stores.conversations import ConversationStore
from server.stores.database import Database, open_database
from server.stores.feedback import FeedbackStore


def open_configured_database(settings: Settings, sqlite_path: Path) -> Database:
    """The database the settings name (PostgreSQL with ``database_url``, else the SQLite file
    ``sqlite_path``); an error says which setting or file to fix."""
    url = settings.stores.database_url.get_secret_value() or None
    try:
        return open_database(url, sqlite_path, settings.stores.database_busy_timeout_s)
    except DocfinderError as exc:
        setting = (
            "stores.database_url (DOCFINDER_STORES__DATABASE_URL)"
            if url
            else f"the database file {sqlite_path}"
        )
        raise type(exc)(f"{setting}: {exc}") from exc


@contextmanager
def open_feedback_store(settings: Settings) -> Iterator[FeedbackStore]:
    """The feedback store alone, for reports and exports (no index or model needed)."""
    database = open_configured_database(settings, settings.stores.feedback_path)
    try:
        yield FeedbackStore(database, settings.stores.pseudonym_key.get_secret_value())
    finally:
        database.close()


class Stores:
    """The conversation and feedback stores of one service, opened on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._conversations: ConversationStore | None = None
        self._feedback: FeedbackStore | None = None
        self._databases: list[Database] = []

    @property
    def conversations(self) -> ConversationStore:
        """Conversation history and answers given."""
        with self._lock:
            if self._conversations is None:
                self._conversations = ConversationStore(
                    self._database(self.settings.stores.conversations_path)
                )
            return self._conversations

    @property
    def feedback(self) -> FeedbackStore:
        """Feedback on answers, with pseudonymised users."""
        with self._lock:
            if self._feedback is None:
                key = self.settings.stores.pseudonym_key.get_secret_value()
                self._feedback = FeedbackStore(self._database(self.settings.stores.feedback_path), key)
            return self._feedback

    def close(self) -> None:
        self._conversations = self._feedback = None
        for database in self._databases:
            database.close()
        self._databases.clear()

    def _database(self, sqlite_path: Path) -> Database:
        url = self.settings.stores.database_url.get_secret_value() or None
        if url is not None and self._databases:  # one PostgreSQL pool serves both stores
            return self._databases[0]
        database = open_configured_database(self.settings, sqlite_path)
        self._databases.append(database)
        return database
