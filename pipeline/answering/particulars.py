"""Particulars: the tokens of a text that state one particular thing rather than a topic.

Asked which setting or how, a manual answers with a name, an option, a path or a value; a
filing answers with a figure. A sentence on the topic, sharing as many of the question's words,
names none. So among the units that match a question, one stating particulars the question
does not already hold is the likelier answer (:func:`pipeline.answering.quotes.best_matches`).
"""

from __future__ import annotations

import math
import re

# A token that states one particular thing rather than a topic: code, a figure or a name with a
# digit ("$1,234", "4.0", "ext4"), an option ("-t", "--check"), an identifier ("max_part"), a file
# or dotted name ("recovery.signal"), a path ("/etc/hostname"), a setting ("max_part=16"), a word
# in capitals ("MVCC", "GAAP"), a CamelCase name ("PgBouncer").
_SPECIFIC = re.compile(
    r"`[^`\n]+`"
    r"|(?<![\w.])[^\s()\[\]{}\"“”'’;:]*\d(?:[^\s()\[\]{}\"“”'’;:,]|,(?=\d))*"
    r"|(?<![\w-])--?[A-Za-z][\w-]*"
    r"|\b\w+_\w+\b"
    r"|(?<![\w.])[A-Za-z_][\w-]+(?:\.[A-Za-z_][\w-]+)+"
    r"|(?<![\w/])/[\w.+-]+(?:/[\w.+-]+)*"
    r"|\b\w+=\S+"
    r"|\b[A-Z][A-Z0-9]+\b"
    r"|\b[A-Za-z][a-z]+[A-Z]\w*\b"
)
_WORD = re.compile(r"\w+")
SPECIFIC_WEIGHT = 0.15  # per log(1 + the particulars a unit adds to the question's), in a match
MAX_PARTICULARS = 3  # counted at most: a program's output line is all figures, and no answer


def specifics(text: str) -> set[str]:
    """The tokens of ``text`` that state one particular thing (a figure, a setting, a command, a
    path, a name), lower case: what an answer gives and a topic sentence does not."""
    return {m.group().strip("`.").lower() for m in _SPECIFIC.finditer(text)} - {""}


def given_in(asked: str) -> set[str]:
    """What ``asked`` (a question) already holds, as particulars or as words: a unit that repeats
    them adds nothing."""
    return specifics(asked) | set(_WORD.findall(asked.lower()))


def adds_particulars(unit: str, asked: str) -> int:
    """How many particulars (:func:`specifics`) ``unit`` states that ``asked`` (a question) does not
    hold, as a token or as words: asked which setting, or how, a manual's answer names a setting
    or a command; a sentence on the topic alone names none."""
    return len(specifics(unit) - given_in(asked))


def particulars_weight(unit: str, given: set[str]) -> float:
    """What the particulars ``unit`` adds to a question weigh in a match (``given``: the question's,
    :func:`given_in`, read once for all its units): ``SPECIFIC_WEIGHT`` per log(1 + their number),
    at most ``MAX_PARTICULARS`` counted."""
    return SPECIFIC_WEIGHT * math.log1p(min(len(specifics(unit) - given), MAX_PARTICULARS))
