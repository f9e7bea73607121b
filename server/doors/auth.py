"""API keys: who a request to the REST API or ``/mcp`` comes from, and what it may do.

Keys come from two places. Admins create, list and revoke keys with ``docfinder keys``
(:mod:`server.stores.keys`, the shared database): a revoked or expired key stops working on
the next request, on every server, without a restart. Keys can also be configured (the
``api_keys`` setting and the TOML file ``api_keys_file``), for deployments that keep secrets
in their configuration. Every key has a client, scopes (search, ask, feedback, metrics,
admin), the collections it may read, and may expire. A request presents one as
``Authorization: Bearer <key>``; configured secrets are compared in constant time and stored
keys by the hash of their secret, so the time taken says nothing about which key was close.
The client becomes the caller's identity (``key:<client>``): conversations started with one
of its keys continue with another, so keys can be rotated.

Without any key a server must listen on loopback only: :func:`check_bind` refuses any other
address unless the operator says ``--insecure-no-auth`` explicitly.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from pipeline.answers import LOCAL_CALLER, Caller
from pipeline.errors import ConfigurationError
from server.settings import ApiKeySettings, Settings
from server.stores.keys import KeyStore, StoredKey, split_key

log = logging.getLogger(__name__)

KEY_CHECK_S = 2.0  # a keyless server looks this often whether a key has been created since


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A configured key: its name, secret, client, scopes, collections (None: all) and expiry."""

    name: str
    secret: bytes
    client: str
    scopes: frozenset[str]
    collections: tuple[str, ...] | None
    expires: datetime | None = None


def load_api_keys(settings: Settings) -> list[ApiKey]:
    """Every configured key; :class:`ConfigurationError` for an unreadable file or a repeated name."""
    entries = dict(settings.access.api_keys)
    if settings.access.api_keys_file is not None:
        for name, entry in _read_keys_file(settings.access.api_keys_file).items():
            if name in entries:
                raise ConfigurationError(
                    f"API key {name!r} is defined twice ({settings.access.api_keys_file})"
                )
            entries[name] = entry
    keys = [
        ApiKey(
            name,
            entry.key.get_secret_value().encode(),
            entry.client or name,
            frozenset(entry.scopes),
            tuple(entry.collections) or None,
            _utc(entry.expires),
        )
        for name, entry in entries.items()
    ]
    secrets = [k.secret for k in keys]
    if len(set(secrets)) != len(secrets):
        raise ConfigurationError("two API keys share one secret: give each client its own")
    return keys


def _utc(moment: datetime | None) -> datetime | None:
    """A configured time as UTC (one written without a zone is taken as UTC)."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _read_keys_file(path: Path) -> dict[str, ApiKeySettings]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"cannot read the API keys file {path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"the API keys file {path} is not valid TOML: {exc}") from exc
    try:
        return {name: ApiKeySettings.model_validate(entry) for name, entry in raw.items()}
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"invalid API keys file {path}: {problems}") from exc


class Authenticator:
    """Turns an ``Authorization`` header into a :class:`Caller` (or None when it is not a valid key).

    Keys are required as soon as any is configured or the store has ever held one: found when
    the server starts, and while it has none, looked for again at most every
    :data:`KEY_CHECK_S` seconds, so that the first key created on a running keyless server
    (loopback only) is enforced on its next requests, not after a restart.
    """

    def __init__(
        self,
        keys: list[ApiKey],
        store: KeyStore | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.keys = keys
        self.store = store
        self.clock = clock
        self.required = bool(keys) or (store is not None and store.has_keys())
        self._checked_at = time.monotonic()

    async def caller(self, authorization: str) -> Caller | None:
        """The caller a bearer key belongs to; without any key, the local caller."""
        if not await self._keys_required():
            return LOCAL_CALLER
        scheme, _, given = authorization.partition(" ")
        presented = given.strip()
        if scheme.lower() != "bearer" or not presented:
            return None
        if self.store is not None and split_key(presented) is not None:
            return self._stored_caller(await asyncio.to_thread(self.store.verify, presented))
        return self._configured_caller(presented.encode("utf-8", "replace"))

    async def _keys_required(self) -> bool:
        """Whether keys are required now (see the class docstring)."""
        if self.required or self.store is None:
            return self.required
        if time.monotonic() - self._checked_at >= KEY_CHECK_S:
            self._checked_at = time.monotonic()
            if await asyncio.to_thread(self.store.has_keys):
                log.warning("an API key was created: from now on every request needs one")
                self.required = True
        return self.required

    async def close(self) -> None:
        """Close the key store's database (the application's cleanup calls this)."""
        if self.store is not None:
            await asyncio.to_thread(self.store.database.close)

    def _configured_caller(self, presented: bytes) -> Caller | None:
        found: ApiKey | None = None
        for key in self.keys:  # no early exit: the time does not depend on which key matched
            if hmac.compare_digest(presented, key.secret):
                found = key
        if found is None:
            return None
        if found.expires is not None and self.clock() >= found.expires:
            log.info("refused the expired API key %r (client %r)", found.name, found.client)
            return None
        return Caller(f"key:{found.client}", found.collections, scopes=found.scopes)

    def _stored_caller(self, key: StoredKey | None) -> Caller | None:
        if key is None:
            return None
        status = key.status(self.clock())
        if status != "active":
            log.info("refused the %s API key %s (client %r)", status, key.key_id, key.client)
            return None
        return Caller(f"key:{key.client}", key.collections or None, scopes=frozenset(key.scopes))


def open_authenticator(settings: Settings) -> Authenticator:
    """The configured keys and the key store the settings name (opened here, kept open)."""
    from server.stores.opening import open_configured_database

    store = KeyStore(open_configured_database(settings, settings.access.api_keys_path))
    return Authenticator(load_api_keys(settings), store)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) only reaches this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, authenticated: bool, insecure: bool, what: str = "the HTTP API") -> None:
    """Refuse to serve ``what`` beyond loopback without credentials, unless told ``insecure``."""
    if authenticated or insecure or is_loopback(host):
        return
    raise ConfigurationError(
        f"refusing to serve {what} on {host} without credentials: create a key (docfinder keys create) "
        "or configure access.api_keys, bind 127.0.0.1, or pass --insecure-no-auth"
    )
