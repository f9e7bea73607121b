"""The audit's quieter cases: a short dated line compared only under its exact subject, a short
sentence that drifted inside a copied passage, a negation that lifts a sentence over the words
that call for its heading, and prose that names marks in quotes."""

from __future__ import annotations

from index_build.builder import ingest
from index_build.layout import live_version_id
from pipeline.answers import LOCAL_CALLER
from pipeline.audit.checks import comparable, pair_findings
from pipeline.audit.facts import fact_pairs, short_facts
from pipeline.audit.findings import Statement
from server.service import open_service
from server.settings import load_settings

CHANGES = "This release contains a variety of fixes from the previous minor release of the series."


def statement(key: str, doc: str, text: str, subject: str = "") -> Statement:
    source = f"/docs/{doc}.html"
    return Statement(key, doc, f"{doc}-{key}", "manual", text, "Manual", "", 0, source, "", subject)


async def test_a_release_date_changed_in_a_copy_is_a_contradiction_and_other_releases_are_not(
    tmp_path, embedder
):
    docs = tmp_path / "notes"
    docs.mkdir()
    pages = {
        "release-15-11.md": ("Release 15.11", "2025-02-13"),
        "release-15-11-mirror.md": ("Release 15.11", "2025-02-14"),
        "release-15-10.md": ("Release 15.10", "2024-11-21"),
        "release-15-9.md": ("Release 15.9", "2024-11-14"),
    }
    for name, (title, date) in pages.items():
        (docs / name).write_text(f"# {title}\n\nRelease date: {date}\n\n{CHANGES}\n")
    ingest(tmp_path / "index", [docs], embedder=embedder)
    settings = load_settings(
        index__dir=tmp_path / "index",
        stores__conversations_path=tmp_path / "conversations.sqlite3",
        stores__feedback_path=tmp_path / "feedback.sqlite3",
    )
    async with open_service(settings, embedder=embedder) as service:
        report = await service.audit(LOCAL_CALLER)
        unchanged = await service.audit(LOCAL_CALLER, since=live_version_id(settings.index.dir))
    assert not unchanged.findings, "nothing changed since the live version: no fact is audited again"
    [finding] = [f for f in report.findings if f.kind == "contradiction"]
    assert {s.text for s in finding.passages} == {"Release date: 2025-02-13", "Release date: 2025-02-14"}
    assert {s.title for s in finding.passages} == {"Release 15.11"}


def test_a_short_fact_is_what_evidence_leaves_out_and_a_list_of_values_is_no_contradiction():
    text = "Vienna, Austria. November 29, 1998.\n\nE.10.1.\n\nThis release contains a variety of fixes."
    assert short_facts(text, {"This release contains a variety of fixes."}) == [
        ("November 29, 1998.", "Vienna, Austria.")
    ], "a section number alone is no fact, and a unit is compared as a unit"
    listed = [
        statement("f0", "a", "Version 15.1", "Versions"),
        statement("f1", "a", "Version 15.2", "Versions"),
        statement("f2", "b", "Version 15.1", "Versions"),
    ]
    assert not fact_pairs(listed, [0, 1, 2]), "a document listing two values lists them"
    restated = [statement("f0", "a", "Version 15.1", "Last"), statement("f1", "b", "Version 15.2", "Last")]
    assert fact_pairs(restated, [0, 1]) == [(0, 1, 1.0)]


def test_a_short_sentence_drifted_inside_a_copied_passage_is_a_near_duplicate():
    around = "Reindexing rebuilds every index of the table from the data in its heap."
    after = "Indexes that have become bloated are rebuilt in the same way by the command."
    copied = [
        statement("a0", "a", around),
        statement("a1", "a", "For such usage patterns, periodic reindexing is recommended."),
        statement("a2", "a", after),
        statement("b0", "b", around),
        statement("b1", "b", "For such usage patterns, periodic vacuuming is recommended."),
        statement("b2", "b", after),
    ]
    [finding] = pair_findings(copied, [(1, 4, 0.97)])
    assert finding.kind == "near_duplicate" and "{+vacuuming+}" in finding.diff
    alone = [copied[1], copied[4]]
    assert not pair_findings(alone, [(0, 1, 0.97)]), "a short sentence alone may be a template"


def test_a_negation_that_drops_a_sentences_heading_is_still_a_contradiction():
    short = statement("u0", "a", "PostgreSQL is extensible because its operation is catalog-driven.", "How")
    negated = statement("u1", "b", "PostgreSQL is extensible because its operation is not catalog-driven.")
    [finding] = pair_findings([short, negated], [(0, 1, 0.99)])
    assert finding.kind == "contradiction" and "{+not+}" in finding.diff


def test_prose_that_names_marks_in_quotes_is_compared_and_code_is_not():
    named = "Pairs of hex digits, optionally separated consistently by one of ':', '-' or '.', are accepted."
    assert comparable(statement("u0", "a", named))
    assert not comparable(statement("u1", "a", "SELECT a->>'k', b::int[] FROM t WHERE c <> '{}';"))
    assert comparable(statement("u2", "a", "$_TD->{event} — The name of the event the trigger is fired for."))


def test_two_entries_defining_one_term_are_compared_however_far_their_vectors():
    import numpy as np

    from pipeline.audit.neighbours import same_term_pairs, same_wording_pairs

    texts = [
        "work_mem (integer) — Sets the memory for a sort. The default is four megabytes.",
        "work_mem (integer) — Sets the memory for a sort. The default is eight megabytes.",
        "maintenance_work_mem (integer) — Sets the memory for maintenance. The default is 64 megabytes.",
        "A sentence that defines nothing but mentions work_mem and megabytes.",
    ]
    vectors = np.eye(4, dtype=np.float32)  # as far apart as vectors go
    eligible = np.ones(4, dtype=bool)
    assert not same_wording_pairs(texts, vectors, eligible), "words, not digits, changed"
    assert same_term_pairs(texts, vectors, eligible) == [(0, 1, 0.0)]
    entries = [statement(f"u{n}", f"doc{n}", text) for n, text in enumerate(texts)]
    [finding] = pair_findings(entries, same_term_pairs(texts, vectors, eligible))
    assert finding.kind == "contradiction" and "four" in finding.why and "eight" in finding.why
    boilerplate = [f"CASCADE — Drop the objects that depend on object {n}." for n in range(25)]
    assert not same_term_pairs(boilerplate, np.eye(25, dtype=np.float32), np.ones(25, dtype=bool))
