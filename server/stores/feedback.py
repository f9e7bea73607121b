"""Feedback on answers (reactions, ratings, labels), shared by every front door, in SQLite or
PostgreSQL (see :mod:`server.stores.database`).

A record is committed before the caller is told it is stored, so acknowledged feedback
survives a crash. Users are kept only as a keyed pseudonym (HMAC-SHA256): the same person
gets the same pseudonym, so admins can count distinct raters, but the id cannot be read
back. The key comes from the settings or, when unset, is made once and kept in the store.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import UTC, datetime

from pipeline.answers import FEEDBACK_LABELS, Feedback, FeedbackRecord
from pipeline.errors import InvalidRequestError
from server.stores.conversations import StoredAnswer
from server.stores.database import Database, Dialect, create_tables

_COLUMNS = """
    answer_id TEXT NOT NULL,
    platform TEXT NOT NULL,
    "user" TEXT NOT NULL,
    rating INTEGER CHECK (rating BETWEEN 1 AND 5),
    label TEXT,
    comment TEXT NOT NULL,
    channel TEXT NOT NULL,
    reaction TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    sources TEXT NOT NULL,
    domain TEXT,
    collections TEXT NOT NULL,
    created_at TEXT NOT NULL
"""
_INDEXES = """
CREATE INDEX IF NOT EXISTS feedback_by_reaction ON feedback (answer_id, platform, "user", reaction);
CREATE INDEX IF NOT EXISTS feedback_by_time ON feedback (created_at);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)
"""
_TABLE = "CREATE TABLE IF NOT EXISTS feedback (feedback_id {id_column},{columns});"
SCHEMA: dict[Dialect, str] = {
    "sqlite": _TABLE.format(id_column="INTEGER PRIMARY KEY AUTOINCREMENT", columns=_COLUMNS) + _INDEXES,
    "postgresql": _TABLE.format(id_column="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", columns=_COLUMNS)
    + _INDEXES,
}
_INSERT = (
    'INSERT INTO feedback (answer_id, platform, "user", rating, label, comment, channel, reaction,'
    " question, answer, sources, domain, collections, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING feedback_id"
)
SEPARATOR = "\x1f"  # joins list fields; cannot occur in a URL or a collection name


def validate_feedback(feedback: Feedback) -> None:
    """Reject feedback that carries no judgement or an unknown rating or label."""
    if feedback.rating is None and feedback.label is None and not feedback.comment.strip():
        raise InvalidRequestError("feedback needs a rating, a label or a comment")
    if feedback.rating is not None and not 1 <= feedback.rating <= 5:
        raise InvalidRequestError(f"rating must be from 1 to 5, not {feedback.rating}")
    if feedback.label is not None and feedback.label not in FEEDBACK_LABELS:
        raise InvalidRequestError(
            f"unknown label {feedback.label!r}; choose one of: " + "; ".join(FEEDBACK_LABELS)
        )


class FeedbackStore:
    """Adds, retracts and lists feedback records; safe to share between threads."""

    def __init__(self, database: Database, pseudonym_key: str = "") -> None:
        self._db = database
        create_tables(database, SCHEMA)
        self._key = (pseudonym_key or self._stored_key()).encode()

    def _stored_key(self) -> str:
        with self._db.transaction() as tx:
            tx.execute(
                "INSERT INTO meta VALUES ('pseudonym_key', ?) ON CONFLICT (key) DO NOTHING",
                (secrets.token_hex(32),),
            )
            [(key,)] = tx.execute("SELECT value FROM meta WHERE key = 'pseudonym_key'")
        return key

    def pseudonym(self, platform: str, user: str) -> str:
        """A stable pseudonym of ``user`` on ``platform`` (empty for an anonymous user)."""
        if not user:
            return ""
        return hmac.new(self._key, f"{platform}:{user}".encode(), hashlib.sha256).hexdigest()[:16]

    def add(self, feedback: Feedback, answer: StoredAnswer) -> FeedbackRecord:
        """Store ``feedback`` on ``answer``; returns the committed record."""
        validate_feedback(feedback)
        row = (
            feedback.answer_id,
            feedback.platform,
            self.pseudonym(feedback.platform, feedback.user),
            feedback.rating,
            feedback.label,
            feedback.comment,
            feedback.channel,
            feedback.reaction,
            answer.question,
            answer.answer,
            SEPARATOR.join(answer.sources),
            answer.domain,
            SEPARATOR.join(answer.collections),
            datetime.now(UTC).isoformat(timespec="milliseconds"),
        )
        with self._db.transaction() as tx:
            [(feedback_id,)] = tx.execute(_INSERT, row)
        return _record((feedback_id, *row))

    def retract(self, answer_id: str, platform: str, user: str, reaction: str) -> int:
        """Delete the records that ``reaction`` by ``user`` made on ``answer_id``; returns how many."""
        with self._db.transaction() as tx:
            deleted = tx.execute(
                'DELETE FROM feedback WHERE answer_id = ? AND platform = ? AND "user" = ? AND reaction = ?'
                " RETURNING feedback_id",
                (answer_id, platform, self.pseudonym(platform, user), reaction),
            )
        return len(deleted)

    def records(self, since: datetime | None = None) -> list[FeedbackRecord]:
        """Every record (from ``since`` on, when given), oldest first."""
        start = since.astimezone(UTC).isoformat(timespec="milliseconds") if since else ""
        with self._db.read() as tx:
            rows = tx.execute("SELECT * FROM feedback WHERE created_at >= ? ORDER BY feedback_id", (start,))
        return [_record(row) for row in rows]

    def count(self) -> int:
        """How many records are stored."""
        with self._db.read() as tx:
            [(count,)] = tx.execute("SELECT COUNT(*) FROM feedback")
        return count


def _record(row: tuple) -> FeedbackRecord:
    (feedback_id, answer_id, platform, user, rating, label, comment, channel, reaction) = row[:9]
    question, answer, sources, domain, collections, created_at = row[9:]
    return FeedbackRecord(
        feedback_id,
        answer_id,
        platform,
        user,
        rating,
        label,
        comment,
        channel,
        reaction,
        question,
        answer,
        tuple(s for s in sources.split(SEPARATOR) if s),
        domain,
        tuple(c for c in collections.split(SEPARATOR) if c),
        created_at,
    )
