"""A figure the sentence dates to another month than the column that states it is dropped."""

from __future__ import annotations

from pipeline.answering.quotes import quote_candidates
from pipeline.answering.rule_packs.reporting_periods.dated_figures import misdated_figures
from pipeline.retrieval.context import Passage
from tests.composing import compose_answer
from tests.test_ratios import PACK, shown, table_passages

BALANCE = "(In millions)\n| | October 29, 2023 | January 29, 2023 |"


def balance_sheet() -> list[Passage]:
    return table_passages(
        "2023 Q3 NVDA", BALANCE, [("Current assets:", "| Inventories | 4,779 | 5,159 |")], page=3
    )


def test_figures_paired_with_the_wrong_quarter_ends_drop_the_sentence():
    answer = compose_answer(
        "How have NVIDIA's inventory levels changed?",
        "Inventories fell from 5,159 million in October 2023 to 4,779 million in January 2023 [1].",
        balance_sheet(),
        rules=PACK,
    )
    assert answer.kind == "quotes" and not answer.kept
    assert [d.reason for d in answer.dropped] == ["column"]
    assert answer.dropped[0].detail == (
        "5,159 in October 2023 (Inventories: January 29, 2023)",
        "4,779 in January 2023 (Inventories: October 29, 2023)",
    )
    assert "Current assets: Inventories — October 29, 2023: 4,779; January 29, 2023: 5,159" in shown(answer)


def test_figures_at_their_own_dates_stand():
    right = (
        "Inventories rose from 5,159 million as of January 29, 2023 to $4,779 million in October 2023 [1]."
    )
    answer = compose_answer("How have NVIDIA's inventory levels changed?", right, balance_sheet(), rules=PACK)
    assert answer.kind == "answer" and answer.kept == right, "the dates are right"


def test_what_cannot_be_told_is_left_alone():
    units = quote_candidates(balance_sheet())
    assert misdated_figures("Inventories were 4,779 million in July 2023 [1].", units) == [], (
        "no July column: nothing to tell it by"
    )
    assert misdated_figures("Inventories were 4,779 million in 2023 [1].", units) == [], "a year alone"
    assert misdated_figures("Inventories fell to 4,779 million [1].", units) == [], "no date"
    maturities = quote_candidates(
        table_passages("2023 Q3 AMZN", "| | 2026 | 2027 |", [("", "| Long-term debt | $5,015 | $10,399 |")])
    )
    assert misdated_figures("Debt was $10,399 million in September 2023 [1].", maturities) == [], (
        "columns labelled by a year alone"
    )
    prose = quote_candidates(
        [*balance_sheet(), *table_passages("2023 Q3 NVDA", "", [("", "Inventories were $5,159 million.")])]
    )
    assert misdated_figures("Inventories were 5,159 million in October 2023 [1].", prose) == [], (
        "a prose unit states it: the figure check's business"
    )
