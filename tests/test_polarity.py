"""A "yes" is never shown above a quote that says no (issue 56: "no verified answer that
contradicts a quote it shows").

The cases are replies read by hand: the techdocs report question on the wraparound HINT, where
the unit matching the question best says nothing either way and the quote under the answer says
the opposite; a 10-Q's "There were no changes in ... internal control" under "Yes. The most
notable changes include ... internal control".
"""

from __future__ import annotations

from pipeline.answering.extractive import DOCUMENTS_SAY
from pipeline.answering.polarity import affirmed_words, denied_words, denying_quote
from pipeline.answering.quotes import QuoteCandidate
from pipeline.retrieval.context import whole_passages
from pipeline.types import Chunk, SearchHit
from tests.composing import compose_answer

WRAPAROUND = [
    "In earlier versions, it was sometimes necessary to stop the postmaster and VACUUM the database "
    "in a single-user mode.",
    "Contrary to what the hint states, it is not necessary or desirable to stop the postmaster or "
    "enter single user-mode in order to restore normal operation.",
    "Autovacuum workers run in the background and need no attention.",
]
ASKED = (
    "prod says the database is not accepting commands to avoid wraparound data loss and the hint "
    "says stop the postmaster and vacuum in single-user mode. is that what we should do?"
)


def passages(*texts: str):
    chunks = [
        Chunk(f"d{n}-0000", f"d{n}", "docs", f"/docs/d{n}.html", f"Page {n}", ("Section",), (1, 1), t, "h")
        for n, t in enumerate(texts, start=1)
    ]
    return whole_passages([SearchHit(c, 1.0 - i / 10) for i, c in enumerate(chunks)])


def unit(text: str) -> QuoteCandidate:
    return QuoteCandidate(1, "/docs/d1.html", text, "", 1, 1.0, 0)


def test_a_yes_under_which_a_quote_denies_what_it_affirms_gives_that_quote_first():
    yes = "Yes, the hint suggests stopping the server and running VACUUM in single-user mode."
    composed = compose_answer(ASKED, yes, passages(" ".join(WRAPAROUND)))
    assert composed.kind == "denied" and composed.text == DOCUMENTS_SAY and not composed.kept
    assert composed.quotes[0].text.startswith("Contrary to what the hint states")
    assert [d.reason for d in composed.dropped] == ["negation"]


def test_every_sentence_of_the_yes_goes_when_the_bare_yes_is_denied_by_what_follows_it():
    reply = "Yes. The most notable changes are in the internal control over financial reporting."
    denial = (
        "There were no changes in the Company's internal control over financial reporting during "
        "the first quarter of 2023."
    )
    composed = compose_answer(
        "Are there any significant changes in Apple's accounting policies or internal controls?",
        reply,
        passages(denial, "Note 1 describes the significant accounting policies."),
    )
    assert composed.kind == "denied" and len(composed.dropped) == 2
    assert composed.quotes[0].text == denial


def test_a_yes_that_the_quotes_confirm_stands():
    reply = "Yes, run pg_upgrade --check to perform only the checks while the old server is running [1]."
    composed = compose_answer(
        "can I find out whether pg_upgrade will work before the window, with the old server running?",
        reply,
        passages(
            "You can use pg_upgrade --check to perform only the checks, even if the old server is "
            "still running.",
            "pg_upgrade does not modify the old cluster when --check is given.",
        ),
    )
    assert composed.kind == "answer" and composed.kept.startswith("Yes, run pg_upgrade --check")


def test_a_negation_reaches_the_end_of_its_clause_only():
    assert denied_words("It is not necessary to stop the postmaster, but vacuum the database.") == {
        "necessari",
        "stop",
        "postmast",
    }
    assert denied_words("The report may never be admitted into evidence") >= {"admit", "evid"}
    assert denied_words("Checksums are enabled by default.") == set()


def test_words_the_answer_itself_denies_are_not_affirmed():
    affirmed = affirmed_words("Yes, the check runs without modifying the old cluster [1].")
    assert "check" in affirmed and not affirmed & {"modifi", "old", "cluster"}


def test_a_quote_denies_an_answer_only_with_two_of_its_words_and_only_a_yes():
    answer = "Yes, you can enable data checksums on an existing cluster with pg_checksums."
    assert denying_quote(answer, [unit("Checksums are not enabled by default.")]) is None  # one word
    denial = unit("Data checksums cannot be enabled on a cluster that is running.")
    assert denying_quote(answer, [denial]) == denial
    assert denying_quote(answer.replace("Yes, you", "You"), [denial]) is None  # not a yes
    agreeing = unit("pg_checksums does not enable checksums on a running cluster; stop it first.")
    said_too = "Yes, with pg_checksums, which does not enable checksums on a running cluster."
    assert denying_quote(said_too, [agreeing]) is None  # the answer denies those words itself
