"""The watchdog of the conversion processes: it kills a child over the memory limit, or on one
file past the time limit, and leaves the verdict for that file."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from index_build.limits import (
    MB,
    IngestLimits,
    over_limit,
)


class ConversionWatchdog:
    """Kills a conversion process over the memory limit, or on one file past the time limit.

    Each child notes the file it works on, and since when, in ``board`` (a file named by its
    pid); the watchdog reads the children's resident memory from ``/proc`` (on systems
    without it only the time limit holds). A kill leaves a verdict for that file, which the
    pool reports instead of converting it again.
    """

    def __init__(
        self,
        board: Path,
        limits: IngestLimits,
        children: Callable[[], list[multiprocessing.process.BaseProcess]],
        every_s: float = 0.2,
    ) -> None:
        self.board = board
        self.limits = limits
        self.children = children
        self.every_s = every_s
        self.verdicts: dict[str, str] = {}  # doc id → why its conversion was stopped
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="conversion-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stopping.wait(self.every_s):
            for child in self.children():
                if child.pid is not None and child.is_alive():
                    self._check(child.pid)

    def _check(self, pid: int) -> None:
        doc_id, started = _working_on(self.board / str(pid))
        resident_mb = _resident_mb(pid)
        limits = self.limits
        if resident_mb > limits.convert_memory_mb:
            used = f"its conversion used {resident_mb:,.0f} MB of memory"
            verdict = over_limit(used, f"{limits.convert_memory_mb:,} MB", "convert-memory-mb")
        elif doc_id and time.time() - started > limits.convert_timeout_s:
            verdict = over_limit(
                "its conversion took too long", f"{limits.convert_timeout_s:g} s", "convert-timeout-s"
            )
        else:
            return
        if doc_id:
            self.verdicts[doc_id] = verdict
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # it finished and left meanwhile
            self.verdicts.pop(doc_id, None)


def _working_on(note: Path) -> tuple[str, float]:
    """The doc id a child converts and since when (epoch seconds); ("", 0) when it is idle."""
    try:
        doc_id, started = note.read_text(encoding="ascii").split()
        return doc_id, float(started)
    except (OSError, ValueError):  # idle (no note), or a note being written
        return "", 0.0


def _resident_mb(pid: int) -> float:
    """A process's resident memory in MB, from /proc (0 where there is none)."""
    try:
        resident_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / MB
