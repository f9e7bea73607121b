"""What of the evidence may stand under an answer as a quote: a line that says something by itself."""

from __future__ import annotations

from pipeline.answering.quotable import says_enough
from pipeline.answering.quotes import answering_quotes, quote_candidates
from pipeline.retrieval.context import whole_passages
from pipeline.types import Chunk, SearchHit


def passage(text: str):
    chunk = Chunk("d1-0000", "d1", "docs", "/docs/d1.html", "Document 1", ("Section",), (1, 1), text, "h")
    return whole_passages([SearchHit(chunk, 1.0)])


def test_captions_headings_pointers_lead_ins_and_cut_pieces_are_not_quotable():
    lines = [
        "Table 4.8. List of tools to provide extra security measures",
        "Table F.20. pg_stat_statements Columns",
        "(In millions) (Unaudited)",
        "NOTE 1 - ACCOUNTING POLICIES",
        "55.3.1. SCRAM-SHA-256 Authentication",
        "Item 1. Legal Proceedings 51",
        "See Section 21.5 for details.",
        "Give a role a non-default setting of the maintenance_work_mem parameter:",
        "The workgroup focused on",
        "of the risks discussed below.",
    ]
    assert [line for line in lines if says_enough(line)] == []


def test_sentences_steps_findings_in_capitals_and_code_lines_are_quotable():
    lines = [
        "The server must be shut down cleanly before running pg_checksums.",
        "1. OBJECT - TREE(S)",
        "2. Copy the data directory to a safe place.",
        "$ pg_ctl restart",
        "DROP TABLE measurement_y2006m02;",
        "ALTER ROLE worker_bee SET maintenance_work_mem = 100000;",
        "Table 4.8 lists the tools that ban an address after failed logins.",
        "See Section 6.3 and create a key for each user who logs in remotely to the host from outside.",
    ]
    assert [line for line in lines if not says_enough(line)] == []


def test_a_caption_sharing_the_questions_words_takes_no_quotes_slot_from_the_sentence_that_answers():
    evidence = passage(
        "Table 9.2. Enabling data checksums on an existing cluster\n"
        "The pg_checksums application can enable or disable data checksums on an offline cluster.\n"
        "The server must be shut down cleanly before running pg_checksums."
    )
    assert [u.text[:30] for u in quote_candidates(evidence)] == [
        "The pg_checksums application c",
        "The server must be shut down c",
    ]
    quotes = answering_quotes("Can we enable data checksums on an existing cluster?", "", evidence, limit=1)
    assert [q.text[:30] for q in quotes] == ["The pg_checksums application c"]
