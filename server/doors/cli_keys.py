"""``docfinder keys``: create, list and revoke the API keys of the REST API and ``/mcp``.

The keys live in the shared database (:mod:`server.stores.keys`), so a key made or revoked
here takes effect on every running server at its next request. The key itself is printed
once, on standard output (for a script to capture); everything else goes to standard error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from rich.console import Console
from rich.table import Column, Table

from index_build.sources import collection_name
from pipeline.answers import DEFAULT_SCOPES, SCOPES
from pipeline.errors import ConfigurationError
from server.doors.cli_output import shown
from server.settings import Settings
from server.stores.keys import KeyStore, StoredKey

err = Console(stderr=True)


def add_keys_parser(commands: argparse._SubParsersAction) -> None:
    """The ``keys`` command and its ``create``, ``list`` and ``revoke`` subcommands."""
    keys = commands.add_parser("keys", help="API keys: create, list, revoke").add_subparsers(
        dest="keys_command", required=True
    )
    create = keys.add_parser("create", help="make a key for a client and print it (once)")
    create.add_argument("--client", required=True, help="who uses it; a client's keys share conversations")
    create.add_argument(
        "--scope",
        dest="scopes",
        action="append",
        choices=SCOPES,
        help=f"what it may do, repeatable (default: {', '.join(DEFAULT_SCOPES)}; admin: everything)",
    )
    create.add_argument(
        "--collection",
        dest="collections",
        action="append",
        default=[],
        type=_collection,
        help="a collection it may read, repeatable (default: every collection)",
    )
    expiry = create.add_mutually_exclusive_group()
    expiry.add_argument("--expires", type=_moment, help="when it stops working (YYYY-MM-DD or ISO time, UTC)")
    expiry.add_argument("--days", type=_positive_days, help="it stops working this many days from now")
    listing = keys.add_parser("list", help="every key: id, client, scopes, collections, expiry, status")
    listing.add_argument("--json", action="store_true", help="one JSON object per key")
    revoke = keys.add_parser("revoke", help="stop a key working, on every server, from the next request")
    revoke.add_argument("key_id", help="the key's id (docfinder keys list)")


def run_keys(args: argparse.Namespace, settings: Settings) -> int:
    with _key_store(settings) as store:
        if args.keys_command == "create":
            expires = args.expires or (datetime.now(UTC) + timedelta(days=args.days) if args.days else None)
            key, secret = store.create(args.client, args.scopes or DEFAULT_SCOPES, args.collections, expires)
            print(secret)
            err.print(f"created key {key.key_id} for {shown(key.client)}: {_summary(key)}")
            err.print("the key is shown only now: give it to the client; the store keeps only its hash")
        elif args.keys_command == "revoke":
            key = store.revoke(args.key_id)
            err.print(
                f"revoked key {key.key_id} of {shown(key.client)} (at {key.revoked_at:%Y-%m-%d %H:%M} UTC)"
            )
        elif args.json:
            now = datetime.now(UTC)
            for key in store.all_keys():
                print(json.dumps(_as_json(key, now)))
        else:
            _print_table(store.all_keys())
    return 0


@contextmanager
def _key_store(settings: Settings) -> Iterator[KeyStore]:
    from server.stores.opening import open_configured_database

    database = open_configured_database(settings, settings.access.api_keys_path)
    try:
        yield KeyStore(database)
    finally:
        database.close()


def _summary(key: StoredKey) -> str:
    collections = ", ".join(key.collections) or "every collection"
    expires = f"expires {key.expires_at:%Y-%m-%d %H:%M} UTC" if key.expires_at else "does not expire"
    return f"scopes {', '.join(key.scopes)}; {shown(collections)}; {expires}"


def _as_json(key: StoredKey, now: datetime) -> dict[str, object]:
    return {
        "key_id": key.key_id,
        "client": key.client,
        "scopes": list(key.scopes),
        "collections": list(key.collections),
        "created_at": key.created_at.isoformat(),
        "expires_at": key.expires_at.isoformat() if key.expires_at else None,
        "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
        "status": key.status(now),
    }


def _print_table(keys: list[StoredKey]) -> None:
    if not keys:
        err.print("no API keys yet: docfinder keys create --client NAME")
        return
    now = datetime.now(UTC)
    table = Table("client", "scopes", "collections", "created", "expires", "status")
    table.columns.insert(0, Column("id", no_wrap=True, min_width=12))
    for key in keys:
        table.add_row(
            key.key_id,
            shown(key.client),
            ", ".join(key.scopes),
            shown(", ".join(key.collections) or "all"),
            f"{key.created_at:%Y-%m-%d}",
            f"{key.expires_at:%Y-%m-%d %H:%M}" if key.expires_at else "never",
            key.status(now),
        )
    Console(file=sys.stdout).print(table)


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a date or time (YYYY-MM-DD): {text!r}") from exc
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _collection(text: str) -> str:
    try:
        return collection_name(text)
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _positive_days(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number of days, at least 1: {text!r}")
    return int(text)
