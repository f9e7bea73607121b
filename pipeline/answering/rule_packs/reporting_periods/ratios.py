"""One quantity as a share of another, derived by code with its inputs shown.

Asked "What percentage of Apple's total revenue did the Services segment contribute?", a 1.5B
model divides badly or takes the wrong cell ("18.37 % ... $58,941 million": a nine-month cell
of the year before). The division is code's job. When the question asks how one quantity
stands to another (a percentage, proportion, share or part of it; one compared with, relative
to, against or measured up against the other), and the evidence has a row for each, both
named by the question, of one document under the same caption and column labels (so of one
period and one unit: the income statement's "Total net sales" and the discussion's "Total
operating expenses" table), code writes the smaller as a share of the larger, in the column
of the latest year, with the cells it divides::

    Services / Total net sales, Three Months Ended July 1, 2023: 21,213 / 81,797 = 25.9 % [2]

A row is named when every word of its label, and of the group it stands under ("Cost of
sales:"), is a word of the question, "total" and "net" aside, which only qualify; revenue and
sales are one word here (a filing's "Total net sales" is its revenue). The two rows must name
different things, and the cells must be plain amounts (no percentage, no parentheses). The
result is rounded to one decimal, as the filings print their own percentages. Where the
document prints the share itself (a "% of net revenue" row under "Total operating
expenses"), that row is quoted with the one above it (:func:`printed_shares`).

Replayed on the first drafts of a full SEC dev run (5f78fd2's, 65 questions, 47 with
figures): answer-text figures 0.487 → 0.503 with the division (three answers: Apple's
Services share, its operating expenses against net sales, NVIDIA's cost of revenue against
revenue) → 0.524 with the printed shares (NVIDIA's operating expenses at 34.9 % of revenue);
manual-qa dev unchanged (no such question).

:func:`derived_figures` reads such a line back: the figure after "=" is derived, not stated,
and counts as traced to the documents only when the division of the two cells before it gives
it, so a check of unstated figures can tell a derivation from an invented number.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.answering.quotes import QuoteCandidate
from pipeline.answering.rule_packs.reporting_periods.row_labels import (
    asked_words,
    first_cell,
    is_a_share_row,
    is_table_row,
    label_named_by,
    label_words,
)
from pipeline.citations import marker
from pipeline.figures import normalise_figure
from pipeline.types import labelled_cells

_ASKS_FOR_A_RATIO = re.compile(
    r"\b(?:percentage|percent|proportion|share|portion|fraction|part)\s+of\b"
    r"|\bhow\s+much\s+of\b|\brelative\s+to\b|\bcompared?\b|\bcompares\b|\bagainst\b|\bas\s+a\s+%",
    re.IGNORECASE,
)
_PERCENT_WORDS = frozenset({"percentag", "percent"})
_PLAIN_AMOUNT = re.compile(r"^\$?\s*\d[\d,]*(?:\.\d+)?$")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_DERIVATION = re.compile(
    r"\$?(?P<part>\d[\d,]*(?:\.\d+)?)\s*/\s*\$?(?P<whole>\d[\d,]*(?:\.\d+)?)\s*=\s*(?P<share>\d+(?:\.\d+)?)\s*%"
)


@dataclass(frozen=True, slots=True)
class Ratio:
    """``part``'s cell as a share of ``whole``'s, both under ``column``."""

    part: QuoteCandidate
    whole: QuoteCandidate
    column: str
    part_cell: str
    whole_cell: str

    @property
    def percent(self) -> float:
        return 100 * _amount(self.part_cell) / _amount(self.whole_cell)

    def line(self) -> str:
        """The derivation as the answer shows it, its inputs beside it and both rows cited."""
        citations = "".join(marker(n) for n in sorted({self.part.n, self.whole.n}))
        return (
            f"{first_cell(self.part)} / {first_cell(self.whole)}, {self.column}: "
            f"{self.part_cell} / {self.whole_cell} = {self.percent:.1f} % {citations}"
        )


def asks_for_a_ratio(question: str) -> bool:
    """Whether ``question`` asks how one quantity stands to another."""
    return bool(_ASKS_FOR_A_RATIO.search(question))


def derived_ratio(question: str, units: Sequence[QuoteCandidate]) -> Ratio | None:
    """The share the question asks for, from two rows among ``units`` that it names, of one
    document under the same caption and column labels (see the module docstring); None when it
    asks for none or no such pair is found. Of several
    pairs, the one whose labels name most of the question's words, then the first in reading
    order."""
    if not asks_for_a_ratio(question):
        return None
    asked = asked_words(question)
    named = [(u, key) for u in units if is_table_row(u) and (key := label_named_by(u, asked))]
    best: tuple[int, Ratio] | None = None
    for i, (first, first_key) in enumerate(named):
        for second, second_key in named[i + 1 :]:
            if first_key == second_key or _table(first) != _table(second):
                continue
            ratio = _ratio(first, second)
            covered = len(first_key | second_key)
            if ratio is not None and (best is None or covered > best[0]):
                best = (covered, ratio)
    return best[1] if best else None


def printed_shares(question: str, units: Sequence[QuoteCandidate]) -> list[QuoteCandidate]:
    """Shares the document prints itself, for a question that asks for one: a row of percentages
    of what the question names ("% of net revenue") right under a row it names ("Total operating
    expenses"), each with that row, in reading order. Management's discussion tables print one
    under each expense line; the document's figure needs no division."""
    if not asks_for_a_ratio(question):
        return []
    asked = asked_words(question)
    found: list[QuoteCandidate] = []
    for above, row in zip(units, units[1:]):
        if not (is_table_row(above) and is_a_share_row(row)):
            continue
        of_what = label_words(first_cell(row)) - _PERCENT_WORDS
        if of_what and of_what <= asked and _table(above) == _table(row) and label_named_by(above, asked):
            found += [unit for unit in (above, row) if unit not in found]
    return found


def derived_figures(text: str) -> set[str]:
    """The figures of ``text`` written as ``a / b = c %`` where a divided by b is c % (to the
    decimals written): derived by code from the two figures beside them, as compared."""
    derived = set()
    for found in _DERIVATION.finditer(text):
        share = found.group("share")
        decimals = len(share.partition(".")[2])
        whole = _amount(found.group("whole"))
        if whole and round(100 * _amount(found.group("part")) / whole, decimals) == float(share):
            derived.add(normalise_figure(share))
    return derived


def _table(unit: QuoteCandidate) -> tuple[str, str]:
    """A row's document and its header up to the column labels (its caption and columns; the
    group differs by row): rows alike in both are of one period and one unit."""
    lines = unit.table_header.split("\n")
    last_labels = max((i for i, line in enumerate(lines) if line.lstrip().startswith("|")), default=-1)
    return unit.source, "\n".join(lines[: last_labels + 1])


def _ratio(first: QuoteCandidate, second: QuoteCandidate) -> Ratio | None:
    """The smaller of the two rows' cells as a share of the larger, under the first column of the
    table's latest year where both are plain amounts."""
    first_cells = dict(labelled_cells(first.text, first.table_header))
    second_cells = dict(labelled_cells(second.text, second.table_header))
    columns = [c for c in first_cells if c in second_cells and "change" not in c.lower()]
    years = [int(y) for c in columns for y in _YEAR.findall(c)]
    if not years:
        return None
    for column in columns:
        if str(max(years)) not in _YEAR.findall(column):
            continue
        a, b = first_cells[column], second_cells[column]
        if not (_PLAIN_AMOUNT.match(a) and _PLAIN_AMOUNT.match(b)) or not (_amount(a) and _amount(b)):
            continue
        if _amount(a) <= _amount(b):
            return Ratio(first, second, column, a.replace(" ", ""), b.replace(" ", ""))
        return Ratio(second, first, column, b.replace(" ", ""), a.replace(" ", ""))
    return None


def _amount(cell: str) -> float:
    return float(normalise_figure(cell).replace(" ", "") or 0)
