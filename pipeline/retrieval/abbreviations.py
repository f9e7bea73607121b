"""Find "long form (SHORT)" definitions in text, to build a glossary of acronyms automatically.

This is the Schwartz–Hearst algorithm (2003): for a parenthesised short form of 2–10
characters starting with a letter-or-digit and containing a letter, walk backwards through the
words before the parenthesis, matching the short form's characters from right to left, the
first character at the start of a word. The long form is the shortest such run of words.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from pipeline.retrieval.expansion import Concept

_DEFINITION = re.compile(r"([^()]+?)\s*\(\s*([^()\s][^()]{0,9}?)\s*\)")


def _valid_short(short: str) -> bool:
    return (
        2 <= len(short) <= 10
        and short[0].isalnum()
        and any(c.isalpha() for c in short)
        and len(short.split()) <= 2
    )


def _long_form(short: str, before: str) -> str | None:
    words = before.split()[-min(len(short) + 5, len(short) * 2) :]
    candidate = " ".join(words)
    s_index = len(short) - 1
    l_index = len(candidate) - 1
    while s_index >= 0:
        char = short[s_index].lower()
        if not char.isalnum():
            s_index -= 1
            continue
        while l_index >= 0 and (
            candidate[l_index].lower() != char
            or (s_index == 0 and l_index > 0 and candidate[l_index - 1].isalnum())
        ):
            l_index -= 1
        if l_index < 0:
            return None
        l_index -= 1
        s_index -= 1
    start = candidate.rfind(" ", 0, l_index + 1) + 1
    long_form = candidate[start:].strip()
    if len(long_form) <= len(short) or short.lower() in long_form.lower().split():
        return None
    return long_form


def find_abbreviations(text: str) -> list[tuple[str, str]]:
    """(short form, long form) pairs defined in ``text``."""
    pairs = []
    for match in _DEFINITION.finditer(text):
        before, short = match.group(1), match.group(2).strip()
        if _valid_short(short):
            long_form = _long_form(short, before)
            if long_form:
                pairs.append((short, long_form))
    return pairs


def abbreviation_glossary(texts: Iterable[str], min_count: int = 2) -> list[Concept]:
    """Concepts for acronyms defined at least ``min_count`` times, with their most frequent long form.

    An acronym whose definitions disagree (different long forms in different documents) keeps
    only the long form seen most often, and only if that form accounts for most definitions.
    """
    forms: dict[str, Counter[str]] = defaultdict(Counter)
    for text in texts:
        for short, long_form in find_abbreviations(text):
            forms[short][long_form.lower()] += 1
    concepts = []
    for short, counts in sorted(forms.items()):
        long_form, count = counts.most_common(1)[0]
        if count >= min_count and count * 2 > sum(counts.values()):
            concepts.append(Concept(pref_label=long_form, acronyms=(short,)))
    return concepts
