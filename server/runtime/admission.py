"""Admission control for CPU-bound work: a bounded pool of threads with a bounded queue.

A burst of searches must not take every thread the server has (health checks and store
calls share the default pool) nor queue without limit: at most ``workers`` run at once,
at most ``queue`` more wait, and the rest are refused at once with :class:`OverloadedError`
(503 with ``Retry-After`` over HTTP), which a client can retry and a load balancer can see.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from pipeline.errors import OverloadedError

T = TypeVar("T")


class WorkPool:
    """Runs blocking functions in its own threads, refusing new work beyond its queue."""

    def __init__(self, workers: int, queue: int, name: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._limit = workers + queue
        self._name = name
        self.pending = 0

    async def run(self, function: Callable[[], T], *, admitted: bool = False) -> T:
        """``function()`` in a pool thread (with the caller's context variables, e.g. the request id).

        ``admitted`` work (part of a request already let in) is never refused.
        """
        if not admitted and self.pending >= self._limit:
            raise OverloadedError(f"too many {self._name} requests at once; try again shortly")
        self.pending += 1
        try:
            context = contextvars.copy_context()
            return await asyncio.get_running_loop().run_in_executor(self._executor, context.run, function)
        finally:
            self.pending -= 1

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
