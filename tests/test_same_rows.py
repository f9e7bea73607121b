"""A question over time is answered with the same table row from every period's document."""

from __future__ import annotations

from pipeline.answering.extractive import quoted_evidence
from pipeline.answering.quotes import quote_candidates, readable_unit
from pipeline.answering.rule_packs.reporting_periods import ReportingPeriods
from pipeline.answering.rule_packs.reporting_periods.same_rows import same_rows_elsewhere
from pipeline.retrieval.context import ContextPiece, Passage
from pipeline.types import Chunk, EvidenceUnit
from tests.composing import compose_answer

PACK = [ReportingPeriods()]  # the same rows come with the reporting-periods rule pack


def shown(composed) -> str:
    """The quotes under an answer, as people read them."""
    return "\n".join(readable_unit(q) for q in composed.quotes)


# Each filing's caption names its own quarter, and ends in ":" as a row's group does.
HEADER = (
    "Segment results for the quarter ended {end} (in millions):\n"
    "| | Three Months Ended {end} | Three Months Ended {before} |"
)


def segment_table(
    doc: str, end: str, before: str, sales: tuple[str, str], income: tuple[str, str]
) -> Passage:
    """One quarter's segment table: an "AWS" row under "Net sales:" and another under "Operating income:"."""
    rows = [
        ("Net sales:", f"| AWS | {sales[0]} | {sales[1]} |"),
        ("Operating income:", f"| AWS | {income[0]} | {income[1]} |"),
    ]
    chunk = Chunk(
        f"{doc}-0000", doc, "docs", f"/docs/{doc}.pdf", doc, ("Segment Information",), (9, 9), "", "h"
    )
    units = [
        EvidenceUnit(
            f"{doc}-0000/{i:03}",
            chunk.chunk_id,
            doc,
            "row",
            row,
            9,
            HEADER.format(end=end, before=before),
            group,
        )
        for i, (group, row) in enumerate(rows)
    ]
    return Passage(chunk, tuple(ContextPiece(chunk, u.text, 1.0, i, u) for i, u in enumerate(units)))


QUARTERS = [
    segment_table(
        "2023 Q3 AMZN", "September 30, 2023", "September 30, 2022", ("23,059", "20,538"), ("6,976", "5,403")
    ),
    segment_table("2023 Q2 AMZN", "June 30, 2023", "June 30, 2022", ("22,140", "19,739"), ("5,365", "5,715")),
    segment_table(
        "2023 Q1 AMZN", "March 31, 2023", "March 31, 2022", ("21,354", "18,441"), ("5,123", "6,518")
    ),
]


def test_a_question_over_time_quotes_the_same_row_of_each_periods_document():
    answer = compose_answer(
        "How has AWS revenue changed over the quarters?",
        "AWS net sales rose to $23,059 million [1].",
        QUARTERS,
        rules=PACK,
    )
    assert answer.kind == "answer" and answer.text == "AWS net sales rose to $23,059 million [1]."
    for figure in ("23,059", "22,140", "21,354"):
        assert "Net sales: AWS — Three Months Ended" in shown(answer) and figure in shown(answer), figure
    assert {q.n for q in answer.quotes} == {1, 2, 3}
    assert "Net sales: AWS — Three Months Ended June 30, 2023: 22,140" in shown(answer), (
        "the caption is not the group"
    )
    assert {q.n for q in compose_answer("How has AWS revenue changed?", answer.text, QUARTERS).quotes} == {
        1
    }, "without the pack, only the quotes that answer"
    unverified = quoted_evidence(
        "What trends does AWS net sales show?", QUARTERS, "I could not verify an answer.", PACK
    )
    assert {q.n for q in unverified.quotes} == {1, 2, 3}


def test_a_row_brings_the_rows_of_its_own_group_from_the_other_documents():
    units = quote_candidates(QUARTERS)
    sales_q3 = units[0]
    added = same_rows_elsewhere("How has AWS revenue changed?", [sales_q3], units)
    assert [u.text for u in added] == [
        "| AWS | 23,059 | 20,538 |",
        "| AWS | 22,140 | 19,739 |",
        "| AWS | 21,354 | 18,441 |",
    ]
    assert same_rows_elsewhere("How has AWS revenue changed?", [sales_q3], units, limit=1)[1:] == [units[2]]


def test_a_question_that_names_its_period_gets_that_periods_rows_only():
    answer = compose_answer(
        "What were AWS net sales in Q3 2023?", "AWS net sales were $23,059 million [1].", QUARTERS, rules=PACK
    )
    assert {q.n for q in answer.quotes} == {1}
    assert "22,140" not in shown(answer) and "21,354" not in shown(answer)


def statement_passage(doc: str, *sentences: str) -> Passage:
    """A filing's note in running text, one unit per sentence."""
    chunk = Chunk(
        f"{doc}-0001", doc, "docs", f"/docs/{doc}.pdf", doc, ("Share Repurchases",), (20, 20), "", "h"
    )
    units = [
        EvidenceUnit(f"{doc}-0001/{i:03}", chunk.chunk_id, doc, "sentence", text, 20)
        for i, text in enumerate(sentences)
    ]
    return Passage(chunk, tuple(ContextPiece(chunk, u.text, 1.0, i, u) for i, u in enumerate(units)))


def test_a_sentence_with_a_figure_brings_the_same_statement_of_the_other_periods():
    """Periodic reports restate their notes with each period's figures (the SEC dev filings:
    "During the nine months ended ..., the Company repurchased ... shares ..."); a question over
    time sees each period's, not a sentence that merely shares its subject."""
    notes = [
        statement_passage(
            "2023 Q3 AAPL",
            "During the nine months ended July 1, 2023, the Company repurchased 365 million shares of its "
            "common stock for $56.1 billion.",
        ),
        statement_passage(
            "2023 Q2 AAPL",
            "During the six months ended April 1, 2023, the Company repurchased 262 million shares of its "
            "common stock for $38.1 billion.",
            "The Company repurchased shares under its program, which has no expiry date and 12 tranches.",
        ),
        statement_passage(
            "2023 Q1 AAPL",
            "During the three months ended December 31, 2022, the Company repurchased 133 million shares of "
            "its common stock for $19.0 billion.",
        ),
    ]
    units = quote_candidates(notes)
    latest = units[0]
    added = same_rows_elsewhere("How much stock has Apple repurchased?", [latest], units)
    assert added == [latest, units[1], units[3]], "each period's statement, not another on repurchases"
    assert same_rows_elsewhere("How much stock did Apple repurchase in Q3 2023?", [latest], units) == [latest]
    one = same_rows_elsewhere("How much stock has Apple repurchased?", [latest], units, statements=1)
    assert one == [latest, units[1]]
