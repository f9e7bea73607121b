"""Citations for an answer that cites nothing: each sentence to the passage that carries its words."""

from __future__ import annotations

from pipeline.answering.sentence_citations import cite_sentence_sources
from pipeline.answering.sentences import under_label_headings
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


def test_an_answer_laid_out_under_a_passage_label_loses_the_label_and_is_cited_to_the_passage_it_copies():
    """The small model wrote "[2] <label>: <the passage's words>", its prompt's layout: the label
    is no answer, the words under it are; they get the citation of the passage that carries them."""
    labels = [passage.split("\n")[0] for passage in EVIDENCE]
    for heading in (f"[1] {labels[1]}: ", f"[3]{labels[1]} —\n", f"{labels[1]}\n"):
        reply = f"{heading}log_min_duration_statement logs each completed statement's duration."
        unlabelled = under_label_headings(reply, labels, QUESTION)
        assert unlabelled == reply[len(heading) :], heading
        cited, _ = cite_sentence_sources(unlabelled, EVIDENCE, QUESTION)
        assert cited.endswith("duration [2].")
    two = f"{labels[0]}: stderr and csvlog.\n[2] {labels[1]}: Setting it to 500ms logs slower statements."
    assert under_label_headings(two, labels, QUESTION) == (
        "stderr and csvlog.\nSetting it to 500ms logs slower statements."
    )


def test_a_label_inside_a_sentence_or_over_words_that_miss_the_question_is_no_answer_to_unlabel():
    labels = [passage.split("\n")[0] for passage in EVIDENCE]
    inside = f"The setting is described under {labels[1]}."
    assert under_label_headings(inside, labels, QUESTION) is None
    echoed = f"[3] {labels[2]}\nCauses the duration of every completed"  # the prompt, copied
    assert under_label_headings(echoed, labels, "is there a tool that bans IPs after failed logins?") is None
    assert under_label_headings("Set log_min_duration_statement to 500ms.", labels, QUESTION) is None
    event = {"step": "cite_sentences", "added": [], "labels_removed": True}
    assert describe_step(event) == "cite_sentences: 0 sentence(s) cited, passage labels removed"
