"""A figure or a name is shown as the answer only where the documents give it in the role asked."""

from __future__ import annotations

from pipeline.answering.roles import figures_out_of_role, names_out_of_role
from pipeline.retrieval.context import ContextPiece, Passage, whole_passages
from pipeline.types import Chunk, EvidenceUnit, SearchHit
from tests.composing import compose_answer

REPORT = "OPM Annual Performance Report - Fiscal Year 2013"


def report(*texts: str, title: str = REPORT) -> list[Passage]:
    chunks = [
        Chunk(f"r-{n:04}", "r", "docs", "/docs/apr.pdf", title, ("FY 2013 Results",), (n, n), text, "h")
        for n, text in enumerate(texts, start=1)
    ]
    return whole_passages([SearchHit(c, 1.0 - i / 10) for i, c in enumerate(chunks)])


BENEFITS = (
    "During FY 2013, 0.36 percent of the over $76.5 billion in defined benefits OPM paid to retirees, "
    "survivors, representative payees and families constituted improper payments."
)
BUDGET = "What was OPM's total appropriated budget for fiscal year 2013?"


def test_a_figure_the_documents_state_in_another_role_is_not_the_answer():
    """A manual-qa tune answer (row 16, unanswerable): the benefits OPM paid, given as its budget."""
    composed = compose_answer(
        BUDGET,
        "OPM's total appropriated budget for fiscal year 2013 was $76.5 billion [1].",
        report(BENEFITS),
    )
    assert [(d.reason, d.detail) for d in composed.dropped] == [("role", ("$76.5",))]
    assert composed.kind != "answer" and composed.filled_a_gap


def test_the_same_figure_where_a_passage_gives_it_in_the_role_asked_stands():
    passages = report(
        BENEFITS, "OPM's total budget authority for FY 2013 was $76.5 billion, as appropriated."
    )
    claimed = "OPM's total appropriated budget for fiscal year 2013 was $76.5 billion [2]."
    composed = compose_answer(BUDGET, claimed, passages)
    assert composed.kind == "answer" and not composed.dropped
    # A sentence that gives the figure no role of the question's is not judged.
    assert not compose_answer(BUDGET, "It was $76.5 billion [1].", report(BENEFITS)).dropped
    # The document's title and the words of a date locate the figure; they do not say what it is.
    assert figures_out_of_role("Its FY 2013 total budget was $76.5 billion.", BUDGET, report(BENEFITS)) == {
        "76.5"
    }
    assert figures_out_of_role("Its FY 2013 budget was $76.5 billion.", BUDGET, report(BENEFITS)) == set(), (
        "one word of the question may be the user's synonym of the document's"
    )


def test_a_table_rows_figure_is_read_with_its_header_and_label():
    chunk = Chunk(
        "t-0000",
        "t",
        "docs",
        "/docs/aapl.pdf",
        "2023 Q3 AAPL",
        ("Net sales by category",),
        (9, 9),
        "| iPhone | $ 39,669 | $ 40,665 |",
        "h",
    )
    header = "(In millions) | Three Months Ended July 1, 2023 | June 25, 2022 |"
    row = EvidenceUnit("t-0000/000", "t-0000", "t", "row", chunk.text, 9, header)
    passages = [Passage(chunk, (ContextPiece(chunk, row.text, 1.0, 0, row),))]
    question = "How much revenue did Apple's iPhone bring in during the June quarter of 2023?"
    assert figures_out_of_role("iPhone brought in $39,669 million [1].", question, passages) == set()
    asked = "What were the Mac's net sales in the June quarter of 2023?"
    assert figures_out_of_role("The Mac's net sales were $39,669 million [1].", asked, passages) == set(), (
        "the words are read, not the sentence: with no passage naming the Mac, its name decides nothing"
    )
    elsewhere = "How much did the services segment earn in operating income?"
    misplaced = figures_out_of_role("The services segment earned $39,669 million [1].", elsewhere, passages)
    assert misplaced == {"39669"}


def test_a_figure_of_a_passage_that_never_names_the_subject_asked_about_is_not_its_figure():
    """A probe reply: the average cost of a retirement claim, given as the GEAR pilot's total cost
    (the passage says "cost", one of the question's words, but never names the pilot; others do)."""
    question = "What was the total cost of the GEAR pilot in FY 2013?"
    claims = "OPM processed retirement claims at an average per unit cost of $91.37 in FY 2013."
    pilot = "Five agencies took part in the GEAR pilot, which tested new ways to manage performance."
    claimed = "The total cost of the GEAR pilot in FY 2013 was $91.37 [1]."
    assert figures_out_of_role(claimed, question, report(claims, pilot)) == {"91.37"}
    # Where the pilot is named, the passage speaks of it: the same figure stands.
    named = "The GEAR pilot's total cost in FY 2013 was $91.37 per agency."
    assert figures_out_of_role(claimed, question, report(claims, pilot, named)) == set()
    # Named in no passage, the pilot tells none of them apart: the figure is read by its words alone.
    assert figures_out_of_role(claimed, question, report(claims)) == set()
    # A name the document's title holds ("OPM") locates every passage: it is no subject to tell apart.
    asked = "What was OPM's average per unit cost of processing retirement claims in FY 2013?"
    stated = "OPM's average per unit cost of processing retirement claims was $91.37 [1]."
    assert figures_out_of_role(stated, asked, report(claims, pilot)) == set()


def test_numbers_inside_names_are_no_quantities():
    passages = report("Intel's IDM 2.0 strategy rests on five factories.", "Detach events_2023_01 first.")
    question = "What was Intel's R&D expenditure, and which initiatives were prioritized?"
    assert figures_out_of_role("The IDM 2.0 strategy was prioritized [1].", question, passages) == set()
    assert figures_out_of_role("Run DETACH PARTITION events_2023_01 [2].", question, passages) == set()
    # A model's code is a name too: the probe's "Piper PA-22-150" is no figure of 150.
    airstrip = report(
        "The pilot, age 85, was attempting to land a Piper PA-22-150 at his private airstrip.",
        "Location: Tallahassee, FL",
    )
    why = "Why did the pilot choose his private airstrip rather than a public airport near Tallahassee?"
    said = "The pilot chose his private airstrip near Tallahassee to land a Piper PA-22-150 [1]."
    assert figures_out_of_role(said, why, airstrip) == set()


FORM = (
    "Aircraft Make: Piper Registration: N5921D Model/Series: PA-22-150 Time Since Last Inspection: "
    "7 Hours Engines: 1 Reciprocating Airframe Total Time: 3861 Hours at time of Engine Manufacturer: "
    "Lycoming accident ELT: Installed"
)


def test_a_form_fields_figure_is_what_its_label_says():
    """A line of form fields read across two columns holds every field's words ("Engine" beside
    the airframe's total time): a figure there is in the role its field's label gives it."""
    question = "How many hours had the PA-22's engine run since its last overhaul when it crashed?"
    claimed = "The PA-22's engine had run 3861 hours since its last overhaul when it crashed [1]."
    assert figures_out_of_role(claimed, question, report(FORM)) == {"3861"}
    composed = compose_answer(question, claimed, report(FORM))
    assert [d.reason for d in composed.dropped] == ["role"] and composed.filled_a_gap
    asked = "What was the airframe's total time when the PA-22 crashed?"
    stated = "The airframe's total time was 3861 hours when the PA-22 crashed [1]."
    assert figures_out_of_role(stated, asked, report(FORM)) == set()
    # The same words as prose, not fields, are read whole as before.
    prose = "The engine had 3861 hours on the airframe since the overhaul, when it crashed."
    assert figures_out_of_role(claimed, question, report(prose)) == set()


PROPELLER = "Which company manufactured the propeller of the Piper PA-22 in the Tallahassee accident?"


def test_a_name_the_documents_give_as_another_someone_is_not_the_answer():
    """The probe's first question: the report names the aircraft's maker and the engine's, not the
    propeller's; "Piper Aircraft", the aircraft's make, was shown as the propeller's maker."""
    passages = report(FORM, title="20071229X02007")
    composed = compose_answer(PROPELLER, "Piper Aircraft", passages)
    assert [(d.reason, d.detail) for d in composed.dropped] == [("role", ("Piper Aircraft",))]
    assert composed.kind != "answer" and composed.filled_a_gap
    written = "The propeller was manufactured by Piper Aircraft [1]."
    assert names_out_of_role(written, PROPELLER, passages) == ["Piper Aircraft"]
    # The field the name stands in says what it is: the engine's maker is in the role asked.
    engine = "Which company manufactured the engine of the Piper PA-22 in the Tallahassee accident?"
    assert names_out_of_role("Lycoming manufactured the engine [1].", engine, passages) == []
    # The question's own names (Piper, PA-22, Tallahassee) are not put forward as an answer: not judged.
    assert names_out_of_role("The Piper PA-22 crashed in Tallahassee [1].", PROPELLER, passages) == []


def test_a_name_stated_where_the_role_asked_is_stands():
    signed = report(
        "We met every goal we set ourselves this year.\nKatherine Archuleta\nDirector\nMarch 7, 2014",
        "Our plans for next year are set out in the strategic plan, which Congress reviews.",
    )
    question = "Who signed the Director's message in the annual performance report?"
    composed = compose_answer(question, "The message was signed by Katherine Archuleta [1].", signed)
    assert composed.kind == "answer" and not composed.dropped, "a signature's title stands under the name"
    # Named on a line with nothing of signing, directing or a message, the same name is not the signer.
    elsewhere = report("Katherine Archuleta opened the new retirement processing centre in Boyers.")
    assert names_out_of_role("The message was signed by Katherine Archuleta [1].", question, elsewhere) == [
        "Katherine Archuleta"
    ]
    # "Who is eligible" asks what makes someone so: the places and bodies an answer names are no answer.
    eligible = report("Participants are in-patients at the Queen Elizabeth National Spinal Injuries Unit.")
    said = "Eligible participants are in-patients at the Queen Elizabeth National Spinal Injuries Unit [1]."
    assert names_out_of_role(said, "Who is eligible to join the trial?", eligible) == []
