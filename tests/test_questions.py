"""Evaluation questions in both formats of ../shared/data, and the manual-qa scoring rules."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from evaluation.questions import (
    corpus_name,
    dataset_docs,
    load_questions,
    phrase_found,
    says_not_answered,
)
from pipeline.errors import ConfigurationError
from programs.agent import NOT_CLEARLY_SAID, NOT_VERIFIED


def test_must_have_phrases_follow_the_manual_qa_rules():
    assert phrase_found("17 hours", "flew about 17\nhours in 90 days")  # whitespace collapsed
    assert phrase_found("Class 3", "a CLASS 3 medical")  # case folded
    assert not phrase_found("17", "in 2017"), "a phrase ending in a digit is not glued to another digit"
    assert phrase_found("TREE(S)", "1. OBJECT - TREE(S)")
    assert phrase_found("it's \u201chappy\u201d", 'it\u2019s "happy"')  # curly quotes folded to ASCII
    assert phrase_found("C4-C8", "injury (C4\u2013C8)")  # dashes folded


def test_a_refusal_is_read_from_the_answer_not_from_the_documents_it_quotes():
    assert says_not_answered("The documents do not say.")
    assert says_not_answered("The passages do not specify the headset model.")
    assert not says_not_answered("Proposals are due on 15 April [1].")
    assert says_not_answered("The financial statements do not provide any information about bonuses.")
    assert says_not_answered("The total cost of the pilot was not provided in the given passages.")
    assert says_not_answered("I could not find which version added it.")
    # The agent's own leads over the closest evidence, when no draft passed, are no answer either.
    assert says_not_answered(NOT_VERIFIED) and says_not_answered(NOT_CLEARLY_SAID)
    assert says_not_answered("We cannot confirm which release added it.")
    # What a program or a statement does not do is an answer, whichever way it is worded.
    assert not says_not_answered("pg_dump does not include the roles.")
    assert not says_not_answered("PostgreSQL does not provide the software to detect a failed primary.")
    assert not says_not_answered("The table does not include a primary key; the statement does not list it.")
    assert says_not_answered("The exact release is not specified [2].")
    assert says_not_answered("This information is not available in the provided passages.")
    # An adverb between "not" and the verb keeps a refusal one (the plain call's words, manual-qa).
    assert says_not_answered("The VR headset model is not explicitly mentioned in the provided passages.")
    assert says_not_answered("The default is not specifically stated.")
    assert says_not_answered("The hold time is not directly given in the report.")
    assert not says_not_answered("If the timeout is not explicitly set, the default of 0 applies [3].")
    assert not says_not_answered("If the port is not specified, 5432 is used [1].")
    assert not says_not_answered(
        "The index is not used because LIKE needs the C collation, which is not available in the "
        "current locale (en_US.UTF-8)."
    ), "what the documents say is not available is an answer"
    assert not says_not_answered("bash prints 'command not found' when the package is not installed.")
    quoted = (
        "The probable cause was misjudged clearance [1].\n"
        "“The wreckage did not reveal any malfunction; no information was given.” [1]"
    )
    assert not says_not_answered(quoted), "a 'no information' inside the quoted document is not a refusal"


def test_both_question_formats_load_with_their_gold_documents(tmp_path):
    manual = tmp_path / "manual-qa"
    manual.mkdir()
    (tmp_path / "pdf-samples").mkdir()
    (manual / "README.md").write_text("Questions over the PDFs in `../pdf-samples/`.\n")
    with open(manual / "qna_dev.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["id", "question", "type", "source_file", "pages", "gold_answer", "must_have", "answerable"]
        )
        writer.writerow([1, "Who?", "multi_part", "a.pdf;b.pdf", "", "A and B", "Alpha|Beta", "yes"])
        writer.writerow([2, "Which model?", "unanswerable", "a.pdf", "", "Not stated.", "", "no"])
    both, unanswerable = load_questions(manual / "qna_dev.csv")
    assert both.gold_docs == ("a.pdf", "b.pdf") and both.must_have == ("Alpha", "Beta") and both.answerable
    assert both.gold_found(["/x/a.pdf", "/y/b.pdf"]) and not both.gold_found(["/x/a.pdf"])
    assert not unanswerable.answerable and unanswerable.must_have == ()
    assert (
        dataset_docs(manual) == tmp_path / "pdf-samples"
        and corpus_name(tmp_path / "pdf-samples") == "pdf-samples"
    )
    assert corpus_name(tmp_path / "sec10q" / "docs") == "sec10q"
    with pytest.raises(ConfigurationError, match="not a folder of documents"):
        dataset_docs(tmp_path / "nowhere")


def test_a_question_file_without_its_columns_is_refused(tmp_path):
    bad = tmp_path / "q.csv"
    bad.write_text("question,answer\nx,y\n")
    with pytest.raises(ConfigurationError, match="lacks the column"):
        load_questions(Path(bad))
