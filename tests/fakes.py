"""Hand-written stand-ins for heavy components, for tests of control flow and arithmetic."""

from __future__ import annotations

import os
import re
import signal


class WhitespaceTokenizer:
    """One token per whitespace-separated word: makes token budgets easy to reason about."""

    def count(self, text: str) -> int:
        return len(text.split())

    def offsets(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in re.finditer(r"\S+", text)]


POISON = "self-destruct"


class CrashingTokenizer(WhitespaceTokenizer):
    """Kills the process that counts a text holding :data:`POISON`, as a parser crashing on one
    file would kill the process converting it. Only for conversions in child processes."""

    def count(self, text: str) -> int:
        if POISON in text:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().count(text)
