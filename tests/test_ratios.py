"""A share the question asks for is divided by code, from two cells of one table, inputs shown."""

from __future__ import annotations

from evaluation.benchmarks.dev_sets import Reply, unstated_in_answer
from pipeline.answering.extractive import quoted_evidence
from pipeline.answering.quotes import quote_candidates, readable_unit
from pipeline.answering.rule_packs.reporting_periods import ReportingPeriods
from pipeline.answering.rule_packs.reporting_periods.ratios import (
    derived_figures,
    derived_ratio,
    printed_shares,
)
from pipeline.answering.rule_packs.reporting_periods.row_labels import first_cell
from pipeline.retrieval.context import ContextPiece, Passage
from pipeline.types import Chunk, EvidenceUnit
from tests.composing import compose_answer

HEADER = (
    "(In millions)\n"
    "| | Three Months Ended July 1, 2023 | Three Months Ended June 25, 2022 |"
    " Nine Months Ended July 1, 2023 | Nine Months Ended June 25, 2022 |"
)
ROWS = [  # an income statement's rows, under their groups
    ("Net sales:", "| Products | 60,584 | 63,355 | 230,901 | 245,241 |"),
    ("Net sales:", "| Services | 21,213 | 19,604 | 62,886 | 58,941 |"),
    ("", "| Total net sales | 81,797 | 82,959 | 293,787 | 304,182 |"),
    ("Cost of sales:", "| Services | 6,248 | 5,589 | 18,370 | 16,411 |"),
    ("Operating expenses:", "| Research and development | 7,442 | 6,797 | 22,608 | 19,490 |"),
    ("Operating expenses:", "| Total operating expenses | 13,415 | 12,809 | 41,176 | 38,093 |"),
    ("", "| Other income/(expense), net | (265) | (10) | (329) | (97) |"),
]


def table_passages(title: str, header: str, rows: list[tuple[str, str]], page: int = 4) -> list[Passage]:
    """One passage of one table's ``(group, row)`` units, from the document ``title``."""
    doc = title.replace(" ", "-")
    chunk = Chunk(
        f"{doc}-0000", doc, "docs", f"/docs/{title}.pdf", title, ("Statements",), (page, page), "", "h"
    )
    units = [
        EvidenceUnit(f"{doc}-0000/{i:03}", chunk.chunk_id, doc, "row", row, page, header, group)
        for i, (group, row) in enumerate(rows)
    ]
    return [Passage(chunk, tuple(ContextPiece(chunk, u.text, 1.0, i, u) for i, u in enumerate(units)))]


PACK = [ReportingPeriods()]


def shown(composed) -> str:
    """The quotes under an answer, as people read them."""
    return "\n".join(readable_unit(q) for q in composed.quotes)


def income_statement(rows: list[tuple[str, str]] = ROWS) -> list[Passage]:
    return table_passages("2023 Q3 AAPL", HEADER, rows)


def test_a_share_of_the_total_is_divided_by_code_in_the_latest_years_column():
    answer = compose_answer(
        "What percentage of the company's total revenue did the Services segment contribute in Q3 2023?",
        "The Services segment contributed 18.37% of total revenue [1].",  # the model divided wrongly
        income_statement(),
        rules=PACK,
    )
    derivation = "Services / Total net sales, Three Months Ended July 1, 2023: 21,213 / 81,797 = 25.9 % [1]"
    assert answer.kind == "answer" and answer.kept == derivation, "the sales row, not cost of sales'"
    assert [d.reason for d in answer.dropped] == ["figure"]
    assert "Total net sales — Three Months Ended July 1, 2023: 81,797" in shown(answer), "both inputs quoted"


def test_two_quantities_compared_give_the_smaller_as_a_share_of_the_larger():
    units = quote_candidates(income_statement())
    ratio = derived_ratio("How did operating expenses compare to revenue in the quarter?", units)
    assert ratio is not None
    assert ratio.line() == (
        "Total operating expenses / Total net sales, Three Months Ended July 1, 2023: "
        "13,415 / 81,797 = 16.4 % [1]"
    )


def test_no_share_is_derived_unless_asked_for_and_of_two_named_plain_amounts():
    units = quote_candidates(income_statement())
    assert derived_ratio("What were total net sales and services sales in Q3 2023?", units) is None, (
        "not asked"
    )
    assert derived_ratio("What share of net sales came from the iPhone?", units) is None, "no iPhone row"
    only_percentages = [(g, r.replace(" |", " % |")) for g, r in ROWS]
    assert (
        derived_ratio(
            "What share of total net sales were services?",
            quote_candidates(income_statement(only_percentages)),
        )
        is None
    )
    assert derived_ratio("How does other income compare to total net sales?", units) is None, "(265): a loss"


def test_a_share_the_document_prints_is_quoted_with_the_row_above_it():
    header = "($ in millions)\n| | 2023 | 2022 | Change |"
    rows = [
        ("", "| Research and development expenses | $1,875 | $1,618 | 16 % |"),
        ("", "| % of net revenue | 26.1 % | 19.5 % |"),
        ("", "| Total operating expenses | $2,508 | $3,563 | (30)% |"),
        ("", "| % of net revenue | 34.9 % | 42.9 % |"),
    ]
    passages = table_passages("2023 Q1 NVDA", header, rows, page=30)
    answer = compose_answer(
        "How did operating expenses compare to revenue in Q1 2023?",
        "Operating expenses were $2,508 million [1].",
        passages,
        rules=PACK,
    )
    assert "% of net revenue | 34.9 % | 42.9 %" in shown(answer)
    shares = printed_shares("How did operating expenses compare to revenue?", quote_candidates(passages))
    assert [first_cell(u) for u in shares] == ["Total operating expenses", "% of net revenue"], (
        "not the share under research and development, which the question does not name"
    )
    assert printed_shares("What were operating expenses?", quote_candidates(passages)) == [], "no share asked"


def test_the_evidence_quoted_when_no_draft_passed_shows_the_share_too():
    closest = quoted_evidence(
        "What proportion of total net sales did Services make up?",
        income_statement(),
        "The documents say:",
        PACK,
    )
    assert closest.text.split("\n")[1].endswith("21,213 / 81,797 = 25.9 % [1]")


def test_a_derived_share_counts_as_stated_only_when_its_division_is_right():
    assert derived_figures("Services / Total net sales, Q3: 21,213 / $81,797 = 25.9 % [1]") == {"25.9"}
    assert derived_figures("Services / Total net sales, Q3: 21,213 / 81,797 = 30.0 % [1]") == set()
    assert derived_figures("Services were 25.9 % of net sales [1].") == set(), "no inputs shown"

    def reply(text: str) -> Reply:
        return Reply(text, [], ["21,213 81,797"], [], 1.0, None, 1, "answered", [])

    assert unstated_in_answer(reply("Services: 21,213 / 81,797 = 25.9 % [1]")) == set()
    assert unstated_in_answer(reply("Services: 21,213 / 81,797 = 26.9 % [1]")) == {"26.9"}
