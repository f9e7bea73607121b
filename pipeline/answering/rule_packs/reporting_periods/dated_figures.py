"""Figures dated to the wrong month: "5,159 million in October 2023", a January 29, 2023 cell.

A balance sheet sets the quarter's end beside the fiscal year's ("October 29, 2023 | January
29, 2023"); asked how a level changed over the quarters, a small model writes each figure with
a date and often pairs them wrongly: "from 5,159 million in October 2023 to 4,779 million in
January 2023" (the two cells swapped), "$2,500 in September 2023" (the June 30, 2023 cell;
September's is 3,000). Both the figure check and the column check (:mod:`.columns`, by
year; it leaves "from … to" comparisons alone) pass such a sentence.

Here each figure written with its own month and year right after it ("X in October 2023", "X
as of March 31, 2023") is looked up in the table rows among the units it cites: when every
cell stating it stands under a column dated to another month, while a column of the named month
and year exists in that row, the sentence has misdated it and is dropped (not mended: which of
its figures belongs to which date is the sentence's claim, and it is wrong). A figure a prose
unit states, a column labelled by a year alone (a maturity table's "2027"), and a date the row
has no column for are left alone.

Replayed as run on the drafts of two full SEC dev runs (5f78fd2's and 47951ac's, 65 questions
each): three sentences dropped, all wrong on reading (NVIDIA's and Microsoft's inventories
above; Amazon's "$840 million in June 2022", the quarter of June 30, 2023); on two manual-qa
dev runs' drafts, none.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence

from pipeline.answering.quotes import QuoteCandidate
from pipeline.answering.rule_packs.reporting_periods.row_labels import first_cell, is_table_row
from pipeline.citations import blank_markers
from pipeline.figures import figures, stated_figures
from pipeline.retrieval.periods import periods_in
from pipeline.types import labelled_cells

_MONTHS = "|".join(name for name in calendar.month_name if name)
# A figure, then its unit, then the date it is of: "$2,500 million in September 2023".
_DATED_FIGURE = re.compile(
    r"(\$?\(?\d[\d,]*(?:\.\d+)?\)?)\s*(?:million|billion|thousand)?\s+"
    rf"(?:in|as\s+of|at|on|for|by)\s+(?:the\s+end\s+of\s+)?((?:{_MONTHS})\.?(?:\s+\d{{1,2}},?)?\s+(?:19|20)\d\d)\b"
)


def misdated_figures(sentence: str, units: Sequence[QuoteCandidate]) -> list[str]:
    """Each figure of ``sentence`` dated to a month that the table rows among ``units`` (those
    of the passages it cites) give another figure for, as ``"<figure> in <date> (<row>: <its
    column>)"``; empty when every dated figure stands where the sentence says."""
    misdated = []
    for match in _DATED_FIGURE.finditer(blank_markers(sentence)):
        written, date = match.group(1), match.group(2)
        named = _month_year(date)
        for figure in figures(written):
            where = _misdated(figure, named, units)
            if where:
                misdated.append(f"{written} in {date} ({where})")
    return misdated


def _misdated(figure: str, named: tuple[int, int] | None, units: Sequence[QuoteCandidate]) -> str:
    """The row and column that state ``figure`` when all that state it are table cells of other
    months than ``named``, in rows that have a column of ``named``; else ""."""
    stating = [u for u in units if stated_figures({figure}, figures(u.text))]
    if named is None or not stating or not all(is_table_row(u) for u in stating):
        return ""
    where = ""
    for unit in stating:
        columns = [
            (label, _month_year(label), cell) for label, cell in labelled_cells(unit.text, unit.table_header)
        ]
        under = [(label, month) for label, month, cell in columns if stated_figures({figure}, figures(cell))]
        if not under or any(month is None or month == named for _, month in under):
            return ""
        if not any(month == named for _, month, _ in columns):
            return ""  # the row has no column of that date: nothing to tell it by
        where = where or f"{first_cell(unit)}: {under[0][0]}"
    return where


def _month_year(text: str) -> tuple[int, int] | None:
    """The year and month a date or column label names ("Three Months Ended June 30, 2023" →
    (2023, 6)); None when it names no month with a year."""
    months = [period for period in periods_in(text) if period.month]
    return (months[-1].year, months[-1].month) if months else None
