"""A fresh PostgreSQL database per test or module, on the server ``TEST_POSTGRES_DSN`` names
(``.ci/run`` starts one on loopback); tests skip with the reason when it is unset."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def fresh_database(prefix: str = "docfinder_test") -> Iterator[str]:
    """The DSN of a new, empty database, dropped afterwards."""
    dsn = os.environ.get("TEST_POSTGRES_DSN")
    if not dsn:
        pytest.skip("no PostgreSQL server: TEST_POSTGRES_DSN is unset (.ci/run starts one)")
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield dsn.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
