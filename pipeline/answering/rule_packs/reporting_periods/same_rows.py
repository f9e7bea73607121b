"""The same table row (or note) in the other documents: a question over time sees every period's figures.

Periodic reports restate the same tables: each quarter's filing has its "Research and
development" row, its "AWS" row under "Net sales:". A question that names no period ("How
has R&D spending changed over the quarters?", "What trends in AWS revenue?") asks about all
of them, yet the quotes under an answer follow the one or two passages the model cited, so
the user sees one quarter's row. Here each quoted row brings the row with the same label
(and the same group: "Net sales: AWS" is not "Operating income: AWS") from each other
document of the context, while there is room. A question that names its period ("in Q1
2023") is answered from that period's document, and gets nothing added.

Replayed on the kept sentences of two SEC dev runs (embedded model), gold figures in the
answer text rose from 0.339 to 0.382 (65 questions) and from 0.407 to 0.456 (36), with at
most four rows added (the answers grew by about 110 characters on average); the manual-qa
dev answers (manuals and protocols, no periodic tables) were unchanged.

Their notes are restated too, sentence by sentence, with each period's figures ("During the
nine months ended July 1, 2023, the Company repurchased 365 million shares ..."): a quoted
sentence with a figure brings, from each other document, the sentence that opens with the same
words once the period's are left out, up to three. Replayed on the first drafts of a SEC dev
run (26 November, 65 questions): gold figures in the answer text 0.441 → 0.459 (0.497 → 0.524
over the 31 whose first draft passed), about 50 characters longer; manual-qa unchanged.
Sharing the four rows' places with the sentences instead gained nothing (0.441).
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence

from pipeline.answering.quotes import QuoteCandidate, content_words
from pipeline.answering.rule_packs.reporting_periods.row_labels import is_table_row, row_label
from pipeline.figures import figures
from pipeline.retrieval.periods import periods_in
from pipeline.text import analyze

ROWS_FROM_OTHER_DOCUMENTS = 4
STATEMENTS_FROM_OTHER_DOCUMENTS = 3
STATEMENT_WORDS = 6
# Words that name a period rather than what is stated of it: they differ between the filings.
_PERIOD_WORDS = frozenset(
    analyze(" ".join([*calendar.month_name[1:], *calendar.month_abbr[1:], "three six nine twelve"]))
)


def same_rows_elsewhere(
    question: str,
    quoted: Sequence[QuoteCandidate],
    units: Sequence[QuoteCandidate],
    limit: int = ROWS_FROM_OTHER_DOCUMENTS,
    statements: int = STATEMENTS_FROM_OTHER_DOCUMENTS,
) -> list[QuoteCandidate]:
    """``quoted`` and, when ``question`` names no period, up to ``limit`` rows of ``units`` (the
    context's) from other documents with a quoted row's label, and up to ``statements``
    sentences that open as a quoted sentence with a figure does; in reading order. A unit
    whose figures are all quoted already is not added."""
    if periods_in(question):
        return list(quoted)
    chosen = list(quoted)
    quoted_figures = set().union(*(figures(q.text) for q in chosen))
    candidates = [
        (unit, label, stated)
        for unit in units
        if (label := _label_words(unit)) and (stated := figures(unit.text))
    ]
    room = {True: limit, False: statements}  # by whether the unit is a table row
    for quote in quoted:
        label, row = _label_words(quote), is_table_row(quote)
        if not label:
            continue
        documents = {q.source for q in chosen if _label_words(q) == label}
        for unit, unit_label, stated in candidates:
            if not room[row]:
                break
            if unit_label == label and unit.source not in documents and not stated <= quoted_figures:
                chosen.append(unit)
                documents.add(unit.source)
                quoted_figures |= stated
                room[row] -= 1
    return sorted(chosen, key=lambda q: q.position)


def _label_words(unit: QuoteCandidate) -> frozenset[str] | tuple[str, ...]:
    """What makes two units the same statement in two periods' documents: a table row's label
    and group as stemmed words (footnote marks and "®" fall away); for a sentence with a
    figure, its first :data:`STATEMENT_WORDS` words, periods left out ("During the [nine]
    months ended [July 1, 2023], the Company repurchased [365] million shares ..."); empty
    for any other sentence."""
    if is_table_row(unit):
        return frozenset(content_words(row_label(unit)))
    if not figures(unit.text):
        return ()
    opening = [w for w in analyze(unit.text) if not w[0].isdigit() and w not in _PERIOD_WORDS]
    return tuple(opening[:STATEMENT_WORDS]) if len(opening) >= STATEMENT_WORDS else ()
