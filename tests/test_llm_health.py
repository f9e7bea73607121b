"""/healthz's LLM state: ready only when the server answered lately or answers a probe now."""

from __future__ import annotations

import asyncio

from server.models.llm import LLMProblem
from server.models.llm_health import FRESH_S, LLMHealth


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class ScriptedProbe:
    """A probe that answers what it is told, slowly enough for callers to meet at it."""

    def __init__(self, problem: LLMProblem | None) -> None:
        self.problem = problem
        self.calls = 0

    async def __call__(self) -> LLMProblem | None:
        self.calls += 1
        await asyncio.sleep(0.05)
        return self.problem


async def test_a_stale_ready_is_probed_again_once_however_many_ask_and_a_dead_server_reads_unavailable():
    clock, probe = Clock(), ScriptedProbe(None)
    health = LLMHealth(probe, clock)
    health.observe(None)  # a question's call succeeded
    assert await health.current() == ("ready", None) and probe.calls == 0, "fresh: no probe"
    probe.problem = LLMProblem("cannot connect to it", "ClientConnectorError: 10.0.0.7:8000 refused")
    clock.now += FRESH_S + 1
    states = await asyncio.gather(*(health.current() for _ in range(20)))
    assert probe.calls == 1, "one probe for twenty health requests"
    assert set(states) == {("unavailable", "cannot connect to it")}
    assert await health.current() == ("unavailable", "cannot connect to it") and probe.calls == 1


async def test_a_question_that_reached_the_server_makes_it_ready_without_a_probe():
    clock, probe = Clock(), ScriptedProbe(LLMProblem("cannot connect to it", "refused"))
    health = LLMHealth(probe, clock)
    assert await health.current() == ("unavailable", "cannot connect to it") and probe.calls == 1
    health.observe(None)
    assert await health.current() == ("ready", None) and probe.calls == 1
