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

Only the sentences that ask are read for names. A user often sets the scene before asking
("huge append-only events table, queries filter on created_at ranges. is there an index type
that stays tiny for this?"): the names of that scene are the user's own (a column, a table,
a host), which no manual mentions, and what is asked about is in the question that follows.
A sentence asks when it ends with a question mark; a question with none asks throughout.
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
# Where one sentence of a message ends and the next begins: after ., ! or ? and a space, or at
# a line break. A name's own dots ("customers.email", "v1.2") are followed by no space. Not the
# passages' splitter (pipeline.retrieval.ordering.split_sentences): it wants a capital after the
# stop, as prose has, and a chat message often goes on in small letters ("... ranges. is there").
# An ellipsis ends no sentence: in a question about a manual it elides syntax ("ALTER ROLE ... IN
# DATABASE", "INSERT ... ON CONFLICT").
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\.\.\.)\s+|\n+")


def asking_sentences(question: str) -> list[str]:
    """The sentences of ``question`` that ask (end with "?"); all of it when none does."""
    sentences = [s for s in _SENTENCE_END.split(question) if s.strip()]
    asking = [s for s in sentences if s.rstrip().endswith("?")]
    return asking or [question]


def named_terms(question: str, asking_only: bool = True) -> list[str]:
    """The technical names of the question's asking sentences (of all of it, without
    ``asking_only``), as written, each once (see the module docstring)."""
    read = asking_sentences(question) if asking_only else [question]
    return list(dict.fromkeys(found.group() for sentence in read for found in _NAME.finditer(sentence)))


def absent_names(question: str, known: Callable[[str], bool]) -> list[str]:
    """The question's technical names for which ``known`` (a name → whether the searched
    collections' vocabulary has it) says no."""
    return [name for name in named_terms(question) if not known(name)]
