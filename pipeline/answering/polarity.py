"""Whether a quote denies what a "yes" answer affirms: read by code, word by word.

A small model answers a yes/no question "Yes, the HINT suggests stopping the server and
vacuuming in single-user mode" over a manual that says "Contrary to what the hint states, it is
not necessary or desirable to stop the postmaster or enter single user-mode"; shown together,
the reply contradicts its own quote. The sentence the question matches best may say nothing
either way ("In earlier versions, it was sometimes necessary to stop the postmaster"), so the
quotes printed under the answer are read against the answer's own words.

A negation cue ("not", "no", "never", "precludes", "without" ...) denies the words after it,
up to the end of its clause ("," "but" "when" ...) and at most ``SCOPE_WORDS`` words. A quote
denies an answer when one of its negations denies what the answer affirms (its content words
outside its own negations): at least ``DENIED_WORDS`` of them, and at least half of what that
negation denies, so that a denial of something else which shares a word or two with the
answer ("pg_upgrade does not modify the old cluster" under "Yes, run pg_upgrade --check while
the old server runs") does not count. "does not modify the old cluster" does not deny "Yes, the
check runs without modifying the old cluster" either: the answer denies those words too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pipeline.answering.quotes import NEGATION, QuoteCandidate, content_words
from pipeline.citations import blank_markers
from pipeline.text import analyze

SCOPE_WORDS = 12  # how far a negation reaches, at most, within its clause
DENIED_WORDS = 2  # the answer's words a quote must deny: one shared word is chance ("data")

YES = re.compile(r"^\W*yes\b", re.IGNORECASE)
_CLAUSE_END = re.compile(
    r"[,;:.!?()]|\b(?:but|however|although|unless|except|when|whenever|if|while|because|since|where|which)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[\w'-]+")


def denied_words(text: str) -> set[str]:
    """The stemmed content words ``text`` denies: those within a negation's reach."""
    return set().union(*_negated_clauses(text))


def _negated_clauses(text: str) -> list[set[str]]:
    """What each negation of ``text`` denies: the stemmed content words within its reach."""
    clauses = []
    for cue in NEGATION.finditer(text):
        rest = text[cue.end() :]
        clause_end = _CLAUSE_END.search(rest)
        clause = rest[: clause_end.start()] if clause_end else rest
        clauses.append(set(analyze(" ".join(_WORD.findall(clause)[:SCOPE_WORDS]))))
    return clauses


def affirmed_words(text: str) -> set[str]:
    """The stemmed content words ``text`` states outside its own negations ("yes" itself aside)."""
    plain = blank_markers(YES.sub(" ", text))
    return content_words(plain) - denied_words(plain)


def denies(quote: str, affirmed: set[str], asked: set[str] | None = None) -> bool:
    """Whether a negation of ``quote`` denies the words ``affirmed`` (see the module docstring);
    with ``asked``, only the denied words that are also ``asked`` count towards
    ``DENIED_WORDS`` (the denial must be of what the question asks)."""
    for denied in _negated_clauses(quote):
        shared = denied & affirmed
        counted = shared if asked is None else shared & asked
        if len(counted) >= DENIED_WORDS and 2 * len(shared) >= len(denied):
            return True
    return False


def denying_quote(
    answer: str,
    quotes: Iterable[QuoteCandidate],
    elsewhere: Iterable[QuoteCandidate] = (),
    question: str = "",
) -> QuoteCandidate | None:
    """The first of ``quotes`` that denies what ``answer`` affirms, when ``answer`` opens with
    "yes" (None when it does not, or when no quote denies it); then the first unit of
    ``elsewhere`` (the rest of what the model read) that denies what ``question`` asks: a unit
    neither quoted nor carrying the answer shares words with a long answer by chance ("Commands
    that do not require any version-specific adjustments will still work" under "Yes, ... it
    outlines any manual adjustments ..." to a question on checking an upgrade), so two of the
    words it denies must be the question's too ("it is not necessary ... to stop the postmaster or
    enter single user-mode" under "Yes, stop the server and vacuum in single-user mode", asked
    whether to stop the postmaster and vacuum in single-user mode)."""
    if not YES.match(answer):
        return None
    affirmed = affirmed_words(answer)
    found = next((quote for quote in quotes if denies(quote.text, affirmed)), None)
    if found is not None:
        return found
    asked = content_words(question)
    return next((unit for unit in elsewhere if denies(unit.text, affirmed, asked)), None)
