"""Hand-written stand-ins for heavy components, for tests of control flow and arithmetic."""

from __future__ import annotations

import re


class WhitespaceTokenizer:
    """One token per whitespace-separated word: makes token budgets easy to reason about."""

    def count(self, text: str) -> int:
        return len(text.split())

    def offsets(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in re.finditer(r"\S+", text)]
