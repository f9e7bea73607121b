"""Microsoft's signing keys and the bot's outbound token, each fetched with a time limit and off
the event loop: a silent Microsoft endpoint costs one reply, never the server."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from dataclasses import dataclass
from typing import Any

import aiohttp
from botframework.connector.auth import MicrosoftAppCredentials, ServiceClientCredentialsFactory
from botframework.connector.auth.jwt_token_extractor import JwtTokenExtractor
from jwt.algorithms import RSAAlgorithm

log = logging.getLogger(__name__)


class OpenIdMetadata:
    """The Bot Framework's token signing keys, fetched without blocking, with a timeout and a cache.

    Keys are kept for a day; an unknown key id refreshes them at most once an hour. A failed
    fetch is remembered: until its back-off (30 s, doubling up to 15 min) has passed, tokens
    are refused at once instead of fetching again. One fetch runs at a time: requests that
    arrive during it wait for its outcome instead of fetching too, so an outage costs one fetch
    and one back-off step, however many requests it meets. It stands in for botbuilder's own
    class of the same role: ``get`` returns an object with ``public_key`` and ``endorsements``.
    """

    def __init__(self, url: str, timeout_s: float) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.keys: list[dict[str, Any]] = []
        self.fetched_at = 0.0
        self.retry_at = 0.0
        self.backoff_s = 0.0
        self.fetches = 0
        # One lock per event loop: the cache outlives loops (botbuilder keeps it on a class).
        self._fetching: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    async def get(self, key_id: str) -> Any:
        now = time.monotonic()
        if not self.keys or now - self.fetched_at > 86_400:
            await self._refresh()
        key = next((k for k in self.keys if k.get("kid") == key_id), None)
        if key is None and time.monotonic() - self.fetched_at > 3_600:
            await self._refresh()
            key = next((k for k in self.keys if k.get("kid") == key_id), None)
        if key is None:
            raise PermissionError("the token's signing key is unknown")
        return _SigningKey(RSAAlgorithm.from_jwk(json.dumps(key)), key.get("endorsements", []))

    async def _refresh(self) -> None:
        asked_at = time.monotonic()
        lock = self._fetching.setdefault(asyncio.get_running_loop(), asyncio.Lock())
        async with lock:
            if self.fetched_at > asked_at:
                return  # fetched while this request waited
            if time.monotonic() < self.retry_at:
                raise PermissionError("the Bot Framework's signing keys are unavailable (retrying later)")
            await self._fetch()

    async def _fetch(self) -> None:
        self.fetches += 1
        try:
            timeout = aiohttp.ClientTimeout(total=self.timeout_s)
            async with aiohttp.ClientSession(timeout=timeout) as session:
                async with session.get(self.url) as response:
                    response.raise_for_status()
                    keys_url = (await response.json(content_type=None))["jwks_uri"]
                async with session.get(keys_url) as response:
                    response.raise_for_status()
                    keys = (await response.json(content_type=None))["keys"]
        except (aiohttp.ClientError, TimeoutError, KeyError, ValueError) as exc:
            self.backoff_s = min(max(self.backoff_s * 2, 30.0), 900.0)
            self.retry_at = time.monotonic() + self.backoff_s
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            log.warning("could not fetch %s (%s); retrying in %.0f s", self.url, reason, self.backoff_s)
            raise PermissionError("the Bot Framework's signing keys are unavailable") from exc
        self.keys, self.fetched_at, self.backoff_s, self.retry_at = keys, time.monotonic(), 0.0, 0.0


@dataclass(frozen=True, slots=True)
class _SigningKey:
    public_key: Any
    endorsements: list[str]


class _MetadataCache(dict):
    """botbuilder's metadata cache, handing out :class:`OpenIdMetadata` for every metadata URL."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__()
        self.timeout_s = timeout_s

    def get(self, url: str, default: Any = None) -> Any:
        if url not in self:
            self[url] = OpenIdMetadata(url, self.timeout_s)
        return super().get(url)


def install_openid_metadata(timeout_s: float) -> None:
    """Make botbuilder's token validation fetch signing keys through :class:`OpenIdMetadata`.

    botbuilder looks its metadata up in ``JwtTokenExtractor.metadataCache`` by URL; a cache
    that creates our objects is the one seam it offers.
    """
    if not isinstance(JwtTokenExtractor.metadataCache, _MetadataCache):
        JwtTokenExtractor.metadataCache = _MetadataCache(timeout_s)


class FetchedOffTheLoop(ServiceClientCredentialsFactory):
    """The configured credentials, their access token fetched in a worker thread with a timeout.

    botbuilder fetches the bot's outbound token through MSAL's ``requests`` without a timeout, on
    the event loop, when it sends a reply: a token endpoint that accepts connections and never
    answers froze the whole server (REST, /mcp, Slack, /healthz) for as long as it kept silent.
    Here the token is fetched before botbuilder asks for it, off the loop and bounded by
    ``timeout_s`` (MSAL's own requests too), so botbuilder's call finds it in MSAL's cache; past
    the timeout that reply fails, and nothing else waits.
    """

    def __init__(self, inner: ServiceClientCredentialsFactory, timeout_s: float) -> None:
        self.inner = inner
        self.timeout_s = timeout_s

    async def is_valid_app_id(self, app_id: str) -> bool:
        return await self.inner.is_valid_app_id(app_id)

    async def is_authentication_disabled(self) -> bool:
        return await self.inner.is_authentication_disabled()

    async def create_credentials(
        self, app_id: str, oauth_scope: str, login_endpoint: str, validate_authority: bool
    ) -> Any:
        credentials = await self.inner.create_credentials(
            app_id, oauth_scope, login_endpoint, validate_authority
        )
        if not getattr(credentials, "microsoft_app_id", None):
            return credentials  # authentication disabled: no token
        try:
            await asyncio.wait_for(asyncio.to_thread(self._fetch, credentials), self.timeout_s)
        except (TimeoutError, OSError) as exc:  # requests' errors are OSErrors
            log.warning("no access token from Microsoft's token endpoint: %s", exc)
            raise PermissionError(f"no access token from Microsoft within {self.timeout_s:g} s") from exc
        return credentials

    def _fetch(self, credentials: Any) -> None:
        """The token, in a worker thread: MSAL (made with a timeout on its own requests; making it
        already asks the authority) fetches it into its cache, where botbuilder's call finds it."""
        if isinstance(credentials, MicrosoftAppCredentials) and credentials.app is None:
            from msal import ConfidentialClientApplication

            credentials.app = ConfidentialClientApplication(
                client_id=credentials.microsoft_app_id,
                client_credential=credentials.microsoft_app_password,
                authority=credentials.oauth_endpoint,
                timeout=self.timeout_s,
                instance_discovery=False,  # the authority is Microsoft's own: nothing to discover
            )
        credentials.get_access_token()
