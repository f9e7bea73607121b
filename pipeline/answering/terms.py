"""Options, paths, identifiers and programs an answer puts forward that neither evidence nor user gave.

Asked how to send mail through a provider's relay with exim4, the 1.5B model wrote "Open the
``/etc/exim4.conf`` file ... ``smtp_relay_host = [smtp99.hostname.dom]:587``", and for a
cloud image's user-data a YAML block of ``deployment_type`` and ``ssh_keys``: a file and
settings the manual never names, in an answer that reads as verified. People run what an
answer about a manual tells them to, so its technical terms must be the documents' (or the
user's own): a command-line option (``--table``), a path under a system directory
(``/etc/exim4/passwd.client``), an identifier joined by underscores (``shared_preload_libraries``).
One that no passage read holds, nor the user's words, is the model's; the sentence that writes
it (a fenced code block is one sentence) does not stand. The names check
(:mod:`pipeline.answering.names`) reads capitalised words; these are written in small letters.

So is the program a line of code runs (its first word, past a prompt and ``sudo``): asked to fix
a Windows script's ^M errors, the model answered "use `dos2unix filename.sh`", a program the
manual never names (it gives ``fromdos``, from tofrodos), and the reply stood verified. A
program is held to a looser bar than a term: the passages read, or any document of the searched
collections (``echo`` or ``systemctl`` run to check a step are everyday tools the passages
rarely name, and the manuals name somewhere); one that no document of the collections names is
outside what the documentation can vouch for. A span of one word holding a dot is a file's name
(``filename.sh``), not a program run.

A placeholder claims nothing: an identifier opened by "your" or "my" (``your_script``), or
made of the user's own words (``reporting_db`` for "the reporting DB").
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pipeline.citations import blank_markers

_OPTION = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*[A-Za-z0-9]")
# Where a system keeps its programs and configuration; a device's or a process's path (/dev/nbd0p1,
# /proc/sys/...) is often derived from the one the documents give, and is not judged.
_SYSTEM_PATH = re.compile(r"(?<![\w.~/-])/(?:etc|usr|var|lib|bin|sbin|opt|boot|srv)(?:/[\w.+@-]+)+")
_IDENTIFIER = re.compile(r"(?<![\w./@$-])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?![\w@-])")
_PLACEHOLDER_OPENINGS = frozenset({"your", "my"})
# Code as the model writes it: a fenced block's lines, or a span in backticks outside one.
_FENCED_BLOCK = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
# A line's first word names the program it runs when it is written as one: letters, digits and
# . _ + - (``apt-file``, ``dos2unix``, ``pg_ctl``; ``SELECT``, read case aside as every term); a shell's
# prompt ("$ ") and a program run as another user (``sudo``) come before it. A line opened by "#"
# is a comment (or root's prompt: which, the line cannot tell) and is not read.
_PROMPT = "$ "
_RUNS_AS_ANOTHER_USER = frozenset({"sudo", "doas"})
_PROGRAM = re.compile(r"[A-Za-z][\w.+-]*")
_WORDS = re.compile(r"[a-z0-9]+")


def unknown_terms(
    sentence: str, evidence: str, said_by_user: str, documents_name: Callable[[str], bool] | None = None
) -> list[str]:
    """The options, system paths, identifiers and programs run of ``sentence``, each once, that
    neither ``evidence`` (the passages as the model read them) nor ``said_by_user`` (the question
    and the user's earlier turns) holds, case aside; placeholders are left alone (see the module
    docstring). A program stands too where ``documents_name`` it (some document of the searched
    collections does)."""
    known = f"{evidence}\n{said_by_user}".lower()
    users_words = set(_WORDS.findall(said_by_user.lower()))
    body = blank_markers(sentence)
    found = [
        *(m.group() for m in _OPTION.finditer(body)),
        *(m.group().rstrip(".") for m in _SYSTEM_PATH.finditer(body)),
        *(m.group() for m in _IDENTIFIER.finditer(body) if not _placeholder(m.group(), users_words)),
    ]
    programs = [p for p in _programs_run(body, users_words) if not (documents_name and documents_name(p))]
    return [term for term in dict.fromkeys([*found, *programs]) if term.lower() not in known]


def _placeholder(identifier: str, users_words: set[str]) -> bool:
    parts = identifier.lower().split("_")
    return parts[0] in _PLACEHOLDER_OPENINGS or all(part in users_words for part in parts)


def _programs_run(body: str, users_words: set[str]) -> list[str]:
    """The first word of each line of code in ``body`` that names a program (see ``_PROGRAM``),
    placeholders aside."""
    lines = [line for block in _FENCED_BLOCK.findall(body) for line in block.splitlines()]
    lines += _CODE_SPAN.findall(_FENCED_BLOCK.sub(" ", body))
    programs = []
    for line in lines:
        words = line.strip().removeprefix(_PROMPT).split()
        while words and words[0] in _RUNS_AS_ANOTHER_USER:
            words = words[1:]
        if line.lstrip().startswith("#") or not words or not _PROGRAM.fullmatch(words[0]):
            continue
        if len(words) == 1 and "." in words[0]:  # a file's name
            continue
        if not _placeholder(words[0], users_words):
            programs.append(words[0])
    return programs
