"""The table row the question names by its label, quoted when the answer's quotes lack it.

The quotes follow what the model cited and the words it used; asked about "revenues from
international markets" in a quarter, a small model cited the "International" row of operating
income, and the "International" row of net sales, which the question names with its group
("Net sales:", revenue and sales being one word), was not quoted. Here the row of the first
quote's document whose label, and group, the question names word for word is quoted as well:
the one naming most of its words, one row, whose figures are not all quoted already, and not
a row of percentages of the row above it ("Percentage of total net sales"). A label
word that stands in more than :data:`GENERIC_LABELS` of the evidence's row labels ("revenue":
"Total net revenue", "Cost of revenue", "Deferred revenue", …) names a measure, not a row, and
does not count: such a row displaced a segment's rows in every period of an answer. An
acronym of the question names a label by its initials ("R&D": "Research and development").

Such a row also tells that the documents state what the question asks
(:func:`rows_the_question_names`): a model's "the documents do not say" is then not taken as
the answer, and the evidence quoted when no draft passed is led by what the documents say.

Replayed on the first drafts of a full SEC dev run (5f78fd2's, 47 questions with figures):
answer-text figures 0.539 → 0.555, three answers each gaining one right row (AWS's net sales
in Q1 2023, Amazon's international net sales, Intel's total net revenue), 8 characters more
on average; manual-qa dev unchanged. Without the rule on measures: 0.548, the displaced
segment rows above; without the one on percentages, "Percentage of total net sales" (of an
expense line) was quoted for "What percentage of Apple's total revenue did Services contribute?".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pipeline.answering.quotes import QuoteCandidate
from pipeline.answering.rule_packs.reporting_periods.row_labels import (
    asked_words,
    first_cell,
    is_a_share_row,
    is_table_row,
    label_named_by,
    label_words,
)
from pipeline.figures import figures

GENERIC_LABELS = 3


def row_the_question_names(
    question: str, quoted: Sequence[QuoteCandidate], units: Sequence[QuoteCandidate]
) -> QuoteCandidate | None:
    """The row of ``units`` the question names (see the module docstring), or None."""
    if not quoted:
        return None
    quoted_figures = set().union(*(figures(q.text) for q in quoted))
    best: tuple[int, QuoteCandidate] | None = None
    for named, unit in _named_rows(question, units):
        stated = figures(unit.text)
        if unit.source != quoted[0].source or stated <= quoted_figures:
            continue
        if any(unit.text == q.text for q in quoted):
            continue
        if best is None or named > best[0]:
            best = (named, unit)
    return best[1] if best else None


def rows_the_question_names(question: str, units: Sequence[QuoteCandidate]) -> list[QuoteCandidate]:
    """Every row of ``units`` the question names by its label and group, measure words aside
    (see the module docstring), that states a figure: what it asks is in the documents."""
    return [unit for _, unit in _named_rows(question, units)]


def _named_rows(question: str, units: Sequence[QuoteCandidate]) -> list[tuple[int, QuoteCandidate]]:
    """The rows the question names, each with how many of its label's words it names."""
    asked = asked_words(question)
    labels = Counter(
        w for label in {first_cell(u) for u in units if is_table_row(u)} for w in label_words(label)
    )
    generic = {word for word, count in labels.items() if count > GENERIC_LABELS}
    named = []
    for unit in units:
        if not is_table_row(unit) or is_a_share_row(unit):
            continue
        key = label_named_by(unit, asked) - generic
        if key and figures(unit.text):
            named.append((len(key), unit))
    return named
