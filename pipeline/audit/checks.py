"""The audit's checks on pairs of near statements: contradictions, stale statements and
copy-paste drift, each confirmed by code (:func:`pipeline.audit.statements.compare`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from pipeline.audit.findings import Finding, Statement
from pipeline.audit.statements import (
    MIN_WORDS,
    Comparison,
    code_like,
    compare,
    content_words,
    version_of,
    word_count,
)

DRIFT_MIN_WORDS = 12  # a drifted passage shorter than this is a template sentence, not a copy
OWN_WORDS = 2  # content words a statement needs in its own text: a row needs a label
_IDENTIFIER = re.compile(r"_|[a-z][A-Z]|[A-Za-z]\d|\d[A-Za-z]")
_PROSE_END = re.compile(r"[.!?][\"')\]”’]*\s*$")


def comparable(statement: Statement) -> bool:
    """Whether a statement says enough to be compared: a table row or a sentence that ends as
    one (a line of a program's output, "there are 2 rows in ttest", is no claim of the
    documentation's), words of its own (a row of figures only, whose subject is somewhere
    above, is not), more prose than code, and, with its subject,
    :data:`~pipeline.audit.statements.MIN_WORDS` content words."""
    text = statement.text.strip()
    return (
        (text.startswith("|") or bool(_PROSE_END.search(text)))
        and content_words(text) >= OWN_WORDS
        and not code_like(statement.text)
        and content_words(f"{statement.subject} {statement.text}") >= MIN_WORDS
    )


def pair_findings(statements: Sequence[Statement], pairs: Iterable[tuple[int, int, float]]) -> list[Finding]:
    """A finding for each pair of near statements whose words show a problem (one per pair)."""
    findings: list[Finding] = []
    drifted: dict[str, int] = {}  # a drift's words → its finding: one template, one finding
    held = {(s.doc_id, s.text) for s in statements}
    for i, j, similarity in pairs:
        a, b = statements[i], statements[j]
        if a.text == b.text and a.subject == b.subject:
            continue
        if _row_label(a.text) != _row_label(b.text):
            continue  # two rows of a table are about what their first cells name
        comparison = compare(_as_read(a), _as_read(b))
        finding = _finding(a, b, comparison, similarity)
        if finding is None or (finding.kind == "contradiction" and a.chunk_id == b.chunk_id):
            continue  # one passage restating itself with another value is a worked example
        if finding.kind == "near_duplicate":
            if (b.doc_id, a.text) in held or (a.doc_id, b.text) in held:
                continue  # a document holding both wordings has two sibling sentences, not a drifted copy
            first = drifted.setdefault(" ".join(sorted((a.text, b.text))), len(findings))
            if first != len(findings):
                findings[first] = replace(findings[first], count=findings[first].count + 1)
                continue
        findings.append(finding)
    return findings


def _row_label(text: str) -> str:
    """A table row's first cell (what the row is about); "" for a sentence."""
    return text.strip().strip("|").split("|")[0].strip().lower() if text.lstrip().startswith("|") else ""


def _as_read(statement: Statement) -> str:
    return f"{statement.subject}: {statement.text}" if statement.subject else statement.text


def _finding(a: Statement, b: Statement, comparison: Comparison, similarity: float) -> Finding | None:
    sure = round(min(1.0, (similarity + comparison.ratio) / 2), 2)
    collections = tuple(sorted({a.collection, b.collection}))
    relation = comparison.relation
    if relation == "value":
        old = " ".join(t for t in comparison.removed if t[0].isalnum())
        new = " ".join(t for t in comparison.added if t[0].isalnum())
        why = f"the same statement with another value: {old!r} here, {new!r} there"
        return Finding("contradiction", "high", sure, why, (a, b), comparison.diff, collections=collections)
    if relation == "polarity":
        why = "the same statement, once negated: one passage says the opposite of the other"
        return Finding("contradiction", "high", sure, why, (a, b), comparison.diff, collections=collections)
    if relation == "version":
        older, newer = version_of(comparison.removed), version_of(comparison.added)
        first, second = (a, b) if older <= newer else (b, a)
        low, high = sorted((older, newer))
        why = (
            f"the same statement for release {_release(low)} and for release {_release(high)}: "
            "the first passage is tied to the older one"
        )
        return Finding(
            "stale", "medium", sure, why, (first, second), comparison.diff, collections=collections
        )
    if (
        relation == "drift"
        and a.doc_id != b.doc_id
        and min(word_count(a.text), word_count(b.text)) >= DRIFT_MIN_WORDS
        and not _names_its_subject(a, comparison.removed)
        and not _names_its_subject(b, comparison.added)
    ):
        why = (
            f"a passage copied between two documents whose words have drifted ({comparison.ratio:.0%} alike)"
        )
        return Finding("near_duplicate", "low", sure, why, (a, b), comparison.diff, collections=collections)
    return None


def _names_its_subject(statement: Statement, changed: Sequence[str]) -> bool:
    """Whether the words the statement changes name what it is about: all of them in its own
    title or heading (a template sentence filled in for its page: "Do not throw an error if the
    event trigger does not exist" on DROP EVENT TRIGGER), or one of them an identifier
    ("pg_receivexlog", "SupportRequestCost"). Copy-paste drift is in ordinary words."""
    place = f"{statement.title} {statement.heading}".lower()
    words = [t for t in changed if t[0].isalnum()]
    if any(_IDENTIFIER.search(w) for w in words):
        return True
    return bool(words) and all(w.lower() in place for w in words)


def _release(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version)) or "?"
