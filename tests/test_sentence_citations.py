"""Citations for an answer that cites nothing: each sentence to the passage that carries its words."""

from __future__ import annotations

from pipeline.answering.sentence_citations import cite_sentence_sources
from pipeline.wording import describe_step

EVIDENCE = [
    "Server Configuration — Where To Log\nlog_destination (string) — PostgreSQL supports several methods "
    "for logging server messages, including stderr, csvlog, jsonlog, and syslog.",
    "Server Configuration — When To Log\nlog_min_duration_statement (integer) — Causes the duration of "
    "each completed statement to be logged if the statement ran for at least the specified amount of "
    "time. Setting this to zero prints all statement durations. -1 (the default) disables logging "
    "statement durations.",
    "Server Configuration — What To Log\nlog_duration (boolean) — Causes the duration of every completed "
    "statement to be logged. The default is off.",
]
QUESTION = "how do I get every query slower than half a second written to the server log?"


def test_each_sentence_of_an_answer_citing_nothing_gets_the_passage_that_carries_its_words():
    answer = (
        "Set log_min_duration_statement; the duration of each completed statement is then logged. "
        "Setting it to zero prints all statement durations."
    )
    cited, added = cite_sentence_sources(answer, EVIDENCE, QUESTION)
    assert cited == (
        "Set log_min_duration_statement; the duration of each completed statement is then logged [2]. "
        "Setting it to zero prints all statement durations [2]."
    )
    assert [a.passage for a in added] == [2, 2]


def test_a_sentence_in_the_models_own_words_stays_uncited():
    answer = "Use dos2unix to convert the file, or open it in an editor that handles line endings."
    assert cite_sentence_sources(answer, EVIDENCE, QUESTION) == (answer, [])


def test_of_two_passages_that_carry_a_sentence_equally_the_higher_ranked_is_cited():
    answer = "The duration of every completed statement is logged."
    cited, _ = cite_sentence_sources(answer, EVIDENCE[1:], QUESTION)
    assert cited == "The duration of every completed statement is logged [1]."


def test_an_answer_that_cites_a_passage_is_left_as_written():
    answer = "Set log_min_duration_statement [1]. Setting it to zero prints all statement durations."
    assert cite_sentence_sources(answer, EVIDENCE, QUESTION) == (answer, [])


def test_code_is_never_cited_inside_only_the_sentence_that_introduces_it():
    answer = (
        "Set log_min_duration_statement, the duration of each completed statement:\n"
        "```\nlog_min_duration_statement = 500ms\n```\n"
        "Run ```sudo pg_ctlcluster 15 main reload completed statement duration```"
    )
    cited, added = cite_sentence_sources(answer, EVIDENCE, QUESTION)
    assert cited.startswith(
        "Set log_min_duration_statement, the duration of each completed statement [2]:\n```\n"
    )
    assert cited.endswith(
        "```\nlog_min_duration_statement = 500ms\n```\n"
        "Run ```sudo pg_ctlcluster 15 main reload completed statement duration```"
    )
    assert [a.passage for a in added] == [2]
    event = {
        "step": "cite_sentences",
        "added": [{"sentence": a.sentence, "passage": a.passage} for a in added],
    }
    assert describe_step(event) == "cite_sentences: 1 sentence(s) cited"
