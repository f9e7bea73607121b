"""Whether a server LLM answers, as ``/healthz`` reports it.

"ready" only when the server answered recently: a question's LLM call succeeded, or a probe
(``GET /models``) did, within :data:`FRESH_S`. Older than that, the next health request
probes again; requests that arrive meanwhile wait for the same probe rather than each
sending their own. A server that does not answer reads "unavailable" with a reason that
names no address or model (``/healthz`` is open to anyone); the details go to the log.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from server.models.llm import LLMProblem

log = logging.getLogger(__name__)

FRESH_S = 30.0  # how long an observation stands before /healthz asks the server again
PROBE_TIMEOUT_S = 3.0  # a health check waits no longer for the LLM server than this

Probe = Callable[[], Awaitable[LLMProblem | None]]


class LLMHealth:
    """The last thing known about a server LLM, and a probe to refresh it when it is stale."""

    def __init__(self, probe: Probe, clock: Callable[[], float] = time.monotonic) -> None:
        self._probe = probe
        self._clock = clock
        self.state = "not started"
        self.reason: str | None = None
        self._seen_at = float("-inf")
        self._probing: asyncio.Task[None] | None = None

    def observe(self, problem: LLMProblem | None) -> None:
        """Record what a question or a probe found (None: the server answered)."""
        self.state, self.reason = ("ready", None) if problem is None else ("unavailable", problem.reason)
        self._seen_at = self._clock()

    async def current(self) -> tuple[str, str | None]:
        """The state and, when unavailable, why; probes first when the last observation is stale."""
        if self._clock() - self._seen_at > FRESH_S:
            if self._probing is None or self._probing.done():
                self._probing = asyncio.ensure_future(self._refresh())
            await asyncio.shield(self._probing)  # a caller that leaves does not cancel the others' probe
        return self.state, self.reason

    async def _refresh(self) -> None:
        problem = await self._probe()
        if problem is not None:
            log.warning("the LLM server does not answer a health probe: %s", problem.detail)
        self.observe(problem)
