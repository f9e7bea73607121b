"""Figures taken from the wrong column: the sentence speaks of the latest year, the cell is a year older.

A periodic report sets each period beside the same period a year before ("Three Months Ended
September 30, 2022 | Three Months Ended September 30, 2023"). Asked about Q3 2023, a small
model often reads the older column: "online stores generated $53,489 million" (the 2022
cell; 2023's is $57,267 million). The figure check passes it, since the cited row states it.

When a sentence (or, if it names no year, the question) names the latest year of a table's
columns and not the year of the column its figure stands in, the figure is from the wrong
column. If the clause that writes it names the row (the first word of its label: "online
stores generated ..."), code places the right figure: the same row's cell under the column of
the same kind ("Three Months Ended") and the named year, copied from the document. Otherwise
the model took a wrong row as well ("R&D expenditure was $14,951 million", a "Purchases of
property and equipment" cell), or the row has no single such column, and the sentence is
dropped. A figure that a prose unit among the cited ones states, or that a row states under a
column of a year the sentence names, is left alone, and so is a sentence that compares ("rose
to $57,267 million from $53,489 million", "compared with the prior year"): there the older
figure is meant.

Replayed on the kept sentences of a full SEC dev run (65 questions, embedded model): one
answer's six figures were all the prior year's and were replaced (its answer-text figures 0
→ 6 of 7 gold), and four sentences of three answers were dropped, all wrong on reading; in
the other SEC dev runs replayed, one more such sentence (the same R&D answer). No manual-qa
dev answer changed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pipeline.answering.quotes import QuoteCandidate, content_words
from pipeline.answering.rule_packs.reporting_periods.row_labels import (
    first_cell,
    is_table_row,
    misplaced_figures,
)
from pipeline.citations import blank_markers
from pipeline.figures import as_written, figure_spans, figures, normalise_figure, stated_figures
from pipeline.text import analyze
from pipeline.types import header_groups, labelled_cells

_YEAR = re.compile(r"(?<![\d,.$])\b(?:19|20)\d\d\b(?![\d,.]\d)")
_DAY_OF_MONTH = re.compile(r"\b[A-Z][a-z]+\.?\s+\d{1,2},?\s*")
_THREE_DECIMALS = re.compile(r"\d+\.\d{3}")
_CLAUSE_BREAK = re.compile(r"[,;:()]|\.\s|\b(?:and|while|whereas|but|compared)\b")
_COMPARISON = re.compile(
    r"\b(?:compared|versus|vs\.?|prior|previous|preceding|last\s+year|year\s+(?:earlier|ago|before))\b"
    r"|\bfrom\s+\(?\$?\d",
    re.IGNORECASE,
)
_BILLION = re.compile(r"\s*(?:billion|bn)\b", re.IGNORECASE)
# A caption's words for the unit of its figures, which say nothing of what they are.
_UNIT_WORDS = content_words("(In millions, thousands, billions, except per share amounts) (Unaudited)")


@dataclass(frozen=True, slots=True)
class ColumnFix:
    """A figure of a sentence that stands in its row only under an earlier year's ``column``.

    ``figure`` is as compared, ``written`` as the sentence writes it; ``cell`` is the same row's
    cell under ``right_column`` (the named year's), or "" when the figure cannot be moved: no
    single such column, or the sentence does not name the row.
    """

    figure: str
    written: str
    row: str
    column: str
    cell: str = ""
    right_column: str = ""

    def describe(self) -> str:
        """For the trace: ``$53.489 → 57,267 (Online stores (1): … 2022 → … 2023)``."""
        if not self.cell:
            return f"{self.written} ({self.row}: {self.column})"
        return f"{self.written} → {self.cell} ({self.row}: {self.column} → {self.right_column})"


def figures_from_earlier_columns(
    sentence: str, question: str, units: Sequence[QuoteCandidate]
) -> list[ColumnFix]:
    """Each figure of ``sentence`` that the rows among ``units`` (those of the passages it cites)
    state only under a year older than the one the sentence, or else the question, names; see the
    module docstring. Empty when every figure stands where the sentence says."""
    text = blank_markers(sentence)
    named = set(_YEAR.findall(text)) or set(_YEAR.findall(question))
    if not named or _COMPARISON.search(text):
        return []  # "rose to $57,267 million from $53,489 million a year earlier": both are right
    fixes = []
    stated = figures(text)
    for figure in sorted(stated - figures(question)):
        rows = [u for u in units if stated_figures({figure}, figures(u.text))]
        if not rows or not all(is_table_row(u) for u in rows):
            continue  # prose states it, or nothing does (the figure check's business)
        found = _under_an_earlier_year(figure, rows, named)
        if found is None:
            continue
        unit, label, latest = found
        fix = _fix(sentence, figure, unit, label, latest)
        if fix.cell and stated_figures(figures(fix.cell), stated):
            continue  # the named year's cell is written too: the earlier one is its comparison
        named_row = _clause_names_the_row(text, figure, unit)
        fixes.append(fix if named_row else replace(fix, cell="", right_column=""))
    return fixes


def _under_an_earlier_year(
    figure: str, rows: Sequence[QuoteCandidate], named: set[str]
) -> tuple[QuoteCandidate, str, str] | None:
    """The first of ``rows``, the label of the column that states ``figure`` in it and the latest
    year of its columns, when in every one of ``rows`` the figure stands only under years the
    sentence does not name, older than a latest year it names; else None."""
    found = None
    for unit in rows:
        columns = _columns(unit)
        where = [(label, year) for label, year, cell in columns if stated_figures({figure}, figures(cell))]
        if not where or any(not year or year in named for _, year in where):
            return None
        latest = max(year for _, year, _ in columns if year)
        if latest not in named or where[0][1] >= latest:
            return None
        found = found or (unit, where[0][0], latest)
    return found


def figures_for_named_rows(sentence: str, question: str, units: Sequence[QuoteCandidate]) -> list[ColumnFix]:
    """The right cells for the figures ``sentence`` takes from a row it does not name
    (:func:`.row_labels.misplaced_figures`): the cell of the one row it names in the
    same table (same columns, same group), under the same column, when the sentence or the
    question names what the table is of (its group or caption: "revenue attributed to its
    Personal Computing segment was $18,592 million" of a "Revenue" table whose $18,592 is
    "Productivity and Business Processes" → 13,666, "More Personal Computing"). Empty unless
    every misplaced figure can be placed so; a table that says only "(In millions)" may be of
    anything ("$27 million to research and development" of a stock-based compensation table),
    and its figure is dropped, not moved."""
    asked = content_words(f"{blank_markers(sentence)}\n{question}")
    fixes = []
    for figure, stating, named in misplaced_figures(sentence, question, units):
        row = stating[0]
        # A "Total" row the sentence names is the whole the figure is a part of ("total revenue").
        targets = [
            u
            for u in named
            if u.source == row.source
            and u.table_header == row.table_header
            and content_words(first_cell(u)) - {"total"}
        ]
        if len(stating) != 1 or len(targets) != 1 or not _table_kind(row) & asked:
            return []
        cells = labelled_cells(row.text, row.table_header)
        column = next((label for label, cell in cells if stated_figures({figure}, figures(cell))), "")
        cell = dict(labelled_cells(targets[0].text, targets[0].table_header)).get(column, "")
        if not column or not figures(cell):
            return []
        start, end = figure_spans(sentence, {figure}).get(figure, (0, 0))
        moved = f"{first_cell(row)} → {first_cell(targets[0])}"
        fixes.append(
            ColumnFix(figure, as_written(sentence[start:end]) or figure, moved, column, _bare(cell), column)
        )
    return fixes


def _table_kind(row: QuoteCandidate) -> set[str]:
    """What a row's table is of, as stemmed words: its group, else its caption, less units."""
    captions, groups = header_groups(row.table_header)
    return content_words(groups[-1] if groups else " ".join(captions)) - _UNIT_WORDS


def _bare(cell: str) -> str:
    return cell.replace("$", "").strip()


def with_columns_fixed(sentence: str, fixes: Sequence[ColumnFix]) -> str:
    """``sentence`` with each fixed figure written as its right cell; ``fixes`` all have a cell."""
    for fix in fixes:
        spans = figure_spans(sentence, {fix.figure})
        if fix.figure in spans:
            start, end = spans[fix.figure]
            sentence = (
                sentence[:start]
                + _as_the_sentence_writes(fix, sentence[start:end], sentence[end:])
                + sentence[end:]
            )
    return sentence


def _columns(unit: QuoteCandidate) -> list[tuple[str, str, str]]:
    """A row's cells as ``(column label, year of the label or "", cell)``; empty when the cells do not
    line up with the labels."""
    return [
        (label, (_YEAR.findall(label) or [""])[-1], cell)
        for label, cell in labelled_cells(unit.text, unit.table_header)
    ]


def _clause_names_the_row(text: str, figure: str, row: QuoteCandidate) -> bool:
    """Whether the clause that writes ``figure`` names ``row`` by the first word of its label
    ("Total" aside): only then is the row right and the column alone wrong. A figure the model
    took from a wrong row as well ("R&D expenditure was $14,951 million" of "Purchases of
    property and equipment"; "issued $500 million of long-term debt" of "Repayment of debt") is
    not moved within that row."""
    span = figure_spans(text, {figure}).get(figure)
    head = next((w for w in analyze(first_cell(row)) if not w[0].isdigit() and w != "total"), None)
    if span is None or head is None:
        return False
    before = _CLAUSE_BREAK.split(text[: span[0]])[-1]
    after = _CLAUSE_BREAK.split(text[span[1] :])[0]
    return head in analyze(f"{before} {after}")


def _kind(label: str) -> str:
    """A column label without its date: "Three Months Ended September 30, 2022" → "three months ended"."""
    return " ".join(_YEAR.sub(" ", _DAY_OF_MONTH.sub(" ", label)).lower().split())


def _fix(sentence: str, figure: str, unit: QuoteCandidate, label: str, year: str) -> ColumnFix:
    """The fix of ``figure``, found under column ``label``: the cell of the same row under the
    one column of the same kind and ``year`` (none when there is not exactly one)."""
    start, end = figure_spans(sentence, {figure}).get(figure, (0, 0))
    written = as_written(sentence[start:end]) or figure
    same_kind = [
        (other, cell)
        for other, other_year, cell in _columns(unit)
        if other_year == year and _kind(other) == _kind(label)
    ]
    row = first_cell(unit)
    if len(same_kind) != 1 or not figures(same_kind[0][1]):
        return ColumnFix(figure, written, row, label)
    column, cell = same_kind[0]
    return ColumnFix(figure, written, row, label, _bare(cell), column)


def _as_the_sentence_writes(fix: ColumnFix, written: str, after: str) -> str:
    """The right cell in the written figure's form: with its "$", and in its thousandfold form where
    the sentence writes billions ("$53.489 billion" of a table in millions → "$57.267"). A
    thousandfold form before "million" was the model's misreading of a thousands separator, and
    gets the cell as the document writes it."""
    number = fix.cell
    digits = normalise_figure(number)
    thousandfold = _THREE_DECIMALS.fullmatch(normalise_figure(written).rstrip("."))
    if thousandfold and _BILLION.match(after) and digits.isdigit() and len(digits) > 3:
        number = f"{digits[:-3]}.{digits[-3:]}"
    return f"${number}" if written.lstrip("(").startswith("$") else number
