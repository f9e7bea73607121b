"""What an audit finds, as every door and report shows it: a finding quotes its passages with
their links, says why it was flagged and how sure the check is, and sorts by severity."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["contradiction", "stale", "near_duplicate", "broken_link", "unanswered"]
Severity = Literal["high", "medium", "low"]
KINDS: tuple[Kind, ...] = ("contradiction", "stale", "near_duplicate", "broken_link", "unanswered")
SEVERITY_RANK: dict[Severity, int] = {"high": 0, "medium": 1, "low": 2}


@dataclass(frozen=True, slots=True)
class Statement:
    """One passage of the index as the audit reads it: an evidence unit with where it stands.

    ``subject`` is what the statement needs to be understood alone: a table row's header and
    group label, a short sentence's innermost heading (empty for a sentence that names its
    subject itself)."""

    key: str
    doc_id: str
    chunk_id: str
    collection: str
    text: str
    title: str
    heading: str
    page: int
    source: str
    link: str
    subject: str = ""


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem in the documentation: ``passages`` are the statements it rests on (two for a
    contradiction, a staleness or a drift; one for a broken link), ``why`` says what the check
    saw, ``diff`` the words that differ ("[-95-] {+90+}"), ``confidence`` from 0 to 1. An
    unanswered-demand finding quotes the questions in ``asked`` and counts them in ``count``."""

    kind: Kind
    severity: Severity
    confidence: float
    why: str
    passages: tuple[Statement, ...] = ()
    diff: str = ""
    asked: tuple[str, ...] = ()
    count: int = 1
    collections: tuple[str, ...] = field(default=())

    def sort_key(self) -> tuple[int, float, int]:
        return (SEVERITY_RANK[self.severity], -self.confidence, -self.count)


def by_severity(findings: Sequence[Finding]) -> list[Finding]:
    """Most severe first; the surer and the more often asked first within a severity."""
    return sorted(findings, key=Finding.sort_key)


def counts(findings: Sequence[Finding]) -> dict[str, dict[str, int]]:
    """How many findings of each kind each collection has ("*" for those of no collection)."""
    table: dict[str, Counter[str]] = {}
    for finding in findings:
        for collection in finding.collections or ("*",):
            table.setdefault(collection, Counter())[finding.kind] += 1
    return {name: {kind: table[name][kind] for kind in KINDS} for name in sorted(table)}
