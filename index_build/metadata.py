"""Document metadata for document-aware questions: subject names, period and version.

Read from the file name first (people name files "2023 Q1 Report", "manual-v4.2"), then
from the document's opening: its first two pages, or, for a format without pages (HTML,
Markdown), its title and the blocks before its first section heading or table of contents,
at most ``OPENING_BLOCKS``. A web page of a manual is a section of a book: the figures, dates and
"Release 15.20" of its body or its table of contents say nothing of which version or period
the page is (read from a whole page they dated the PostgreSQL manual's chapters 2021-04 or
17.2, and "the latest" then meant those two pages).

- organisation: the first short line on the first two pages that ends in a legal-entity
  suffix ("Apple Inc.", "NVIDIA CORPORATION"), else one naming an institution
  ("European Southern Observatory"); its core name ("apple", "nvidia") is what questions use;
- period: a quarter or date in the file name, else the first date that follows a cue such
  as "period ended", "as of", "effective", "released" or "updated" in the opening;
- version: "version 4.2", "v4.2", "release 3" in the file name, else in the opening.

Codes in the file name written in capitals ("ALMA", "AAPL") that the document itself
mentions are names too.
"""

from __future__ import annotations

import re
from pathlib import Path

from index_build.document import ParsedDocument
from pipeline.retrieval.documents import DocumentMeta
from pipeline.retrieval.periods import Period, periods_in, versions_in

OPENING_PAGES = 2
OPENING_BLOCKS = 12  # an unpaged document's front matter, at most: about what a title page holds
# A table of contents' entry: a section number, a short title ("17.2. Requirements", "E.1. Release 15.20").
_CONTENTS_ENTRY = re.compile(r"^(?:[A-Z]|\d+)(?:\.\d+)*\.\s+\S.{0,80}$")
_MAX_NAME_WORDS = 8
_LEGAL_SUFFIX = re.compile(
    r"^(?P<core>[^()]+?)[,\s]+(?:inc|incorporated|corporation|corp|company|co|ltd|limited|llc|l\.l\.c|plc|"
    r"p\.l\.c|gmbh|ag|s\.a|n\.v|b\.v|lp|l\.p|se|sa)\.?(?:\s+and\s+(?:its\s+)?subsidiaries)?$",
    re.IGNORECASE,
)
_INSTITUTION = re.compile(
    r"\b(?:observatory|university|institute|laboratory|agency|foundation|association|society|"
    r"authority|ministry|organi[sz]ation|centre|center|administration)\b",
    re.IGNORECASE,
)
_DATE_CUE = re.compile(
    r"\b(?:periods?\s+end(?:ed|ing)|quarter\s+end(?:ed|ing)|year\s+end(?:ed|ing)|as\s+of|effective|dated|"
    r"issued|published|released|revised|updated|last\s+updated)\b[^.;\n]{0,12}",
    re.IGNORECASE,
)
_CODE = re.compile(r"\b[A-Z][A-Z0-9&]{2,7}\b")
_GENERIC_CODES = frozenset(
    [
        "README",
        "FAQ",
        "API",
        "HTTP",
        "HTML",
        "PDF",
        "DOC",
        "DOCX",
        "DRAFT",
        "FINAL",
        "NEW",
        "OLD",
        "COPY",
        "TODO",
        "LICENSE",
        "CHANGELOG",
        "NOTES",
        "USER",
        "GUIDE",
        "MANUAL",
        "REPORT",
        "FORM",
        "INDEX",
        "MAIN",
        "TEST",
        "DATA",
    ]
)


def describe(path: Path, document: ParsedDocument, doc_id: str) -> DocumentMeta:
    """The metadata of one converted document; see the module docstring."""
    opening = _opening(document)
    stem = re.sub(r"[_]+", " ", path.stem)
    organisation = _organisation(opening)
    names = _names(organisation)
    body = "\n".join(opening)
    for code in _CODE.findall(stem):
        if code not in _GENERIC_CODES and not re.fullmatch(r"Q[1-4]|FY\d*|V\d+", code) and code in body:
            names.append(code.lower())
    file_periods = periods_in(stem, bare_years=True)
    period = file_periods[0] if file_periods else _cued_period(opening)
    # Line by line: "17.1. Short Version" over "17.2. Requirements" in a contents list is no "version 17.2".
    lines = [document.title, *opening[:40]]
    versions = versions_in(stem) or [v for line in lines for v in versions_in(line)]
    return DocumentMeta(
        doc_id=doc_id,
        title=document.title,
        organisation=organisation,
        names=tuple(dict.fromkeys(names)),
        period=period.label() if period else "",
        version=versions[0] if versions else "",
    )


def _opening(document: ParsedDocument) -> list[str]:
    """The texts of the document's opening (see the module docstring), its title left out: a
    page titled "Part III. Server Administration" is not published by an administration."""
    if document.page_count:
        return [b.text for b in document.blocks if b.page <= OPENING_PAGES and b.text.strip()][:200]
    front: list[str] = []
    headings = 0
    for block in document.blocks:
        if block.kind == "heading":
            headings += 1
            if headings > 1:  # the first is the page's title; the second opens its body
                break
        elif _CONTENTS_ENTRY.match(block.text.strip()):  # a table of contents lists other pages
            break
        if block.text.strip() and block.text != document.title:
            front.append(block.text)
        if len(front) >= OPENING_BLOCKS:
            break
    return front


def _organisation(lines: list[str]) -> str:
    candidates = [ln.strip() for ln in lines if 0 < len(ln.split()) <= _MAX_NAME_WORDS]
    for line in candidates:
        if _LEGAL_SUFFIX.match(line) and any(c.isalpha() for c in line):
            return line
    for line in candidates:
        if _INSTITUTION.search(line) and line[:1].isupper() and not re.search(r"\d", line):
            return line
    return ""


def _names(organisation: str) -> list[str]:
    """The ways a question may name an organisation: its core name, and its first part."""
    match = _LEGAL_SUFFIX.match(organisation)
    core = (match.group("core") if match else organisation).strip(" ,.").lower()
    if not core:
        return []
    names = [core]
    first = core.split(".")[0]  # "amazon.com" is also "amazon"
    if len(first) >= 3 and first != core:
        names.append(first)
    return names


def _cued_period(lines: list[str]) -> Period | None:
    for line in lines:
        for cue in _DATE_CUE.finditer(line):
            found = periods_in(line[cue.start() : cue.end() + 40])
            dated = [p for p in found if p.day or p.month or p.quarter]
            if dated:
                return dated[0]
    return None
