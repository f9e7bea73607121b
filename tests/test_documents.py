"""Document-aware questions: periods and versions, document metadata, and the resolved scope."""

from __future__ import annotations

from pathlib import Path

from index_build.document import Block, ParsedDocument
from index_build.metadata import describe
from pipeline.retrieval.documents import DocumentMeta, recency_of, resolve_scope
from pipeline.retrieval.periods import Period, periods_in, versions_in


def test_periods_in_the_forms_people_write_them():
    assert periods_in("Results for Q1 2023 and 2022 Q3") == [Period(2023, 1), Period(2022, 3)]
    assert periods_in("the third quarter of fiscal 2024") == [Period(2024, 3)]
    assert periods_in("For the quarterly period ended July 1, 2023") == [Period(2023, 0, 7, 1)]
    assert periods_in("as of Oct 1, 2022; released 2023-05-17") == [
        Period(2023, 0, 5, 17),
        Period(2022, 0, 10, 1),
    ]
    assert periods_in("March 2021 edition") == [Period(2021, 0, 3)]
    assert periods_in("notes due 2029", bare_years=True) == [Period(2029)]
    assert periods_in("$2,029 million") == [] and periods_in("$2,029 million", bare_years=True) == []


def test_a_quarter_covers_its_dates_and_a_year_covers_everything_in_it():
    assert Period(2023, 1).covers(Period(2023, 0, 2, 14))
    assert not Period(2023, 1).covers(Period(2023, 0, 4, 1))
    assert Period(2023).covers(Period(2023, 3))
    assert Period(2023, 3).end() > Period(2023, 0, 7, 1).end() > Period(2022, 4).end()


def test_versions_in_text_and_file_names():
    assert versions_in("What changed in version 4.2 of the manual?") == ["4.2"]
    assert versions_in("casa-v6.5.1-release-notes") == ["6.5.1"]
    assert versions_in("release 3 and rev. 2") == ["3", "2"]


FILINGS = [
    DocumentMeta(f"{ticker}-{period}", f"{period} {ticker}", org, names, period)
    for ticker, org, names in (
        ("AAPL", "Apple Inc.", ("apple", "aapl")),
        ("INTC", "Intel Corporation", ("intel", "intc")),
    )
    for period in ("2022 Q3", "2023 Q1", "2023 Q2", "2023 Q3")
]


def test_a_named_organisation_and_period_resolve_to_one_document():
    scope = resolve_scope("In Q1 2023, how did Intel's operating expenses relate to revenue?", FILINGS)
    assert scope.documents == ("INTC-2023 Q1",) and scope.names == ("intel",) and not scope.spread


def test_the_latest_resolves_to_the_newest_document_of_that_subject():
    scope = resolve_scope("What was Apple's effective tax rate in the latest 10-Q?", FILINGS)
    assert scope.recency == "latest" and scope.documents == ("AAPL-2023 Q3",)
    both = resolve_scope("Which is the most recent report of each company?", FILINGS)
    assert set(both.documents) == {"AAPL-2023 Q3", "INTC-2023 Q3"}


def test_over_time_keeps_every_period_newest_first_and_asks_for_each():
    for question in (
        "How has Apple's total net sales changed over time?",
        "How has Apple's revenue from iPhone sales fluctuated across quarters?",
        "Are there notable changes in Apple's cash flows as reported in these 10-Qs?",
        "How does Apple's R&D in the latest quarter compare to previous quarters?",
    ):
        scope = resolve_scope(question, FILINGS)
        assert scope.spread, question
        assert scope.documents == ("AAPL-2023 Q3", "AAPL-2023 Q2", "AAPL-2023 Q1", "AAPL-2022 Q3"), question


def test_a_question_naming_nothing_is_not_restricted():
    scope = resolve_scope("How do I reset the cryostat?", FILINGS)
    assert scope.documents is None and not scope.spread and scope.recency is None


def test_a_period_no_document_covers_keeps_every_candidate_and_says_so():
    scope = resolve_scope("What did Intel report for Q4 2019?", FILINGS)
    assert scope.documents == ("INTC-2023 Q3", "INTC-2023 Q2", "INTC-2023 Q1", "INTC-2022 Q3")
    assert scope.notes and "period" in scope.notes[0]


def test_versions_of_a_manual_resolve_the_same_way():
    manuals = [
        DocumentMeta("m1", "Telescope Manual", "", ("tm",), "", "4.1"),
        DocumentMeta("m2", "Telescope Manual", "", ("tm",), "", "4.2"),
        DocumentMeta("m3", "Telescope Manual", "", ("tm",), "", "3.9"),
    ]
    assert resolve_scope("What is new in version 4.2?", manuals).documents == ("m2",)
    assert resolve_scope("How do I focus in the current release?", manuals).documents == ("m2",)
    assert resolve_scope("How has focusing changed across versions?", manuals).spread
    assert recency_of("What is the focus procedure?") is None


def test_metadata_comes_from_the_file_name_and_the_opening_pages():
    document = ParsedDocument(
        "Quarterly report",
        (
            Block("text", "For the quarterly period ended July 1, 2023", 1),
            Block("heading", "Example Widgets, Inc.", 1, 1),
            Block("text", "(Exact name of registrant as specified in its charter)", 1),
            Block("text", "Common stock EXWD Nasdaq", 1),
        ),
        page_count=30,
    )
    named = describe(Path("/docs/2023 Q3 EXWD.pdf"), document, "d1")
    assert named.organisation == "Example Widgets, Inc." and named.names == ("example widgets", "exwd")
    assert named.period == "2023 Q3"
    undated_name = describe(Path("/docs/report.pdf"), document, "d2")
    assert undated_name.period == "2023-07-01" and undated_name.names == ("example widgets",)
    manual = ParsedDocument(
        "Cryostat Manual",
        (Block("text", "European Southern Observatory. Version 2.3, updated March 2021", 1),),
        4,
    )
    meta = describe(Path("/docs/cryostat.md"), manual, "d3")
    assert meta.version == "2.3" and meta.period == "2021-03"


def test_a_web_page_is_dated_by_its_front_matter_never_by_its_body_or_contents():
    """A manual's page: "Release 15.20" in its table of contents, "Short Version" over "17.2." and
    a date deep in its body once made it "the latest" page of the manual."""
    page = ParsedDocument(
        "Part III. Server Administration",
        (
            Block("heading", "Part III. Server Administration", 0, 1),
            Block("text", "This part covers topics that are of interest to a database administrator."),
            Block("text", "Table of Contents"),
            Block("entry", "17.1. Short Version"),
            Block("entry", "17.2. Requirements"),
            Block("entry", "E.1. Release 15.20"),
            Block("heading", "Backups", 0, 2),
            Block("text", "This section was last updated April 2021 for the new tools."),
        ),
        page_count=0,
    )
    meta = describe(Path("/docs/admin.html"), page, "p1")
    assert (meta.version, meta.period, meta.organisation) == ("", "", "")
    release = ParsedDocument(
        "E.18. Release 15.3", (Block("heading", "E.18. Release 15.3", 0, 1), Block("text", "Fixes.")), 0
    )
    assert describe(Path("/docs/release-15-3.html"), release, "p2").version == "15.3"
    readme = ParsedDocument(
        "Cryostat Manual",
        (
            Block("heading", "Cryostat Manual", 0, 1),
            Block("text", "Version 2.3, updated March 2021"),
            Block("heading", "Cooling down", 0, 2),
        ),
        0,
    )
    meta = describe(Path("/docs/cryostat.md"), readme, "p3")
    assert meta.version == "2.3" and meta.period == "2021-03"


def test_the_latest_thins_a_dated_series_and_keeps_the_undated_pages_beside_it():
    """A manual's pages are undated, its release notes dated: "last year's partitions" once kept
    the newest release note alone, and the page that answers was never searched."""
    pages = [DocumentMeta(f"page-{n}", f"Page {n}", "", (), "") for n in range(3)]
    notes = [DocumentMeta(f"release-15.{n}", f"Release 15.{n}", "", (), "", f"15.{n}") for n in (1, 2, 3)]
    scope = resolve_scope("how do I archive last year's monthly partitions?", [*pages, *notes])
    assert scope.recency == "latest"
    assert set(scope.documents) == {"release-15.3", "page-0", "page-1", "page-2"}
    undated = resolve_scope("how do I archive last year's monthly partitions?", pages)
    assert undated.documents is None
