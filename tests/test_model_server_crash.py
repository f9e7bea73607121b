"""The embedded model server dying under docfinder: noticed at once, restarted, given up when it
crash-loops.

A real server process is supervised: the fake OpenAI-compatible server of ``evaluation.doubles.fake_llm`` run
as its own process (fast, deterministic), killed with SIGKILL or SIGSEGV between two questions,
or told to die by SIGSEGV at every request. ``test_llm_integration`` does the same to the real
llama.cpp server.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from evaluation.doubles import fake_llm
from index_build.builder import ingest
from server.models.llm import make_lm
from server.runtime.supervised_server import ModelServerCannotRunError, SupervisedServer
from server.service import open_service
from server.settings import load_settings
from tests.samples import write_sample_corpus

FAKE_LLM = Path(fake_llm.__file__)  # run as a script: the tests chdir elsewhere
QUESTION = "When is the deadline for submitting observing proposals?"


@pytest.fixture
def settings(tmp_path, embedder):
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    return load_settings(
        index__dir=tmp_path / "index", stores__conversations_path=tmp_path / "c.sqlite3", llm__timeout_s=60.0
    )


def fake_server(tmp_path, *crash_with: str) -> SupervisedServer:
    def command(port: int) -> list[str]:
        extra = ["--crash-with", crash_with[0]] if crash_with else []
        return [sys.executable, str(FAKE_LLM), "--port", str(port), *extra]

    return SupervisedServer("embedded model server", command, log_path=tmp_path / "server.log")


@asynccontextmanager
async def supervised_service(settings, embedder, server: SupervisedServer):
    """The service on a model server it supervises, as ``open_service`` builds it for the embedded model."""
    async with (
        server,
        open_service(
            settings, embedder=embedder, lm=make_lm(settings, server.api_base), llm_server=server
        ) as service,
    ):
        yield server, service


async def until(condition, timeout_s: float = 30.0) -> None:
    """Wait for ``condition()`` to hold (an event to happen, not a timing)."""
    for _ in range(int(timeout_s / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the condition never held")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGSEGV])
def test_a_killed_server_is_noticed_restarted_and_the_next_question_answered(
    settings, embedder, tmp_path, caplog, how
):
    caplog.set_level(logging.ERROR)

    async def scenario():
        async with supervised_service(settings, embedder, fake_server(tmp_path)) as (server, service):
            first = await service.ask(QUESTION)
            os.kill(server.pid, how)
            await until(lambda: server.crashes)  # noticed without anyone calling the server
            second = await service.ask(QUESTION)
            return first, second, server

    first, second, server = asyncio.run(scenario())
    assert first.agent.outcome == second.agent.outcome == "answered"
    assert server.starts == 2 and server.crashes[0].returncode == -how
    said = caplog.text
    assert f"the embedded model server crashed (signal {how.value} ({how.name}" in said
    assert f"its log is at {tmp_path / 'server.log'}; restarting it" in said
    assert "--- docfinder: start 2 of the embedded model server ---" in (tmp_path / "server.log").read_text()


def test_a_question_the_crash_cut_off_is_answered_again_once_the_server_is_back(settings, embedder, tmp_path):
    """The server dies while a question is being answered: the service says so and answers it again."""
    events = []

    async def scenario():
        async with supervised_service(settings, embedder, fake_server(tmp_path)) as (server, service):

            async def on_status(event):
                events.append(event)
                if event["step"] == "retrieve" and not server.crashes:  # before its first LLM call
                    os.kill(server.pid, signal.SIGSEGV)
                    await until(lambda: server.crashes)

            return await service.ask(QUESTION, on_status=on_status), server

    result, server = asyncio.run(scenario())
    assert result.agent.outcome == "answered"
    assert server.starts == 2
    [restarted] = [e for e in events if e["step"] == "llm_restarted"]
    assert restarted["error"] == (
        "the embedded model server crashed (signal 11 (SIGSEGV)); restarting it and answering again"
    )


def test_a_server_that_crashes_at_every_call_is_given_up_with_its_log(settings, embedder, tmp_path):
    async def scenario():
        async with supervised_service(settings, embedder, fake_server(tmp_path, "SIGSEGV")) as (
            server,
            service,
        ):
            # Each question makes as many LLM calls as its answer needs (one, when code checks
            # it): ask until the third crash gives the server up, within three questions.
            with pytest.raises(ModelServerCannotRunError) as raised:
                for _ in range(3):
                    await service.ask(QUESTION)
            with pytest.raises(ModelServerCannotRunError):  # and stays given up, not restarted
                await service.ask(QUESTION)
            return raised.value, server

    error, server = asyncio.run(scenario())
    assert server.starts == 3 and server.state == "cannot run"
    assert "the embedded model server cannot run on this machine: it crashed 3 times" in str(error)
    assert "(last: signal 11 (SIGSEGV))" in str(error)
    # The log is for the operator (the CLI prints it, the service logs it), not for every client.
    assert str(tmp_path) not in str(error)
    assert f"The last lines of its log ({tmp_path / 'server.log'}):" in error.log_lines
    assert "fake LLM serving on 127.0.0.1" in error.log_lines  # the log's own words


def test_a_server_that_dies_while_starting_is_given_up_at_start(tmp_path):
    def command(port: int) -> list[str]:
        return [sys.executable, "-c", "import sys; print('no model here'); sys.exit(3)"]

    async def scenario():
        server = SupervisedServer("embedded model server", command, log_path=tmp_path / "server.log")
        with pytest.raises(ModelServerCannotRunError) as raised:
            async with server:
                pass
        return raised.value, server

    error, server = asyncio.run(scenario())
    assert server.starts == 3 and server.pid is None
    assert "(last: exit status 3)" in str(error) and "no model here" in error.log_lines
