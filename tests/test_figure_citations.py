"""Citations added for figures an answer takes from a passage it does not cite."""

from __future__ import annotations

from pipeline.answering.figure_citations import AddedCitation, cite_figure_sources
from pipeline.wording import describe_step, status_text

EVIDENCE = [
    "Amazon 10-Q (Q3 2023) — Results, p. 20\nInterest expense — Q3 2023: $806; Q3 2022: $1,673",
    "Amazon 10-Q (Q3 2023) — Liquidity, p. 24\nLong-term debt — Q3 2023: $58,014; Q4 2022: $67,150",
    "Apple 10-Q (Q3 2023) — Products, p. 16\niPhone net sales rose on iPhone 14 Pro models; Services: 21,213",
]


def test_the_passage_that_states_the_figure_is_cited_in_the_sentence_that_writes_it():
    answer = "Interest expense was $806 million [2]. Long-term debt was $58,014 million [2]."
    cited, added = cite_figure_sources(answer, EVIDENCE, {2})
    assert cited == "Interest expense was $806 million [2][1]. Long-term debt was $58,014 million [2]."
    assert added == [AddedCitation("$806", 1)]


def test_citations_after_the_full_stop_are_extended_and_a_sentence_without_any_gets_one():
    cited, _ = cite_figure_sources("Sales of the iPhone 14 Pro rose. [2] Debt fell.", EVIDENCE, {2})
    assert cited == "Sales of the iPhone 14 Pro rose. [2][3] Debt fell."
    cited, _ = cite_figure_sources("Debt was $58,014 [2]. Interest was $806 million.", EVIDENCE, {2})
    assert cited == "Debt was $58,014 [2]. Interest was $806 million [1]."
    cited, _ = cite_figure_sources("Interest was $806 million [2], so", EVIDENCE, {2})
    assert cited == "Interest was $806 million [2], so [1]", "no full stop: at the end"
    cited, _ = cite_figure_sources("- Interest: $806 [2]\n- Debt: $58,014 [2]", EVIDENCE, {2})
    assert cited == "- Interest: $806 [2][1]\n- Debt: $58,014 [2]", "a list item ends at its line"


def test_one_passage_that_states_several_figures_is_preferred_and_cited_once_per_sentence():
    evidence = [*EVIDENCE, "Amazon 10-Q (Q2 2023) — Results, p. 19\nInterest expense — Q2 2022: $1,673"]
    answer = "Interest expense fell from $1,673 to $806 million [2]."
    cited, added = cite_figure_sources(answer, evidence, {2})
    assert cited == "Interest expense fell from $1,673 to $806 million [2][1]."
    assert added == [AddedCitation("$1,673", 1), AddedCitation("$806", 1)]


def test_thousandfold_forms_are_traced_and_unstated_figures_left_for_the_check():
    answer = "Services were $21.213 billion, 25.93% of sales [1]."
    cited, added = cite_figure_sources(answer, EVIDENCE, {1})
    assert cited == "Services were $21.213 billion, 25.93% of sales [1][3]."
    assert added == [AddedCitation("$21.213", 3)], "25.93 is stated nowhere: still unstated"


def test_nothing_changes_when_the_cited_passages_state_every_figure_or_nothing_is_cited():
    answer = "Interest expense was $806 million [1]."
    assert cite_figure_sources(answer, EVIDENCE, {1}) == (answer, [])
    assert cite_figure_sources("Debt was $58,014 million.", EVIDENCE, set()) == (
        "Debt was $58,014 million.",
        [],
    ), "an answer citing nothing is checked against every passage"
    assert cite_figure_sources("The 10-Q says so [2].", EVIDENCE, {2}) == ("The 10-Q says so [2].", [])


def test_the_step_line_names_each_added_citation():
    event = {
        "step": "cite_figures",
        "added": [{"figure": "$806", "passage": 1}, {"figure": "14", "passage": 3}],
    }
    assert describe_step(event) == "cite_figures: $806 → [1], 14 → [3]"
    assert status_text("cite_figures") == status_text("supported"), "part of checking, for users"
