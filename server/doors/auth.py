"""API keys: who a request to the REST API or ``/mcp`` comes from, and where a server may listen.

Keys come from the settings (``api_keys``) and an optional TOML file (``api_keys_file``),
each with a name and the collections it may read. A request presents one as
``Authorization: Bearer <key>``; every configured key is compared in constant time, so the
time taken says nothing about which key was close. The key's name becomes the caller's
identity (``key:<name>``): conversations started with a key belong to it.

Without keys a server must listen on loopback only: :func:`check_bind` refuses any other
address unless the operator says ``--insecure-no-auth`` explicitly.
"""

from __future__ import annotations

import hmac
import ipaddress
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from pipeline.answers import LOCAL_CALLER, Caller
from pipeline.errors import ConfigurationError
from server.settings import ApiKeySettings, Settings


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A configured key: its name, its secret and the collections it may read (None: all)."""

    name: str
    secret: bytes
    collections: tuple[str, ...] | None


def load_api_keys(settings: Settings) -> list[ApiKey]:
    """Every configured key; :class:`ConfigurationError` for an unreadable file or a repeated name."""
    entries = dict(settings.api_keys)
    if settings.api_keys_file is not None:
        for name, entry in _read_keys_file(settings.api_keys_file).items():
            if name in entries:
                raise ConfigurationError(f"API key {name!r} is defined twice ({settings.api_keys_file})")
            entries[name] = entry
    keys = [
        ApiKey(name, entry.key.get_secret_value().encode(), tuple(entry.collections) or None)
        for name, entry in entries.items()
    ]
    secrets = [k.secret for k in keys]
    if len(set(secrets)) != len(secrets):
        raise ConfigurationError("two API keys share one secret: give each client its own")
    return keys


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
    """Turns an ``Authorization`` header into a :class:`Caller` (or None when it is not a valid key)."""

    def __init__(self, keys: list[ApiKey]) -> None:
        self.keys = keys

    @property
    def required(self) -> bool:
        """Whether requests must carry a key (they must as soon as any key is configured)."""
        return bool(self.keys)

    def caller(self, authorization: str) -> Caller | None:
        """The caller a bearer key belongs to; without configured keys, the local caller."""
        if not self.keys:
            return LOCAL_CALLER
        scheme, _, given = authorization.partition(" ")
        presented = given.strip().encode("utf-8", "replace")
        found: ApiKey | None = None
        for key in self.keys:  # no early exit: the time does not depend on which key matched
            if hmac.compare_digest(presented, key.secret):
                found = key
        if scheme.lower() != "bearer" or found is None:
            return None
        return Caller(f"key:{found.name}", found.collections)


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
        f"refusing to serve {what} on {host} without credentials: configure api_keys "
        "(DOCFINDER_API_KEYS or api_keys_file), bind 127.0.0.1, or pass --insecure-no-auth"
    )
