"""Inline citations: the ``[n]`` markers with which an answer cites its numbered passages, and
the link a citation opens.

The one place that knows their syntax: the agent, the answer composer, the figure check, the
judge and every door read and write markers through these functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote

MARKER = re.compile(r"\[(\d+)\]")  # [3]: passage 3
MARKERS_AFTER = re.compile(r"\s*(?:\[\d+\])+")  # the markers right after a statement: " [1][2]"
LEADING_MARKERS = re.compile(r"^(?:\s*\[\d+\])+[.,;]?\s*")  # markers that open a sentence
_MARKER_WITH_SPACE = re.compile(r"\s*\[\d+\]")


def marker(n: int) -> str:
    """The marker citing passage ``n``: ``[n]``."""
    return f"[{n}]"


def has_markers(text: str) -> bool:
    return MARKER.search(text) is not None


def marked_numbers(text: str, passages: int) -> list[int]:
    """The passage numbers ``text`` cites, in order of appearance, those that exist (1 to ``passages``)."""
    return [int(n) for n in MARKER.findall(text) if 1 <= int(n) <= passages]


def cited_numbers(text: str, passages: int) -> set[int]:
    """The passage numbers ``text`` cites that exist (1 to ``passages``)."""
    return set(marked_numbers(text, passages))


def blank_markers(text: str) -> str:
    """``text`` with each marker replaced by a space."""
    return MARKER.sub(" ", text)


def strip_markers(text: str) -> str:
    """``text`` without its markers and the spaces before them: the statement as a reader says it."""
    return " ".join(_MARKER_WITH_SPACE.sub("", text).split())


def citation_link(source: str, pages: tuple[int, int], url_prefixes: Mapping[str, str] = {}) -> str:
    """A link that opens ``source`` at its first cited page.

    A local path under one of ``url_prefixes`` (local prefix → URL prefix) becomes that URL,
    any other local path a ``file://`` URL; PDFs get ``#page=N``, which browsers honour.
    """
    link = source
    if "://" not in source:
        for local, url in sorted(url_prefixes.items(), key=lambda item: -len(item[0])):
            if source.startswith(local):
                link = url.rstrip("/") + "/" + quote(source[len(local) :].lstrip("/"))
                break
        else:
            link = "file://" + quote(source)
    if source.lower().endswith(".pdf") and pages[0] > 0:
        link += f"#page={pages[0]}"
    return link
