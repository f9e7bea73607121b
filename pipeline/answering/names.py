"""Names a sentence puts forward that neither the evidence it rests on nor the question has.

A small model fills a gap in the evidence with a plausible name ("It is funded by the National
Institutes of Health"); a capitalised word past a sentence's or clause's first that no cited
passage and not the question holds is such a name. And a document's title is no answer to a
question that asks for something else (:func:`named_as_the_answer`).
"""

from __future__ import annotations

import calendar
import re

from pipeline.citations import blank_markers

_NAME_WORD = re.compile(r"(?<![\w'’-])[A-Z][\w'’&.-]*[A-Za-z]")
# A word that opens a sentence or a clause: after a full stop, a colon ("**Stop the server**: Ensure
# ..."), or a list item's bullet or number on a new line; its capital is no name's.
_OPENS_A_SENTENCE = re.compile(r"(?:[.!?][\"”’)\]]*|:[*_`]*)\s+$|\n\s*(?:(?:[-*•]|\d+[.)])\s+)?[*_`]*$")
# A step's title in bold, "1. **Cluster Size**: Enabling checksums …": written in title case, its
# capitals are the heading's, not names.
_BOLD_TITLE = re.compile(r"(\*\*|__)[^*_\n]+?(?::\1|\1\s*:)")
_POSSESSIVE = re.compile(r"['’]s?$")
_MONTHS = frozenset(name.lower() for name in calendar.month_name if name)
ASKS_FOR_A_DOCUMENT = re.compile(
    r"\b(?:document|report|source|protocol|manual|guide|publication|title|form|filing|paper)s?\b",
    re.IGNORECASE,
)


def unknown_names(sentence: str, evidence: str, question: str) -> list[str]:
    """Capitalised words past the sentence's first that neither the cited evidence nor the question
    has. A word after a full stop opens a sentence the splitter left joined ("... in the most
    recent 10-Q. Specifically, ...": "Q." reads as an initial), one after a colon or a list
    item's marker a clause or a step; the words of a step's bold title ("**Cluster Size**:") are
    in title case."""
    body = blank_markers(sentence)
    known = f"{evidence}\n{question}".lower()
    titles = [title.span() for title in _BOLD_TITLE.finditer(body)]
    return [
        found.group()
        for found in list(_NAME_WORD.finditer(body))[1:]
        if found.start() > 0
        and not _OPENS_A_SENTENCE.search(body[: found.start()])
        and not any(start < found.start() < end for start, end in titles)
        and not _known_name(found.group(), known)
    ]


def _known_name(word: str, known: str) -> bool:
    """Whether ``known`` (lower case) has ``word``, also without a possessive or plural "s"; a
    hyphenated name part by part ("Goal-Engagement-Accountability-Results" for "Goals-..."); a
    month by its abbreviation too ("September" of a table's "Sep 30, 2023")."""
    bare = _POSSESSIVE.sub("", word.lower().strip("."))
    if bare in _MONTHS and re.search(rf"\b{bare[:3]}\b", known):
        return True
    parts = [part for part in bare.split("-") if part]
    return all(any(form in known for form in {part, part.removesuffix("s")} if form) for part in parts)


def named_as_the_answer(title: str, sentence: str) -> bool:
    """Whether ``sentence`` gives a document's ``title`` as what something is ("The headset used
    in the study is the NCT06154122 Prot 000 study protocol"): the source named as the answer
    (checked only when the question asks for no document, report, protocol or the like)."""
    words = title.split()
    if len(title) < 8 or not words:
        return False
    pattern = r"\b(?:is|are|was|were)\s+(?:the\s+|an?\s+)?" + r"\s+".join(map(re.escape, words[:3]))
    return bool(re.search(pattern, sentence, re.IGNORECASE))
