"""The one seam between docfinder's stores and their database: SQLite by default, PostgreSQL by DSN.

The stores (conversations, feedback) write their SQL once, in the subset both databases
share (``?`` placeholders, ``ON CONFLICT`` upserts, ``RETURNING``); only table definitions
differ per dialect. Every :meth:`Database.transaction` commits before it returns, so a
caller that has been told "stored" can rely on it across a crash (SQLite: WAL with
``synchronous=FULL``; PostgreSQL: its default durable commit). Reads go through
:meth:`Database.read`, which takes no write lock (in WAL mode a reader never waits for a
writer). A writer that cannot get the lock within the busy timeout is a
:class:`DatabaseBusyError`, transient: the caller is told to retry, and nothing it was told
is stored is lost. Calls block: the service runs them in worker threads.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Protocol

from pipeline.errors import ConfigurationError, DatabaseBusyError, DatabaseUnavailableError

Dialect = Literal["sqlite", "postgresql"]


class Transaction(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run one statement (``?`` placeholders); the rows it returns, if any."""
        ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...


class Database(Protocol):
    dialect: Dialect

    def transaction(self) -> Any:
        """A context manager yielding a :class:`Transaction`, committed on exit (rolled back on error)."""
        ...

    def read(self) -> Any:
        """A context manager yielding a :class:`Transaction` for reading only (no write lock)."""
        ...

    def close(self) -> None: ...


class SQLiteDatabase:
    """One file, one connection shared by threads behind a lock (SQLite serialises writers anyway)."""

    dialect: Dialect = "sqlite"

    def __init__(self, path: Path, busy_timeout_s: float) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self.path = path
        self._connection.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        with self._busy_is_transient():
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=FULL")

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        with self._lock, self._busy_is_transient():
            self._connection.execute("BEGIN IMMEDIATE")
            committed = False
            try:
                yield _SQLiteTransaction(self._connection)
                self._connection.execute("COMMIT")
                committed = True
            finally:
                if not committed and self._connection.in_transaction:  # nothing of a failed body is kept
                    self._connection.execute("ROLLBACK")

    @contextmanager
    def read(self) -> Iterator[Transaction]:
        with self._lock, self._busy_is_transient():
            self._connection.execute("BEGIN DEFERRED")
            try:
                yield _SQLiteTransaction(self._connection)
            finally:
                if self._connection.in_transaction:
                    self._connection.execute("COMMIT")

    @contextmanager
    def _busy_is_transient(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise DatabaseBusyError(
                    f"{self.path.name} is locked by another writer; try again in a few seconds"
                ) from exc
            raise

    def close(self) -> None:
        with self._lock:
            self._connection.close()


class _SQLiteTransaction:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self._connection.execute(sql, params).fetchall()

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._connection.executemany(sql, rows)


class PostgresDatabase:
    """A small connection pool to one PostgreSQL database (several docfinder processes share it)."""

    dialect: Dialect = "postgresql"

    def __init__(self, dsn: str, busy_timeout_s: float, max_connections: int = 8) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        self._errors = (psycopg.OperationalError,)
        try:
            self._pool = ConnectionPool(
                dsn,
                min_size=1,
                max_size=max_connections,
                timeout=busy_timeout_s,
                open=True,
                kwargs={"autocommit": True},
            )
            self._pool.wait(timeout=busy_timeout_s)
        except (psycopg.OperationalError, TimeoutError) as exc:
            raise DatabaseUnavailableError(f"cannot connect to PostgreSQL: {exc}") from exc
        except psycopg.ProgrammingError as exc:
            raise ConfigurationError(f"invalid PostgreSQL DSN: {exc}") from exc

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            with self._pool.connection() as connection, connection.transaction():
                yield _PostgresTransaction(connection)
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise DatabaseUnavailableError(f"PostgreSQL is unavailable: {exc}") from exc

    def read(self) -> Any:
        # PostgreSQL readers take no locks that block writers (MVCC): a transaction will do.
        return self.transaction()

    def close(self) -> None:
        self._pool.close()


class _PostgresTransaction:
    def __init__(self, connection: Any) -> None:
        self._connection = connection

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        cursor = self._connection.execute(_placeholders(sql), params)
        return cursor.fetchall() if cursor.description is not None else []

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._connection.cursor() as cursor:
            cursor.executemany(_placeholders(sql), rows)


def _placeholders(sql: str) -> str:
    """``?`` → ``%s`` (the stores' SQL never has a literal ``?`` or ``%``)."""
    return sql.replace("?", "%s")


def open_database(url: str | None, sqlite_path: Path, busy_timeout_s: float) -> Database:
    """PostgreSQL when ``url`` is a ``postgresql://`` DSN, else the SQLite file ``sqlite_path``."""
    if url is None:
        return SQLiteDatabase(sqlite_path, busy_timeout_s)
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigurationError(f"must be a postgresql:// DSN, not {url.split(':', 1)[0]}://…")
    return PostgresDatabase(url, busy_timeout_s)


# Held while a PostgreSQL transaction creates tables: replicas starting together on a fresh
# database would otherwise race in CREATE TABLE IF NOT EXISTS (it is not atomic there: the
# loser fails on pg_type's unique index). Any constant works; this one spells "docfindr".
SCHEMA_LOCK = 0x646F6366696E6472


def create_tables(database: Database, schema: dict[Dialect, str]) -> None:
    """Run a store's table definitions for this database's dialect (idempotent, and safe when
    several processes start on one database at once)."""
    with database.transaction() as tx:
        if database.dialect == "postgresql":
            tx.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
        for statement in filter(str.strip, schema[database.dialect].split(";")):
            tx.execute(statement)
