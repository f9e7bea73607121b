"""A model server that docfinder starts as a child process, watches, and restarts when it dies.

The embedded LLM runs in its own process (llama.cpp's server), so a crash in native code — a
segmentation fault, an illegal instruction, the kernel's OOM killer — takes down that process,
not docfinder. :class:`SupervisedServer` notices the moment the child exits (a thread waits on
it), says so in plain words, and starts it again on the same port; callers that ask for the
server while it restarts wait for it (:meth:`SupervisedServer.ready`). A server that dies again
within seconds of starting, three times in a row, cannot run on this machine: the supervisor
stops restarting it and every later caller gets :class:`ModelServerCannotRunError`, naming the
last crash and quoting the end of the server's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import ConfigurationError, LLMUnavailableError

log = logging.getLogger(__name__)

CRASH_LOOP_CRASHES = 3  # this many quick deaths in a row and the server is given up
CRASH_LOOP_WINDOW_S = 30.0  # a death while starting, or this soon after answering, is quick
LOG_TAIL_LINES = 15


class ModelServerCannotRunError(ConfigurationError):
    """The model server crashes every time right after it starts: it cannot run on this machine.

    The message is for anyone (an HTTP or chat client too); ``log_lines`` (the end of the
    server's log, with its path) is for the operator: the CLI and the service log show it.
    """

    def __init__(self, message: str, log_lines: str) -> None:
        super().__init__(message)
        self.log_lines = log_lines


@dataclass(frozen=True)
class Crash:
    """One unexpected exit of the server process."""

    returncode: int
    uptime_s: float  # from the start of that process to its exit

    def describe(self) -> str:
        """``signal 11 (SIGSEGV)``, ``signal 9 (SIGKILL, e.g. killed …)``, ``exit status 1`` …"""
        if self.returncode >= 0:
            return f"exit status {self.returncode}"
        number = -self.returncode
        try:
            name = signal.Signals(number).name
        except ValueError:
            return f"signal {number}"
        if number == signal.SIGKILL:
            name += ", e.g. killed by the kernel when memory ran out"
        elif number == signal.SIGILL:
            name += ": an instruction this CPU does not have, so a build for another CPU"
        return f"signal {number} ({name})"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ('' when there is none)."""
    try:
        with open(path, "rb") as log_file:
            log_file.seek(0, os.SEEK_END)
            log_file.seek(max(0, log_file.tell() - 64_000))
            text = log_file.read().decode(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


class SupervisedServer:
    """An OpenAI-compatible server process on a loopback port, kept running; an async context manager.

    ``command(port)`` is its command line. It is ready once ``GET /v1/models`` answers 200.
    """

    def __init__(
        self,
        name: str,
        command: Callable[[int], Sequence[str]],
        *,
        log_path: Path,
        start_timeout_s: float = 180,
        crash_loop_window_s: float = CRASH_LOOP_WINDOW_S,
    ) -> None:
        self.name = name
        self._command = command
        self.log_path = log_path
        self.start_timeout_s = start_timeout_s
        self.crash_loop_window_s = crash_loop_window_s
        self.port = free_port()
        self.crashes: list[Crash] = []  # every unexpected exit, oldest first
        self.starts = 0  # processes started so far (the first start and each restart)
        self._process: subprocess.Popen[bytes] | None = None
        self._started_at = 0.0
        self._ready_at = 0.0
        self._quick_crashes = 0  # consecutive deaths within the window of their start
        self._up = False
        self._cannot_run: ModelServerCannotRunError | None = None
        self._changed = asyncio.Event()  # set whenever it becomes ready or is given up
        self._restart: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        """The running server's process id (None while none runs)."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    @property
    def state(self) -> str:
        """``ready``, ``restarting`` or ``cannot run`` (the error each call raises then says why)."""
        if self._cannot_run is not None:
            return "cannot run"
        return "ready" if self._up else "restarting"

    async def __aenter__(self) -> SupervisedServer:
        self._loop = asyncio.get_running_loop()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_bytes(b"")  # this session's log only
        started = False
        try:
            await self._start()
            await self.ready()
            started = True
        finally:
            if not started:  # a failed or cancelled start leaves no process behind
                await self.__aexit__(None, None, None)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._closing = True
        if self._restart is not None:
            self._restart.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._restart
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            await asyncio.to_thread(process.wait, 10)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)

    async def ready(self) -> None:
        """Return once the server answers; while it restarts, wait for it (up to its start timeout).

        Raises :class:`ModelServerCannotRunError` once it has been given up.
        """
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            if self._cannot_run is not None:
                raise self._cannot_run
            if self._up and self.pid is not None:  # (dead but not yet handled: wait for the restart)
                return
            self._changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LLMUnavailableError(
                    f"the {self.name} is restarting and did not answer within {self.start_timeout_s:g} s"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def next_crash(self, seen: int, timeout_s: float) -> Crash | None:
        """The first crash after the ``seen`` ones, waiting up to ``timeout_s`` for it to be noticed
        (a failed call can arrive just before the exit does); None when the server did not die."""
        deadline = time.monotonic() + timeout_s
        while len(self.crashes) <= seen and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return self.crashes[seen] if len(self.crashes) > seen else None

    async def _start(self) -> None:
        """Start one process and wait until it answers; its exit, at any time, goes to :meth:`_exited`."""
        self.starts += 1
        with open(self.log_path, "ab") as log_file:
            log_file.write(f"--- docfinder: start {self.starts} of the {self.name} ---\n".encode())
            log_file.flush()
            # The server logs a lot; a file (not a pipe nobody reads) keeps it from blocking.
            process = subprocess.Popen(
                list(self._command(self.port)),
                stdout=log_file,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        self._process = process
        self._started_at = time.monotonic()
        threading.Thread(
            target=self._watch, args=(process,), name=f"{self.name} watcher", daemon=True
        ).start()
        if await self._answers(process):
            self._up = True
            self._ready_at = time.monotonic()
            self._changed.set()
        elif process.poll() is None:  # hung while loading: a failed start, like a crash
            log.error("the %s did not answer within %g s; stopping it", self.name, self.start_timeout_s)
            process.kill()

    def _watch(self, process: subprocess.Popen[bytes]) -> None:
        """In a thread: wait for the process to end and hand its exit to the event loop at once.

        ``waitid(WNOWAIT)`` waits without reaping the child or holding the ``Popen``'s lock
        (``Popen.wait`` would, and ``poll()`` elsewhere would report it running meanwhile).
        """
        with contextlib.suppress(ChildProcessError):  # already reaped by a poll()
            os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
        returncode = process.wait()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody to tell
                loop.call_soon_threadsafe(self._exited, process, returncode)

    def _exited(self, process: subprocess.Popen[bytes], returncode: int) -> None:
        if self._closing or process is not self._process:
            return  # stopped on purpose, or an old process
        now = time.monotonic()
        crash = Crash(returncode, now - self._started_at)
        self.crashes.append(crash)
        quick = not self._up or now - self._ready_at < self.crash_loop_window_s
        self._up = False
        self._quick_crashes = self._quick_crashes + 1 if quick else 1
        if self._quick_crashes >= CRASH_LOOP_CRASHES:
            self._cannot_run = ModelServerCannotRunError(
                f"the {self.name} cannot run on this machine: it crashed {self._quick_crashes} times "
                f"in a row within {self.crash_loop_window_s:g} s of starting (last: {crash.describe()}), "
                "so it is not restarted again; `docfinder doctor` checks the likely causes (CPU "
                "features, memory)",
                f"The last lines of its log ({self.log_path}):\n{log_tail(self.log_path)}",
            )
            log.error("%s. %s", self._cannot_run, self._cannot_run.log_lines)
            self._changed.set()
            return
        log.error(
            "the %s crashed (%s) after %.1f s; its log is at %s; restarting it",
            self.name,
            crash.describe(),
            crash.uptime_s,
            self.log_path,
        )
        self._restart = asyncio.get_running_loop().create_task(self._start_again())

    async def _start_again(self) -> None:
        try:
            await self._start()
        except OSError as exc:  # the command itself cannot be run any more (deleted, no memory to fork)
            self._cannot_run = ModelServerCannotRunError(
                f"the {self.name} crashed and could not be started again: {exc}", ""
            )
            log.error("%s", self._cannot_run)
            self._changed.set()

    async def _answers(self, process: subprocess.Popen[bytes]) -> bool:
        """Poll ``/models`` until it answers (True), the process exits or the start times out (False)."""
        import aiohttp

        deadline = time.monotonic() + self.start_timeout_s
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline and process.poll() is None and not self._closing:
                try:
                    async with session.get(
                        f"{self.api_base}/models", timeout=aiohttp.ClientTimeout(total=2)
                    ) as reply:
                        if reply.status == 200:
                            return True
                except (aiohttp.ClientError, TimeoutError):  # still loading: poll again
                    pass
                await asyncio.sleep(0.25)
        return False


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGTERM it when docfinder dies, even by kill -9,
    so a crashed or killed docfinder never leaves a 2 GB model server behind."""
    if sys.platform != "linux":
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
