"""Short facts: lines that state a value but are too short to be evidence units ("Release date:
2025-02-13", a bibliography entry's "November 29, 1998."). Evidence leaves them out (a sentence
of fewer than three words says nothing alone), yet a date or a figure changed in one copy of a
page is a contradiction a reader would want found.

A short fact cannot be compared by its words or its vector: "Release date: 2025-02-13" reads
the same on every release's page. It is compared only with facts of the same subject, read
exactly (its heading and what its paragraph says before it), worded alike but for its values:
two such facts with different values are one measure of one subject stated twice."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.audit.findings import Statement
from pipeline.audit.statements import FIGURES, content_words, tokens
from pipeline.retrieval.ordering import split_sentences

MAX_FACT_WORDS = 6  # tokens of a short fact's own text; longer lines are sentences, compared as units
CONTEXT_CHARACTERS = 240  # of its paragraph before it, kept as the fact's subject


def short_facts(chunk_text: str, unit_texts: set[str]) -> list[tuple[str, str]]:
    """``(fact, context)`` for each short line of ``chunk_text`` that states a value and is no
    evidence unit: ``context`` is what its paragraph says before it (empty at its start)."""
    found = []
    for paragraph in chunk_text.split("\n\n"):
        before: list[str] = []
        for sentence in split_sentences(paragraph):
            words = [t for t in tokens(sentence) if t[0].isalnum()]
            if (
                sentence not in unit_texts
                and FIGURES.search(sentence)
                and content_words(sentence) >= 1  # a word says what the value is; "F.19.1." is a number
                and len(words) <= MAX_FACT_WORDS
            ):
                found.append((sentence, " ".join(before)[-CONTEXT_CHARACTERS:]))
            before.append(sentence)
    return found


def fact_pairs(statements: Sequence[Statement], facts: Sequence[int]) -> list[tuple[int, int, float]]:
    """``(i, j, 1.0)`` for facts (positions in ``statements``) of one exact subject worded alike
    but for their values, with different values, where no document holds two of those values
    (a document stating several is listing them: "Version 15.1", "Version 15.2")."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i in facts:
        statement = statements[i]
        groups.setdefault((statement.subject, FIGURES.sub("#", statement.text.lower())), []).append(i)
    pairs = []
    for members in groups.values():
        per_document = {(statements[i].doc_id, statements[i].text) for i in members}
        if len(per_document) > len({doc for doc, _ in per_document}) or len(per_document) < 2:
            continue
        for n, i in enumerate(members):
            pairs.extend((i, j, 1.0) for j in members[n + 1 :] if statements[i].text != statements[j].text)
    return pairs
