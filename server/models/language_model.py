"""The LLM a service asks: a configured OpenAI-compatible server, or the embedded model.

A configured server is probed at start and its health tracked from what questions and probes
find; the embedded llama.cpp server is started on first use, restarted by its supervisor when
it crashes, and stopped when the service closes.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from typing import Any

from pipeline.answers import AgentAnswer
from server.models.llm import (
    STARTUP_PROBE_TIMEOUT_S,
    LLMProblem,
    make_adapter,
    open_language_model,
    probe_llm_server,
)
from server.models.llm_health import PROBE_TIMEOUT_S, LLMHealth
from server.runtime.supervised_server import SupervisedServer
from server.settings import Settings

log = logging.getLogger(__name__)


class LanguageModel:
    """The service's LLM, its DSPy adapter and what is known of its health.

    ``lm`` and ``server`` replace the configured model (tests, benchmarks that share one)."""

    def __init__(self, settings: Settings, lm: Any = None, server: SupervisedServer | None = None) -> None:
        self.settings = settings
        self._lm = lm
        self._server = server  # the embedded model's process, restarted when it crashes
        self.adapter: Any = None  # DSPy adapter matching the LLM server, built with the LLM
        self._lock = asyncio.Lock()
        self._resources = AsyncExitStack()  # the embedded LLM server, once started
        self.health = LLMHealth(self._probe)  # a server LLM's; the embedded one reports its own

    @property
    def server(self) -> SupervisedServer | None:
        """The embedded model's server process once started (None for a configured LLM server)."""
        return self._server

    async def start(self) -> None:
        """Make the LLM ready now rather than on the first question, and say so when it is not.

        The embedded model is started (a broken model file fails here). A configured server
        is asked for its models; when it does not answer, the service still starts, since
        search works without it, and the log names the URL, once, at start.
        """
        base = self.settings.llm.api_base
        if base is None:
            await self.get()
            return
        problem = await probe_llm_server(
            base, self.settings.llm.api_key.get_secret_value(), STARTUP_PROBE_TIMEOUT_S
        )
        self.health.observe(problem)
        if problem is not None:
            log.error(
                "the LLM server at %s does not answer (%s): questions get 'LLM unavailable' until it does "
                "(setting llm.api_base)",
                base,
                problem.detail,
            )

    async def get(self) -> Any:
        """The LLM: the configured server, or the embedded llama.cpp server started on first use."""
        async with self._lock:
            if self._lm is None:
                self._lm, self._server = await self._resources.enter_async_context(
                    open_language_model(self.settings)
                )
            if self.adapter is None:
                self.adapter = make_adapter(self.settings)
        if self._server is not None:
            await self._server.ready()  # after a crash: wait for the restart (or say it cannot run)
        return self._lm

    async def dspy_settings(self) -> dict[str, Any]:
        """The LM and adapter a DSPy call on this LLM needs (starting the embedded model first)."""
        return {"lm": await self.get(), "adapter": self.adapter}

    def observe(self, answer: AgentAnswer) -> None:
        """What a question found of a server LLM: unavailable when it could not be asked, ready
        once a call succeeded."""
        if self._server is not None:
            return  # the embedded server's supervisor knows its state
        if answer.outcome == "llm_unavailable":
            self.health.observe(LLMProblem("the last question could not reach it", answer.outcome))
        elif any("llm_call" in event for event in answer.trace):
            self.health.observe(None)

    async def state(self) -> tuple[str, str | None]:
        """``/healthz``'s view: the state and, when unavailable, why (a stale server LLM is probed)."""
        if self._server is not None:
            return self._server.state, None
        if self.settings.llm.api_base is None:
            return "not started", None
        return await self.health.current()

    async def aclose(self) -> None:
        await self._resources.aclose()

    async def _probe(self) -> LLMProblem | None:
        base = self.settings.llm.api_base
        assert base is not None, "only a server LLM is probed"
        return await probe_llm_server(base, self.settings.llm.api_key.get_secret_value(), PROBE_TIMEOUT_S)
