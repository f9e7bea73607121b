"""API keys that admins create, list and revoke while servers run (SQLite or PostgreSQL).

A key is shown once, when it is created: ``dfk_<id>_<secret>``. The store keeps the id, the
SHA-256 of the secret (never the secret), the client it belongs to, its scopes and
collections, and when it was created, expires and was revoked. Every request looks its key
up by id, so a revoked or expired key stops working at once on every server sharing the
store. A client holds several keys to rotate them: conversations belong to the client, so a
new key continues what the old one started. (The secret has 256 random bits, so a plain
hash is as strong as a slow one here.)
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from pipeline.answers import SCOPES
from pipeline.errors import InvalidRequestError, NotFoundError
from server.stores.database import Database, Dialect, create_tables

_TABLES = """
CREATE TABLE IF NOT EXISTS api_keys (
    key_id TEXT PRIMARY KEY,
    client TEXT NOT NULL,
    secret_sha256 TEXT NOT NULL,
    scopes TEXT NOT NULL,
    collections TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT
)
"""
SCHEMA: dict[Dialect, str] = {"sqlite": _TABLES, "postgresql": _TABLES}

KEY_PREFIX = "dfk_"
_ID_CHARS = 12  # hex digits of the public key id


@dataclass(frozen=True, slots=True)
class StoredKey:
    """What the store knows of a key (everything but its secret)."""

    key_id: str
    client: str
    scopes: tuple[str, ...]
    collections: tuple[str, ...]  # empty: every collection
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    def status(self, now: datetime) -> str:
        """ "active", "expired" or "revoked"."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and now >= self.expires_at:
            return "expired"
        return "active"


def split_key(presented: str) -> tuple[str, str] | None:
    """The id and secret of a key in the store's format, or None for any other string."""
    if not presented.startswith(KEY_PREFIX):
        return None
    key_id, separator, secret = presented[len(KEY_PREFIX) :].partition("_")
    if len(key_id) != _ID_CHARS or not separator or not secret:
        return None
    return key_id, secret


def check_scopes(scopes: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``scopes`` without repeats; :class:`InvalidRequestError` naming an unknown one."""
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise InvalidRequestError(f"unknown scope {unknown[0]!r}; choose from {', '.join(SCOPES)}")
    if not scopes:
        raise InvalidRequestError("a key needs at least one scope")
    return tuple(dict.fromkeys(scopes))


class KeyStore:
    """The ``api_keys`` table. Calls block: servers run them in worker threads."""

    def __init__(self, database: Database) -> None:
        self.database = database
        create_tables(database, SCHEMA)

    def create(
        self,
        client: str,
        scopes: list[str] | tuple[str, ...],
        collections: list[str] | tuple[str, ...] = (),
        expires_at: datetime | None = None,
    ) -> tuple[StoredKey, str]:
        """A new key for ``client`` and the key itself, which is not kept and cannot be shown again."""
        if not client.strip():
            raise InvalidRequestError("a key needs a client name")
        if not client.isprintable():
            raise InvalidRequestError("a client name is printable text: no control characters")
        now = datetime.now(UTC)
        if expires_at is not None and expires_at <= now:
            raise InvalidRequestError(
                f"the expiry {expires_at:%Y-%m-%d %H:%M} UTC is already past: a key must work for some time"
            )
        key = StoredKey(
            key_id=secrets.token_hex(_ID_CHARS // 2),
            client=client.strip(),
            scopes=check_scopes(scopes),
            collections=tuple(dict.fromkeys(collections)),
            created_at=now,
            expires_at=expires_at,
            revoked_at=None,
        )
        secret = secrets.token_urlsafe(32)
        with self.database.transaction() as tx:
            tx.execute(
                "INSERT INTO api_keys (key_id, client, secret_sha256, scopes, collections, created_at,"
                " expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
                (
                    key.key_id,
                    key.client,
                    _digest(secret),
                    ",".join(key.scopes),
                    ",".join(key.collections),
                    key.created_at.isoformat(),
                    expires_at.isoformat() if expires_at else None,
                ),
            )
        return key, f"{KEY_PREFIX}{key.key_id}_{secret}"

    def verify(self, presented: str) -> StoredKey | None:
        """The stored key ``presented`` is, if its secret matches (whatever its status), else None."""
        parts = split_key(presented)
        if parts is None:
            return None
        key_id, secret = parts
        with self.database.read() as tx:
            rows = tx.execute(f"SELECT {_COLUMNS}, secret_sha256 FROM api_keys WHERE key_id = ?", (key_id,))
        if not rows:
            secrets.compare_digest(_digest(secret), _digest(""))  # the same work as a known id
            return None
        *columns, stored_digest = rows[0]
        return _key(tuple(columns)) if secrets.compare_digest(_digest(secret), stored_digest) else None

    def all_keys(self) -> list[StoredKey]:
        """Every key, revoked and expired ones included, oldest first."""
        with self.database.read() as tx:
            rows = tx.execute(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, key_id")
        return [_key(row) for row in rows]

    def revoke(self, key_id: str) -> StoredKey:
        """Revoke a key from now on (:class:`NotFoundError` for an unknown id); revoking twice keeps
        the first time."""
        with self.database.transaction() as tx:
            tx.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                (datetime.now(UTC).isoformat(), key_id),
            )
            rows = tx.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,))
        if not rows:
            raise NotFoundError(f"no API key with id {key_id!r} (docfinder keys list)")
        return _key(rows[0])

    def has_keys(self) -> bool:
        """Whether any key was ever created here (a server with keys requires one on every request)."""
        with self.database.read() as tx:
            return bool(tx.execute("SELECT 1 FROM api_keys LIMIT 1"))


_COLUMNS = "key_id, client, scopes, collections, created_at, expires_at, revoked_at"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


def _key(row: tuple) -> StoredKey:
    key_id, client, scopes, collections, created, expires, revoked = row
    return StoredKey(
        key_id=key_id,
        client=client,
        scopes=tuple(filter(None, scopes.split(","))),
        collections=tuple(filter(None, collections.split(","))),
        created_at=datetime.fromisoformat(created),
        expires_at=datetime.fromisoformat(expires) if expires else None,
        revoked_at=datetime.fromisoformat(revoked) if revoked else None,
    )
