"""Figures taken from the wrong table row: the sentence names one row and states another's figure.

A small model reads a table's rows and often writes a figure beside the wrong label: "NVIDIA
allocated $27 million to research and development [2]", where $27 million is the "Cost of
revenue" row of a stock-based compensation table and "Research and development" is the row
below it; "revenue attributed to its Personal Computing segment was $18,592 million", where
$18,592 million is "Productivity and Business Processes". The figure check passes such a
sentence (the cited passage states the figure), and the reader gets a wrong answer that looks
verified.

Code can tell these apart when the figure is stated only by table rows: the sentence then
names what the figure is, and a row's first cell (and the group it stands under, "Financing
activities:") names what the row's figures are. A sentence that names another row of the
cited tables and none of the rows that state its figure has put the figure in the wrong row.
A sentence that names no row is not judged ("Apple's revenue was $81,797 million" of a "Total
net sales" row: a synonym, not a rival row), nor is a figure any prose sentence states or a
row labelled only "Total" (it sums the rows the sentence names).
Replayed on the kept sentences of a full SEC dev run (65 questions, embedded model): 3 of 95
sentences dropped, all three wrong (4 figures); in seven other dev runs (3 SEC, 4 manual-qa)
none.

Where the sentence names one other row of the same table, and the sentence or the question
names what the table is of (its caption or group: "Revenue"), the named row's cell under the
same column is put in the figure's place instead (:func:`.columns.figures_for_named_rows`):
replayed on the first drafts of a SEC dev run (26 November), one answer of 65 moved ($18,592
→ 13,666, "More Personal Computing"), none dropped that was not before.

What a label names, for the rules that pick rows by it (:mod:`.ratios`,
:mod:`.named_rows`): its words less "total" and "net", which only qualify, with
revenue and sales one word (a filing's "Total net sales" is its revenue); a row is named by a
question that has all of them, and its group's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.answering.quotes import QuoteCandidate, content_words, first_cell
from pipeline.citations import blank_markers
from pipeline.figures import figures, stated_figures, written_forms
from pipeline.types import header_groups

_ACRONYM = re.compile(r"\b[A-Z](?:[A-Z]|[&/][A-Z])+\b")
_NOT_INITIALS = frozenset({"and", "of", "the", "for", "in", "on", "to", "&"})


_QUALIFIERS = frozenset({"total", "net"})
_PERCENT_LABEL = re.compile(r"^\s*(?:%|percent(?:age)?\b|as\s+a\s+(?:%|percent))", re.IGNORECASE)
_SAME_WORD = {"revenu": "sale"}  # stems: a filing's "net sales" is its revenue


def is_table_row(unit: QuoteCandidate) -> bool:
    return unit.text.lstrip().startswith("|")


def row_label(unit: QuoteCandidate) -> str:
    """A row's first cell and the group it stands under ("Financing activities:"; a caption such as
    "(dollars in millions):" is not a group, and would name every row of its table)."""
    return " ".join([*header_groups(unit.table_header)[1], first_cell(unit)])


def figures_from_other_rows(sentence: str, question: str, units: Sequence[QuoteCandidate]) -> list[str]:
    """Each figure of ``sentence`` that only table rows among ``units`` state (the units of the
    passages it cites), none of which it names, while it names another row of ``units``: as
    ``"<figure as written> (<row that states it>)"``. Empty when nothing is misplaced."""
    text = blank_markers(sentence)
    misplaced = []
    for figure, stating, _ in misplaced_figures(sentence, question, units):
        written = written_forms(text, {figure}) or [figure]
        misplaced.append(f"{written[0]} ({sorted(row_label(u) for u in stating)[0]})")
    return misplaced


def misplaced_figures(
    sentence: str, question: str, units: Sequence[QuoteCandidate]
) -> list[tuple[str, list[QuoteCandidate], list[QuoteCandidate]]]:
    """Each figure :func:`figures_from_other_rows` finds misplaced, with the rows that state it
    and the rows of ``units`` that ``sentence`` names."""
    text = blank_markers(sentence)
    words = content_words(text)
    acronyms = _acronyms(text)
    labels = {u: row_label(u) for u in units if is_table_row(u)}
    named_rows = [u for u, label in labels.items() if _names(label, words, acronyms)]
    named = {labels[u] for u in named_rows}
    if not named:
        return []
    stated_by = [(u, figures(u.text)) for u in units]
    misplaced = []
    for figure in sorted(figures(text) - figures(question)):
        stating = [u for u, stated in stated_by if stated_figures({figure}, stated)]
        if not stating or not all(u in labels for u in stating):
            continue
        stating_labels = {labels[u] for u in stating}
        if stating_labels & named or any(_only_a_total(label) for label in stating_labels):
            continue
        misplaced.append((figure, stating, named_rows))
    return misplaced


def _only_a_total(label: str) -> bool:
    """Whether ``label`` says no more than "Total": such a row sums the rows the sentence may
    name ("goodwill went from $67,886 to $67,790", the "Total" of the segments' rows)."""
    return content_words(label) <= {"total"}


def _names(label: str, words: set[str], acronyms: set[str]) -> bool:
    """Whether a sentence of ``words`` and ``acronyms`` names the row ``label``: a word of it, or
    its initials ("R&D" for "Research and development")."""
    return bool(content_words(label) & words) or _initials(label) in acronyms


def _initials(label: str) -> str:
    """A label's initials in capitals ("RD" for "Research and development"); empty for one word."""
    initials = "".join(w[0] for w in re.findall(r"[A-Za-z]+", label) if w.lower() not in _NOT_INITIALS)
    return initials.upper() if len(initials) >= 2 else ""


def _acronyms(text: str) -> set[str]:
    """The acronyms of ``text``, letters only ("RD" for "R&D")."""
    return {re.sub(r"[^A-Z]", "", a) for a in _ACRONYM.findall(text)}


def _words(terms: set[str]) -> frozenset[str]:
    return frozenset(_SAME_WORD.get(t, t) for t in terms)


def asked_words(question: str) -> frozenset[str]:
    """The question's words as row labels are matched with them (revenue and sales as one), and
    its acronyms in capitals ("RD" for "R&D"), which name a label by its initials."""
    return _words(content_words(question)) | _acronyms(question)


def label_words(label: str) -> frozenset[str]:
    """The words of a row label that say what it is of ("total" and "net" only qualify)."""
    return _words(content_words(label)) - _QUALIFIERS


def label_named_by(unit: QuoteCandidate, asked: frozenset[str]) -> frozenset[str]:
    """The words of a row's label that say what it is of, when the question (its
    :func:`asked_words`) names them all, and its group's; empty otherwise."""
    label = first_cell(unit)
    key = label_words(label)
    group = label_words(" ".join(header_groups(unit.table_header)[1]))
    if not key or not (key <= asked or _initials(label) in asked) or not group <= asked:
        return frozenset()
    return key


def is_a_share_row(unit: QuoteCandidate) -> bool:
    """Whether ``unit`` is a table row of percentages of something ("% of net revenue",
    "Percentage of total net sales"): in a discussion's table, of the row above it."""
    return is_table_row(unit) and bool(_PERCENT_LABEL.match(first_cell(unit)))
