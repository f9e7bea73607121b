"""Names a question asks about that the documents never mention.

Asked how to set up a WireGuard tunnel, or which ``pool_mode`` PgBouncer should use, a small
model answers from whatever the search found nearest (another VPN, another pooler's setting),
and its answer can be traced to those passages word by word. What tells that the documents
cannot answer is simpler: the thing asked about is nowhere in them. A question's technical
names are its CamelCase words (``PgBouncer``, ``WireGuard``) and its snake_case identifiers
(``pool_mode``, ``pg_stat_io``): words a user copies from a tool or a manual, never ordinary
English, so a collection's vocabulary either has them or does not. Ordinary words, and names
written plainly ("Django", "cloud-init"), are not judged: a user's own words miss a manual's
vocabulary for many reasons, an answerable question's too.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# A word with a capital after a small letter (PgBouncer, WireGuard, macOS), or words joined by
# underscores (pool_mode, pg_stat_io); a dotted or slashed name (a host, a path, a table's
# column) is the user's own and left alone.
_NAME = re.compile(
    r"(?<![\w./@-])(?:[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)(?![\w/@-]|\.\w)"
)


def named_terms(question: str) -> list[str]:
    """The question's technical names, as written, each once (see the module docstring)."""
    return list(dict.fromkeys(found.group() for found in _NAME.finditer(question)))


def absent_names(question: str, known: Callable[[str], bool]) -> list[str]:
    """The question's technical names for which ``known`` (a name → whether the searched
    collections' vocabulary has it) says no."""
    return [name for name in named_terms(question) if not known(name)]
