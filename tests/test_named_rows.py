"""The row the question names by its label (and group) is quoted when the model cited another."""

from __future__ import annotations

from pipeline.answering.extractive import DOCUMENTS_SAY, NOT_IN_DOCUMENTS, quoted_evidence
from pipeline.answering.quotes import quote_candidates
from pipeline.answering.rule_packs.reporting_periods.named_rows import (
    row_the_question_names,
    rows_the_question_names,
)
from pipeline.retrieval.context import Passage
from tests.composing import compose_answer
from tests.test_ratios import table_passages
from tests.test_same_rows import PACK, QUARTERS, shown

HEADER = "(In millions)\n| | Three Months Ended June 30, 2022 | Three Months Ended June 30, 2023 |"


def table(rows: list[tuple[str, str]]) -> list[Passage]:
    return table_passages("2023 Q2 AMZN", HEADER, rows, page=7)


def test_the_row_named_with_its_group_is_quoted_beside_the_one_the_model_cited():
    passages = table(
        [
            ("Operating income (loss):", "| International | (1,771) | (895) |"),
            ("Net sales:", "| International | 27,065 | 29,697 |"),
            ("Net sales:", "| North America | 74,430 | 82,546 |"),
        ]
    )
    answer = compose_answer(
        "How do Amazon's revenues from international markets relate to currency risks in Q2 2023?",
        "International operating loss was $895 million [1].",
        passages,
        rules=PACK,
    )
    assert "Net sales: International — Three Months Ended June 30, 2022: 27,065" in shown(answer)


def test_a_measure_many_rows_name_and_a_row_of_percentages_are_not_a_named_row():
    units = quote_candidates(
        table(
            [
                ("", "| Cost of revenue | 2,544 | 2,857 |"),
                ("", "| Deferred revenue | 131 | 462 |"),
                ("", "| Total net revenue | 7,192 | 8,288 |"),
                ("", "| Other revenue | 12 | 10 |"),
                ("", "| Data Center | 4,284 | 3,750 |"),
                ("", "| Percentage of total net revenue | 60 % | 45 % |"),
            ]
        )
    )
    quoted = [units[4]]
    assert row_the_question_names("How has data center revenue changed?", quoted, units) is None, (
        "'revenue' stands in four labels: it names a measure, not a row"
    )
    shares = quote_candidates(
        table(
            [
                ("", "| Gaming | 2,240 | 3,620 |"),
                ("", "| Data Center | 4,284 | 3,750 |"),
                ("", "| Percentage of data center sales | 60 % | 45 % |"),
            ]
        )
    )
    named = row_the_question_names("What percentage of sales came from data center?", shares[:1], shares)
    assert named == shares[1], "a row of percentages of the row above it is not what it names"


def test_only_the_first_quotes_document_and_figures_not_quoted_yet_count():
    units = quote_candidates(QUARTERS)
    sales_q3, income_q3, sales_q2 = units[0], units[1], units[2]
    named = row_the_question_names("What were AWS net sales?", [income_q3], units)
    assert named == sales_q3, "the first quote's document, not Q2's"
    assert row_the_question_names("What were AWS net sales?", [income_q3, sales_q3], units) is None
    assert sales_q2.source != sales_q3.source


def research_table() -> list[Passage]:
    return table(
        [
            ("", "| Cost of revenue | 2,544 | 2,857 |"),
            ("", "| Research and development | 4,109 | 4,362 |"),
            ("", "| Marketing, general and administrative | 1,300 | 1,412 |"),
        ]
    )


def test_an_acronym_of_the_question_names_a_row_by_its_initials():
    units = quote_candidates(research_table())
    asked = "What was the R&D expenditure in Q2 2023?"
    assert row_the_question_names(asked, units[:1], units) == units[1]
    assert rows_the_question_names(asked, units) == [units[1]]
    assert rows_the_question_names("What was the RD expenditure?", units) == [units[1]], "with or without '&'"
    assert rows_the_question_names("What was the CR in Q2 2023?", units) == [units[0]], "'of' is no initial"
    assert rows_the_question_names("What was the MGA in Q2 2023?", units) == [units[2]]
    assert rows_the_question_names("What was the R&D budget?", units[::2]) == [], "no row of those initials"


def test_the_model_saying_the_documents_do_not_say_what_a_row_states_is_not_the_answer():
    passages = research_table()
    asked = "What was the R&D expenditure in Q2 2023?"
    denied = compose_answer(asked, "The documents do not say.", passages, rules=PACK)
    assert denied.kind == "quotes" and not denied.text, "a failed draft: the agent tries again or quotes"
    assert [d.reason for d in denied.dropped] == ["says_nothing"]
    assert compose_answer(asked, "The documents do not say.", passages).kind == "not_in_documents", "no pack"
    unnamed = compose_answer(
        "Which VR headset does the study use?", "The documents do not say.", passages, rules=PACK
    )
    assert unnamed.kind == "not_in_documents" and unnamed.text.startswith(NOT_IN_DOCUMENTS)


def test_evidence_quoted_after_failed_drafts_is_led_by_what_the_documents_say_when_it_holds_a_named_row():
    passages = research_table()
    lead = "The documents do not say this clearly enough."
    quoted = quoted_evidence("How much went to R&D in Q2 2023, and on what?", passages, lead, PACK, limit=1)
    assert quoted.text.split("\n")[0] == DOCUMENTS_SAY
    assert "Research and development — Three Months Ended June 30, 2022: 4,109" in shown(quoted)
    unnamed = quoted_evidence("What did the company say about hiring plans?", passages, lead, PACK, limit=1)
    assert unnamed.text.split("\n")[0] == lead, "nothing the question names: the lead stands"
