"""Small frozen dataclasses shared by every stage: chunks, scored candidates, search hits."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable passage, with everything a citation needs.

    ``pages`` is the first and last 1-based page the passage spans (``(0, 0)`` for formats
    without pages). ``heading_path`` runs from the outermost heading to the innermost.
    ``context`` is the optional LLM-written sentence or two situating the passage in its
    document (contextual enrichment); it is indexed and embedded with the text.
    """

    chunk_id: str
    doc_id: str
    collection: str
    source: str
    title: str
    heading_path: tuple[str, ...]
    pages: tuple[int, int]
    text: str
    content_hash: str
    context: str = ""

    def citation_label(self) -> str:
        """Where this chunk is, for people (see :func:`place_label`)."""
        return place_label(self.title or self.source, self.heading_path, self.pages)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A chunk in the final ranking, with the score that placed it and each branch's score."""

    chunk: Chunk
    score: float
    branch_scores: dict[str, float] = field(default_factory=dict)


HEADING_SEPARATOR = " > "


def passage_text(title: str, heading_path: tuple[str, ...], text: str, context: str = "") -> str:
    """A chunk as it is indexed: title, heading path, the optional situating context, body."""
    header = "\n".join(part for part in (title, HEADING_SEPARATOR.join(heading_path), context) if part)
    return f"{header}\n{text}" if header else text


# Bump when model_text() or unit_search_text() changes: stored embeddings of another version
# must not be reused.
MODEL_TEXT_VERSION = 3


def model_text(chunk: Chunk) -> str:
    """A chunk as a neural model reads it (embedder, cross-encoder): Markdown table syntax removed.

    Pipes and ``| --- |`` rows cost tokens in a 256-token window and carry no meaning: on the
    Apple income statement they lowered the query similarity from 0.59 to 0.53. Cells are
    separated by two spaces instead.
    """
    return passage_text(chunk.title, chunk.heading_path, _model_body(chunk.text), chunk.context)


def _model_body(text: str) -> str:
    lines = []
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("|"):
            if set(stripped) <= set("|-: "):
                continue
            stripped = _model_row_line(stripped)
        lines.append(stripped)
    return "\n".join(lines)


def _model_row_line(line: str) -> str:
    """A Markdown table line as :func:`model_text` writes it: cells two spaces apart."""
    return "  ".join(table_cells(line))


def table_cells(line: str) -> list[str]:
    """A Markdown table line's cells, stripped (empty ones kept, so positions line up)."""
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def labelled_cells(row: str, header: str) -> list[tuple[str, str]]:
    """A Markdown table row's cells after its label, each beside its column label (the header's
    last table line); empty when they do not line up (a header of two rows, a split row)."""
    label_line = next((ln for ln in reversed(header.split("\n")) if ln.lstrip().startswith("|")), "")
    labels = table_cells(label_line)[1:] if label_line else []
    values = [cell for line in row.split("\n") for cell in table_cells(line) if cell][1:]
    return list(zip(labels, values)) if labels and len(labels) == len(values) else []


def header_groups(header: str) -> tuple[list[str], list[str]]:
    """A quoted row's header lines (its table's caption and column labels, then its group) as
    ``(caption lines, group lines)``: the group ("Net sales:") stands after the column labels,
    the caption ("(dollars in millions):") before them. Without column labels, a line ending in
    ":" is a group."""
    lines = [line.strip() for line in header.split("\n") if line.strip()]
    last_labels = max((i for i, line in enumerate(lines) if line.startswith("|")), default=None)
    if last_labels is None:
        return [ln for ln in lines if not ln.endswith(":")], [ln for ln in lines if ln.endswith(":")]
    captions = [ln for ln in lines[:last_labels] if not ln.startswith("|")]
    return captions, lines[last_labels + 1 :]


Span = tuple[int, int]  # a character range, end excluded


def unit_spans(chunk: Chunk, units: Sequence[EvidenceUnit]) -> list[tuple[Span, ...]]:
    """Where each of ``chunk``'s ``units`` (in reading order) stands in ``model_text(chunk)``.

    A sentence is one range. A row is the ranges of its word cells (label, text cells), not
    of its figures, for the reason :func:`unit_search_text` gives; a row of figures only is
    its whole lines. A unit that cannot be found (its text was reflowed) has no ranges.
    The embedder pools a unit's vector from these ranges of its chunk's token states.
    """
    body = _model_body(chunk.text)
    text = passage_text(chunk.title, chunk.heading_path, body, chunk.context)
    cursor = len(text) - len(body)
    found: list[tuple[Span, ...]] = []
    for unit in units:
        lines = (
            [unit.text] if unit.kind == "sentence" else [_model_row_line(s) for s in unit.text.split("\n")]
        )
        starts = []
        for line in lines:
            at = text.find(line, cursor)
            if at < 0:
                break
            starts.append(at)
            cursor = at + len(line)
        if len(starts) < len(lines):
            found.append(())
        elif unit.kind == "sentence":
            found.append(((starts[0], starts[0] + len(lines[0])),))
        else:
            words = [
                span
                for at, raw in zip(starts, unit.text.split("\n"), strict=True)
                for span in _word_cells(raw, at)
            ]
            found.append(
                tuple(words) or tuple((at, at + len(line)) for at, line in zip(starts, lines, strict=True))
            )
    return found


def _word_cells(raw_line: str, at: int) -> list[Span]:
    """The ranges of a table line's non-figure cells, the line written by _model_row_line at ``at``."""
    spans = []
    for cell in table_cells(raw_line):
        if cell and not _FIGURE_CELL.match(cell):
            spans.append((at, at + len(cell)))
        at += len(cell) + 2
    return spans


@dataclass(frozen=True, slots=True)
class EvidenceUnit:
    """The smallest piece of a document an answer rests on: a sentence, or a table row.

    ``text`` is the document's own words exactly as they stand in the chunk's text (a row
    is its Markdown line), so a quoted figure is always the document's. A row also carries
    its table's ``table_header`` (caption and column labels, e.g. "Three Months Ended
    July 1, 2023", as one Markdown row) and the ``row_group`` label above it ("Net sales:"),
    without which "Products | 60,584" means nothing. ``page`` is the unit's own page.
    """

    unit_id: str
    chunk_id: str
    doc_id: str
    kind: Literal["sentence", "row"]
    text: str
    page: int = 0
    table_header: str = ""
    row_group: str = ""


def unit_search_text(unit: EvidenceUnit, heading_path: tuple[str, ...]) -> str:
    """A unit as BM25 and the embedder see it: its innermost heading, a row's group label, the text.

    A row is searched by its words only (heading, group, label and any text cells), not by
    its figures or column labels: these are alike in every row of a table, so they cannot
    tell its rows apart, and as BM25 terms they only lengthen the row. Measured on the SEC
    questions: with them, a row such as "Total revenue" lost to any sentence saying "revenue".
    """
    text = _words_of_row(unit.text) if unit.kind == "row" else unit.text
    parts = [heading_path[-1] if heading_path else "", unit.row_group, text]
    return "\n".join(_plain(part) for part in parts if part)


_FIGURE_CELL = re.compile(r"^[\s$(]*[-+]?\$?\s*\d[\d,.]*\s*[%)]*\s*\$?$|^[\s—–-]*$")


def _words_of_row(row: str) -> str:
    cells = [cell for line in row.split("\n") for cell in table_cells(line)]
    return " ".join(c for c in cells if not _FIGURE_CELL.match(c))


def _plain(text: str) -> str:
    """Markdown table syntax removed (pipes cost tokens and carry no meaning for a model)."""
    return " ".join(cell for cell in table_cells(text) if cell)


def place_label(title: str, heading_path: Sequence[str], pages: tuple[int, int]) -> str:
    """Where a passage is, for people: ``title — heading › subheading, p. 3`` (or ``pp. 3–4``).

    The one citation label of every front door, the CLI and the LLM's numbered evidence.
    """
    place = " › ".join(heading_path)
    label = title + (f" — {place}" if place else "")
    first, last = pages
    if first:
        label += f", p. {first}" if first == last else f", pp. {first}–{last}"
    return label
