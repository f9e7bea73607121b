"""``reporting-periods``: rules for tables of figures set out by reporting period.

A periodic report (a quarterly filing, an annual performance report) prints each figure in a
row under a column per period ("Three Months Ended July 1, 2023 | ... June 25, 2022"). A small
model reading such rows takes the figure of the wrong period or the wrong row, and cannot
divide two cells. This pack, built from the modules that each handle one such failure, checks
each sentence against the rows it cites and adds the rows a question names:

- a figure the sentence dates to a month the cited row states only under another month's
  column is misdated (:mod:`.dated_figures`): the sentence goes;
- a figure from an earlier year's column than the one the sentence (or the question) names is
  moved to the named year's cell of the same row when the clause names the row, else the
  sentence goes (:mod:`.columns`); the figure of a row the question names is moved the
  same way;
- a rise written of a figure the cited row prints as a decrease ("Change: (3)%") goes
  (:func:`pipeline.figures.rise_of_a_decrease`);
- a figure written beside another row's label goes (:mod:`.row_labels`);
- quoted under the answer: the row the question names by its label (:mod:`.named_rows`),
  the same rows of the context's other periods for a question that names none
  (:mod:`.same_rows`), and a share the question asks for divided from two cells, its
  inputs shown (:mod:`.ratios`);
- when the evidence holds a row the question names, "the documents do not say" is no answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.answering.answer_rules import RULE_PACKS, QuotedRows, SentenceVerdict
from pipeline.answering.quotes import QuoteCandidate
from pipeline.answering.rule_packs.reporting_periods.columns import (
    figures_for_named_rows,
    figures_from_earlier_columns,
    with_columns_fixed,
)
from pipeline.answering.rule_packs.reporting_periods.dated_figures import misdated_figures
from pipeline.answering.rule_packs.reporting_periods.named_rows import (
    row_the_question_names,
    rows_the_question_names,
)
from pipeline.answering.rule_packs.reporting_periods.ratios import derived_ratio, printed_shares
from pipeline.answering.rule_packs.reporting_periods.row_labels import figures_from_other_rows
from pipeline.answering.rule_packs.reporting_periods.same_rows import same_rows_elsewhere
from pipeline.figures import rise_of_a_decrease


class ReportingPeriods:
    """The pack (see the module docstring)."""

    def judge(self, sentence: str, question: str, cited_units: Sequence[QuoteCandidate]) -> SentenceVerdict:
        if misdated := misdated_figures(sentence, cited_units):
            return SentenceVerdict(sentence, "column", tuple(misdated))
        fixes = figures_from_earlier_columns(sentence, question, cited_units)
        described = tuple(fix.describe() for fix in fixes)
        if any(not fix.cell for fix in fixes):
            return SentenceVerdict(sentence, "column", described, described)
        placed = with_columns_fixed(sentence, fixes)
        if moved := figures_for_named_rows(placed, question, cited_units):
            placed = with_columns_fixed(placed, moved)
            described += tuple(fix.describe() for fix in moved)
        stated = "\n".join(f"{u.table_header}\n{u.text}" for u in cited_units)
        if turned := rise_of_a_decrease(placed, stated):
            return SentenceVerdict(placed, "direction", tuple(turned), described)
        if misplaced := figures_from_other_rows(placed, question, cited_units):
            return SentenceVerdict(placed, "row", tuple(misplaced), described)
        return SentenceVerdict(placed, fixes=described)

    def quote_rows(
        self, question: str, quotes: list[QuoteCandidate], units: Sequence[QuoteCandidate]
    ) -> QuotedRows:
        named = row_the_question_names(question, quotes, units)
        rows = _with_units(quotes, [named] if named else [])
        rows = same_rows_elsewhere(question, rows, units)
        ratio = derived_ratio(question, units)
        shares = printed_shares(question, units) + ([ratio.part, ratio.whole] if ratio else [])
        rows = _with_units(rows, shares)
        named_texts = {unit.text for unit in rows_the_question_names(question, units)}
        leads = bool(ratio) or any(q.text in named_texts for q in rows)
        added = [q for q in rows if all(q.text != old.text for old in quotes)]
        return QuotedRows(rows, ratio.line() if ratio else "", leads, added)

    def holds_what_is_asked(self, question: str, units: Sequence[QuoteCandidate]) -> bool:
        return bool(rows_the_question_names(question, units))


def _with_units(quotes: list[QuoteCandidate], added: Sequence[QuoteCandidate]) -> list[QuoteCandidate]:
    """``quotes`` and those of ``added`` whose text none of them has, in reading order."""
    new = [unit for unit in dict.fromkeys(added) if all(unit.text != q.text for q in quotes)]
    return sorted([*quotes, *new], key=lambda q: q.position) if new else quotes


RULE_PACKS.register("reporting-periods")(ReportingPeriods())
