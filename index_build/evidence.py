"""Evidence units: the sentences and table rows of each chunk, made at ingest.

An answer rests on single facts: a sentence, or a row of a table. Retrieval finds chunks;
the answer needs the right row of the right table, with the column headers that say which
period each figure belongs to. So each chunk is cut into units:

- a paragraph into its list items ("1. ... 2. ...") and sentences; a sentence of fewer than
  three words is dropped, a list item never (a finding or criterion may be two words);
- an entry (a definition-list entry, term and description, or a code block:
  :mod:`index_build.docling_blocks`) is one unit, whole;
- a table into rows. The table is read whole (a long table is split over several chunks
  and only its first header row is repeated): the rows above its first data row are the
  header, and their cells are aligned to the value columns. A cell spanning two columns
  ("Three Months Ended") is spread over both, so each column gets a full label such as
  "Three Months Ended July 1, 2023". A one-cell row in the body ("Net sales:") labels the
  rows under it; a one-cell row that continues in the next row's label is kept with it.

A running header or footer is no evidence: a unit whose text, less a page number at either
end, stands on at least ``FURNITURE_MIN_PAGES`` pages and ``FURNITURE_SHARE`` of the pages the
document's units come from ("Apple Inc. | Q3 2023 Form 10-Q | 23" on 23 of 29 pages) is left
out. It matched questions by the company's name and "10-Q" and was quoted as the evidence that
came closest (SEC dev: an Apple question's three quotes were three page footers), and it took
context tokens. A row restated on a few pages of a long filing stays.

A unit's ``text`` is always a verbatim substring of its chunk's text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from index_build.chunking import Piece
from index_build.document import ParsedDocument
from pipeline.retrieval.ordering import is_list_item, split_sentences
from pipeline.types import Chunk, EvidenceUnit

_VALUE = re.compile(r"^[($]*\s*[-+]?\$?\s*\d[\d,]*(?:\.\d+)?\s*\)?\s*%?\)?\s*\$?$|^[—–-]+$")
_YEAR = re.compile(r"^\(?(?:19|20)\d\d\)?$")
_PERIOD_PHRASE = re.compile(r"\b(?:ended|ending|months|weeks|quarter|year|as of)\b", re.IGNORECASE)
_CAPTION = re.compile(
    r"^\(.*\)$|\bin\s+(?:millions|thousands|billions)\b|\bunaudited\b|^table\s+\d", re.IGNORECASE
)
_WORD = re.compile(r"[A-Za-z]{2,}")
MIN_SENTENCE_WORDS = 3
# Bump when the units this module makes, or how their vectors are made, or how PDFs are read
# into paragraphs, change: an index built by another version is rebuilt (2: unit vectors pooled
# from their chunk, see unit_spans; 3: paragraphs by the PDF's line spacing, inline numbered
# lists cut into items, no sentence end after an abbreviation or initial; 4: inline bullets;
# 5: running headers and footers left out; 6: definition entries and code blocks whole; 7: no
# sentence end at an ellipsis; 8: a table's words without its links' targets and padding; 9: a
# long code block cut between its lines, a table of contents left out; 10: a PDF's running
# footers and page numbers dropped where they end a page above its bottom edge; 11: an
# admonition's title, "Note", heads no section of HTML, and a paragraph longer than a chunk is
# cut between sentences, a definition's pieces each keeping its term).
EVIDENCE_VERSION = 11
FURNITURE_MIN_PAGES = 4
FURNITURE_SHARE = 0.15
_PAGE_NUMBER_AT_AN_END = re.compile(r"^(?:page\s+)?\d{1,4}\b\s*|\s*\b(?:page\s+)?\d{1,4}$", re.IGNORECASE)
_MAX_CAPTION_WORDS = 30


@dataclass(frozen=True, slots=True)
class TableRow:
    """A data row: its verbatim line(s), the group label above it, and its label cell."""

    text: str
    group: str
    label: str


@dataclass(frozen=True, slots=True)
class Table:
    """A table's header (caption and column labels, as Markdown) and its data rows by line."""

    header: str
    rows: dict[str, TableRow]


def cells(line: str) -> list[str]:
    """The cells of a Markdown table row."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def is_separator(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and set(stripped) <= set("|-: ") and "-" in stripped


def _is_value(cell: str) -> bool:
    return bool(_VALUE.match(cell)) and not _YEAR.match(cell)


def _is_data_row(row: list[str]) -> bool:
    return len(row) >= 2 and bool(_WORD.search(row[0])) and any(_is_value(c) for c in row[1:])


def analyse_table(markdown: str, caption: str = "") -> Table:
    """Split a Markdown table into its header and its data rows; see the module docstring.

    A table without figures (a settings table, a glossary) takes the rows above its
    ``| --- |`` separator as the header and every other row as data.
    """
    lines = [ln for ln in markdown.split("\n") if ln.strip()]
    body = [ln for ln in lines if not is_separator(ln)]
    numeric = [_is_data_row(cells(ln)) for ln in body]
    if any(numeric):
        first = numeric.index(True)
        while (
            first
            and len([c for c in cells(body[first - 1]) if c]) == 1
            and body[first - 1].rstrip(" |").endswith(":")
        ):
            first -= 1  # a group label ("Net sales:") just above the first data row opens the body
        header_lines, data_lines = body[:first], body[first:]
        is_data = numeric[first:]
    else:
        split = next((i for i, ln in enumerate(lines) if is_separator(ln)), 0)
        header_lines = [ln for ln in lines[:split]]
        data_lines = [ln for ln in lines[split:] if not is_separator(ln)]
        is_data = [len([c for c in cells(ln) if c]) >= 2 for ln in data_lines]
    widths = Counter(len(cells(ln)) - 1 for ln, data in zip(data_lines, is_data) if data)
    columns = widths.most_common(1)[0][0] if widths else 0
    header = _header(header_lines, columns, caption)

    rows: dict[str, TableRow] = {}
    group = ""
    pending: str | None = None  # a one-cell line whose label may continue in the next row
    for line, data in zip(data_lines, is_data):
        row = cells(line)
        if data:
            if pending is not None and row[0][:1].islower():
                text, label = f"{pending}\n{line}", f"{cells(pending)[0]} {row[0]}"
            else:
                text, label = line, row[0]
                if pending is not None:
                    group = cells(pending)[0]
            rows[line] = TableRow(text, group, label)
            pending = None
            if label.lower().startswith("total"):
                group = ""  # a total closes its group
        elif len([c for c in row if c]) == 1:
            if pending is not None:
                group = cells(pending)[0]
            pending = line
    return Table(header, rows)


def _header(lines: list[str], columns: int, caption: str) -> str:
    """Caption lines, then one Markdown row with a full label per value column."""
    captions = [caption] if caption else []
    labels = [""] * columns
    title = ""
    aligned = False
    leftovers: list[str] = []
    for line in lines:
        row = [c for c in cells(line) if c]
        if not row:
            continue
        if len(row) == 1 and (columns <= 1 or _CAPTION.search(row[0]) or not _PERIOD_PHRASE.search(row[0])):
            captions.append(row[0])
            continue
        if len(row) > 1 and _CAPTION.search(row[0]) and not _PERIOD_PHRASE.search(row[0]):
            captions.append(row[0])
            row = row[1:]
        elif len(row) == columns + 1 and columns:
            first, row = row[0], row[1:]
            if _PERIOD_PHRASE.search(first):
                row = [f"{first} {cell}" for cell in row]
            else:
                title = first
        if columns and len(row) <= columns and columns % len(row) == 0:
            span = columns // len(row)
            for j in range(columns):
                labels[j] = f"{labels[j]} {row[j // span]}".strip()
            aligned = True
        else:
            leftovers.append(line.strip())
    parts = captions + leftovers
    if aligned:
        parts.append("| " + " | ".join([title, *labels]) + " |")
    return "\n".join(parts)


def document_units(
    document: ParsedDocument, chunked: Sequence[tuple[Chunk, Sequence[Piece]]]
) -> list[EvidenceUnit]:
    """Every evidence unit of a document, in reading order; see the module docstring."""
    tables: dict[int, Table] = {}
    units: list[EvidenceUnit] = []
    for chunk, pieces in chunked:
        found: list[tuple[str, str, int, str, str]] = []  # kind, text, page, table header, row group
        for piece in pieces:
            if piece.kind == "table":
                key = piece.block if piece.block >= 0 else -1 - len(tables)
                if key not in tables:
                    source = document.blocks[piece.block].text if piece.block >= 0 else piece.text
                    tables[key] = analyse_table(source, _caption(document, piece.block))
                table = tables[key]
                for line in piece.text.split("\n"):
                    row = table.rows.get(line)
                    if row is not None:
                        # A label wrapped onto the line above stays with its row unless a split parted them.
                        text = row.text if row.text in piece.text else line
                        found.append(("row", text, piece.page, table.header, row.group))
            elif piece.kind == "entry":  # a definition or a code block: one unit, whole
                if _WORD.search(piece.text):
                    found.append(("sentence", piece.text, piece.page, "", ""))
            else:
                for sentence in split_sentences(piece.text):
                    long_enough = len(_WORD.findall(sentence)) >= MIN_SENTENCE_WORDS or is_list_item(sentence)
                    if long_enough and _WORD.search(sentence) and not sentence.startswith("|"):
                        found.append(("sentence", sentence, piece.page, "", ""))
        units.extend(
            EvidenceUnit(
                f"{chunk.chunk_id}/{i:03d}", chunk.chunk_id, chunk.doc_id, kind, text, page, header, group
            )  # type: ignore[arg-type]
            for i, (kind, text, page, header, group) in enumerate(found)
        )
    return without_page_furniture(units)


def without_page_furniture(units: list[EvidenceUnit]) -> list[EvidenceUnit]:
    """``units`` less the running headers and footers of their document; see the module docstring."""
    keys = [_furniture_key(unit.text) for unit in units]
    pages_of: dict[str, set[int]] = {}
    for key, unit in zip(keys, units, strict=True):
        pages_of.setdefault(key, set()).add(unit.page)
    document_pages = len({unit.page for unit in units})
    repeated = {
        key
        for key, pages in pages_of.items()
        if len(pages) >= max(FURNITURE_MIN_PAGES, FURNITURE_SHARE * document_pages)
    }
    return [unit for key, unit in zip(keys, units, strict=True) if key not in repeated]


def _furniture_key(text: str) -> str:
    """The unit's words less a page number at either end, spaces and table bars collapsed."""
    words = " ".join(text.replace("|", " ").split())
    return _PAGE_NUMBER_AT_AN_END.sub("", words).lower()


def _caption(document: ParsedDocument, block: int) -> str:
    """The short line just before a table that says what it holds or its units ("(In millions)")."""
    if block <= 0:
        return ""
    before = document.blocks[block - 1]
    text = before.text.strip()
    if before.kind == "text" and len(text.split()) <= _MAX_CAPTION_WORDS and _CAPTION.search(text):
        return text
    return ""
