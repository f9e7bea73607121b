"""Options, system paths and identifiers a sentence puts forward that neither the evidence nor the user gave.

Asked how to send mail through a provider's relay with exim4, the 1.5B model wrote "Open the
``/etc/exim4.conf`` file ... ``smtp_relay_host = [smtp99.hostname.dom]:587``", and for a
cloud image's user-data a YAML block of ``deployment_type`` and ``ssh_keys``: a file and
settings the manual never names, in an answer that reads as verified. People run what an
answer about a manual tells them to, so its technical terms must be the documents' (or the
user's own): a command-line option (``--table``), a path under a system directory
(``/etc/exim4/passwd.client``), an identifier joined by underscores (``shared_preload_libraries``).
One that no passage read holds, nor the user's words, is the model's; the sentence that
writes it (a fenced code block is one sentence) does not stand. The names check
(:mod:`pipeline.answering.names`) reads capitalised words; these are written in small letters.

A placeholder claims nothing: an identifier opened by "your" or "my" (``your_script``), or
made of the user's own words (``reporting_db`` for "the reporting DB").
"""

from __future__ import annotations

import re

from pipeline.citations import blank_markers

_OPTION = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*[A-Za-z0-9]")
# Where a system keeps its programs and configuration; a device's or a process's path (/dev/nbd0p1,
# /proc/sys/...) is often derived from the one the documents give, and is not judged.
_SYSTEM_PATH = re.compile(r"(?<![\w.~/-])/(?:etc|usr|var|lib|bin|sbin|opt|boot|srv)(?:/[\w.+@-]+)+")
_IDENTIFIER = re.compile(r"(?<![\w./@$-])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?![\w@-])")
_PLACEHOLDER_OPENINGS = frozenset({"your", "my"})
_WORDS = re.compile(r"[a-z0-9]+")


def unknown_terms(sentence: str, evidence: str, said_by_user: str) -> list[str]:
    """The options, system paths and identifiers of ``sentence``, each once, that neither
    ``evidence`` (the passages as the model read them) nor ``said_by_user`` (the question and
    the user's earlier turns) holds, case aside; placeholders are left alone (see the module
    docstring)."""
    known = f"{evidence}\n{said_by_user}".lower()
    users_words = set(_WORDS.findall(said_by_user.lower()))
    body = blank_markers(sentence)
    found = [
        *(m.group() for m in _OPTION.finditer(body)),
        *(m.group().rstrip(".") for m in _SYSTEM_PATH.finditer(body)),
        *(m.group() for m in _IDENTIFIER.finditer(body) if not _placeholder(m.group(), users_words)),
    ]
    return [term for term in dict.fromkeys(found) if term.lower() not in known]


def _placeholder(identifier: str, users_words: set[str]) -> bool:
    parts = identifier.lower().split("_")
    return parts[0] in _PLACEHOLDER_OPENINGS or all(part in users_words for part in parts)
