"""Document-aware questions: which documents a question is about, from what it names.

Each document carries a little metadata extracted at ingest (:class:`DocumentMeta`): the
names of its subject (an organisation, a product, a code in its file name), the period it
covers (a quarter, a date) and its version. A question that names one of these, or asks
for "the latest" or for a change "over time", is resolved here into a
:class:`DocumentScope`:

- names ("Intel", "CASA") keep the documents of that subject;
- a period or version ("Q1 2023", "version 4.2") keeps the documents that cover it;
- "the latest", "most recent", "current release" keep the newest document of each subject,
  and every undated one;
- "over time", "across quarters", "these releases", "compared to previous versions" keep
  every period, and ask for evidence from each (``spread``).

A restriction that would leave no document is dropped (and the trace says so), so a
question never loses its answer to a misread name. The rules know no particular kind of
document: filings with quarters, manuals with versions and release notes with dates all
resolve the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pipeline.retrieval.periods import Period, parse_period, periods_in, version_key, versions_in

Recency = Literal["latest", "all"]

_LATEST = re.compile(
    r"\b(?:latest|most\s+recent|newest|last|current|recent)\b(?:\s+[\w-]+){0,3}?\s+"
    r"(?:[\w-]*q|[\w-]*k|reports?|filings?|quarters?|versions?|releases?|editions?|documents?|manuals?|"
    r"updates?|periods?|years?|months?|issues?|statements?|guides?|notes?)\b"
    r"|\bthe\s+(?:latest|most\s+recent|newest)\b",
    re.IGNORECASE,
)
_PERIODS_WORD = r"(?:quarters|periods|years|months|releases|versions|editions|updates|reports|filings|issues)"
# Plural names of periodic documents, including form codes such as "10-Qs".
_DOCUMENT_WORDS = r"(?:documents|statements|manuals|guides|notes|bulletins|newsletters|minutes|\d[\w-]*s)"
_SPREAD = re.compile(
    r"\bover\s+time\b|\btrends?\b|\bfluctuat\w*|\bevolv\w*|\bhistor(?:y|ical)\b"
    rf"|\b(?:across|throughout|over|during|in|between|for)\s+(?:all\s+)?(?:the\s+|these\s+|those\s+)?"
    rf"(?:reported\s+|past\s+|previous\s+|prior\s+|recent\s+|last\s+|several\s+|multiple\s+|successive\s+)?"
    rf"(?:quarterly\s+|annual\s+|monthly\s+)?{_PERIODS_WORD}\b"
    rf"|\b(?:these|those)\s+(?:quarterly\s+|annual\s+|monthly\s+)?(?:{_PERIODS_WORD}|{_DOCUMENT_WORDS})\b"
    rf"|\b(?:past|previous|prior|earlier|preceding)\s+(?:quarterly\s+|annual\s+)?{_PERIODS_WORD}\b"
    r"|\b(?:quarter|year|month|release|version)[\s-]+(?:over|on|to)[\s-]+(?:quarter|year|month|release|version)\b"
    r"|\bhow\s+(?:has|have|did)\b[^?]*\b(?:changed?|shifted?|grown|grew|declined?|developed)\b",
    re.IGNORECASE,
)
_POSSESSIVE = re.compile(r"['’]s\b")


@dataclass(frozen=True, slots=True)
class DocumentMeta:
    """What a question can name about a document.

    ``names`` are lower-case names of the document's subject (its organisation, product or a
    code from its file name); ``period`` is a :meth:`Period.label`; ``version`` a dotted number.
    """

    doc_id: str
    title: str = ""
    organisation: str = ""
    names: tuple[str, ...] = ()
    period: str = ""
    version: str = ""

    def time_key(self) -> tuple[tuple[int, int, int], tuple[int, ...]] | None:
        """What "newer" compares: the period's end, then the version; None when undated."""
        period = parse_period(self.period) if self.period else None
        if period is None and not self.version:
            return None
        return (period.end() if period else (0, 0, 0), version_key(self.version))


@dataclass(frozen=True, slots=True)
class DocumentScope:
    """The documents a question is about, and why.

    ``documents`` is None when the question names nothing that narrows the search; else
    the ids of the documents to search, newest first. With ``spread``, the answer needs
    evidence from each of them (a change over time).
    """

    documents: tuple[str, ...] | None = None
    spread: bool = False
    names: tuple[str, ...] = ()
    periods: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    recency: Recency | None = None
    notes: tuple[str, ...] = ()

    def trace(self) -> dict[str, Any]:
        """The resolved filters, for the trace."""
        return {
            "names": list(self.names),
            "periods": list(self.periods),
            "versions": list(self.versions),
            "recency": self.recency,
            "spread": self.spread,
            "documents": list(self.documents) if self.documents is not None else None,
            "notes": list(self.notes),
        }


def mentioned_names(question: str, documents: Sequence[DocumentMeta]) -> tuple[str, ...]:
    """The document subject names that ``question`` mentions as whole words (case-insensitive)."""
    text = " " + _POSSESSIVE.sub("", question.lower()) + " "
    names = {n for d in documents for n in d.names}
    return tuple(sorted(n for n in names if re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-])", text)))


def recency_of(question: str) -> Recency | None:
    """ "all" when the question asks about change over time, "latest" for the newest, else None."""
    if _SPREAD.search(question):
        return "all"
    if _LATEST.search(question):
        return "latest"
    return None


def resolve_scope(question: str, documents: Sequence[DocumentMeta]) -> DocumentScope:
    """The documents ``question`` is about; see the module docstring."""
    notes: list[str] = []
    names = mentioned_names(question, documents)
    chosen = list(documents)
    narrowed = False
    if names:
        named = [d for d in chosen if set(d.names) & set(names)]
        if 0 < len(named) < len(chosen):
            chosen, narrowed = named, True

    periods = [p for p in periods_in(question, bare_years=True)]
    versions = versions_in(question)
    if periods or versions:
        matching = [d for d in chosen if _covers(d, periods, versions)]
        if matching:
            chosen, narrowed = matching, True
        else:
            notes.append("no document covers the named period or version: kept every candidate")

    recency = recency_of(question)
    dated = [d for d in chosen if d.time_key() is not None]
    if recency == "latest" and not (periods or versions):
        if dated:
            # Recency ranks dated documents only: an undated one (a manual's page beside its dated
            # release notes) is neither newer nor older, so "last year's partitions" keeps it.
            kept = [*_newest_per_subject(dated), *(d for d in chosen if d.time_key() is None)]
            if len(kept) < len(chosen):
                chosen, narrowed = kept, True
        else:
            notes.append("no document is dated: 'latest' not applied")
    if recency == "all" and not narrowed and len(dated) > 1 and len({d.names[:1] for d in chosen}) == 1:
        narrowed = True  # one subject only (a product's releases, one company's reports): all of them
    chosen = sorted(chosen, key=lambda d: d.time_key() or ((0, 0, 0), ()), reverse=True)
    spread = recency == "all" and narrowed and len(chosen) > 1
    return DocumentScope(
        documents=tuple(d.doc_id for d in chosen) if narrowed else None,
        spread=spread,
        names=names,
        periods=tuple(p.label() for p in periods),
        versions=tuple(versions),
        recency=recency,
        notes=tuple(notes),
    )


def _covers(document: DocumentMeta, periods: list[Period], versions: list[str]) -> bool:
    if (
        versions
        and document.version
        and any(version_key(document.version)[: len(version_key(v))] == version_key(v) for v in versions)
    ):
        return True
    own = parse_period(document.period) if document.period else None
    return own is not None and any(p.covers(own) or own.covers(p) for p in periods)


def _newest_per_subject(documents: list[DocumentMeta]) -> list[DocumentMeta]:
    """The newest document of each subject (documents without names form one subject)."""
    newest: dict[tuple[str, ...], DocumentMeta] = {}
    for document in documents:
        subject = document.names[:1]
        best = newest.get(subject)
        if best is None or (document.time_key() or ((0, 0, 0), ())) > (best.time_key() or ((0, 0, 0), ())):
            newest[subject] = document
    return list(newest.values())
