"""The documentation audit: each kind of finding on a small real index, what code decides about
two statements, the admin scope and the version id it accepts, and a report that shows text."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils import DummyLM

from index_build.builder import ingest
from index_build.layout import live_version_id
from pipeline.answers import LOCAL_CALLER, AgentAnswer, AskResult, Caller
from pipeline.audit.checks import pair_findings
from pipeline.audit.findings import Finding, Statement
from pipeline.audit.links import broken_links
from pipeline.audit.report import report_html
from pipeline.audit.statements import compare
from pipeline.errors import ForbiddenError, InvalidRequestError, NotFoundError
from server.service import open_service
from server.settings import load_settings

TAIL = "unless the write-ahead log grows past its configured limit first."
DRIFT = (
    "Administrators should keep the archive directory on a separate disk so that a full archive "
    "never stops the database server from accepting new transactions."
)
PAGES = {
    "checkpoints.md": f"""# Checkpoints

## Timing

The server writes a checkpoint every 5 minutes by default, {TAIL}

Data checksums are enabled by default on every new cluster created by initdb.

{DRIFT}
""",
    "tuning.md": f"""# Tuning guide

## Checkpoints

The server writes a checkpoint every 15 minutes by default, {TAIL}

Data checksums are not enabled by default on every new cluster created by initdb.
""",
    "archiving.md": """# Archiving

## Archiver

In PostgreSQL 9.6 the archiver process copies each completed segment file to the archive location.

"""
    + DRIFT.replace("separate disk", "different disk"),
    "replication.md": """# Replication

## Archiver

In PostgreSQL 15 the archiver process copies each completed segment file to the archive location.

Streaming replication sends the write-ahead log to standby servers as it is generated.
""",
}


@pytest.fixture
def settings(tmp_path, embedder):
    docs = tmp_path / "manual"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text)
    ingest(tmp_path / "index", [docs], embedder=embedder)
    return load_settings(
        index__dir=tmp_path / "index",
        stores__conversations_path=tmp_path / "conversations.sqlite3",
        stores__feedback_path=tmp_path / "feedback.sqlite3",
    )


def unanswered(answer_id: str, question: str) -> AskResult:
    agent = AgentAnswer("The documents do not say.", "not_in_documents", [], {}, question, None)
    return AskResult(answer_id, "c-" + answer_id, agent, ("manual",))


def passages(findings: list[Finding], kind: str) -> list[tuple[str, ...]]:
    return [tuple(s.text for s in f.passages) for f in findings if f.kind == kind]


async def test_each_kind_of_finding_is_found_with_its_passages(settings, embedder):
    async with open_service(settings, embedder=embedder) as service:
        for n, question in enumerate(["how do I rotate the audit logs?", "How do I rotate audit logs"]):
            service.conversations.record(question, unanswered(f"a{n}", question))
        report = await service.audit(LOCAL_CALLER)
    findings = report.findings
    contradictions = passages(findings, "contradiction")
    assert any("5 minutes" in " ".join(p) and "15 minutes" in " ".join(p) for p in contradictions), (
        "a figure restated with another value"
    )
    assert any("not enabled" in " ".join(p) for p in contradictions), "a statement negated"
    [stale] = [f for f in findings if f.kind == "stale"]
    assert "9.6" in stale.passages[0].text and "15" in stale.passages[1].text, "the older release first"
    [drift] = [f for f in findings if f.kind == "near_duplicate"]
    assert drift.diff.count("[-") == 1 and {"[-separate-]", "{+different+}"} <= set(
        drift.diff.replace("[-different-] {+separate+}", "[-separate-] {+different+}").split()
    )
    [demand] = [f for f in findings if f.kind == "unanswered"]
    assert demand.count == 2 and len(demand.asked) == 2, "the same question, asked twice, is one topic"
    assert findings[0].severity == "high" and report.about["collections"] == ["manual"]


async def test_the_llm_judges_only_the_pairs_code_could_not_settle(tmp_path, embedder):
    docs = tmp_path / "paraphrase"
    docs.mkdir()
    (docs / "a.md").write_text(
        "# Server\n\n## Timeouts\n\nThe checkpoint timeout of the server is 300 seconds.\n"
    )
    (docs / "b.md").write_text(
        "# Tuning\n\n## Checkpoints\n\nThe checkpoint timeout of the server is 5 minutes.\n"
    )
    ingest(tmp_path / "index", [docs], embedder=embedder)
    settings = load_settings(
        index__dir=tmp_path / "index",
        stores__conversations_path=tmp_path / "conversations.sqlite3",
        stores__feedback_path=tmp_path / "feedback.sqlite3",
    )
    judge = DummyLM([{"verdict": "contradict"}] * 5, adapter=dspy.JSONAdapter())
    async with open_service(settings, embedder=embedder, lm=judge) as service:
        unjudged = await service.audit(LOCAL_CALLER)
        judged = await service.audit(LOCAL_CALLER, judge=3)
    assert not [f for f in unjudged.findings if f.kind == "contradiction"], "code alone cannot tell"
    [finding] = [f for f in judged.findings if f.kind == "contradiction"]
    assert "LLM" in finding.why and {s.text for s in finding.passages} == {
        "The checkpoint timeout of the server is 300 seconds.",
        "The checkpoint timeout of the server is 5 minutes.",
    }
    assert judged.about["judged"] == 1 and len(judge.history) == 1, "one pair was unsettled, one call"


async def test_only_an_admin_key_may_audit_and_since_must_name_a_kept_version(settings, embedder):
    async with open_service(settings, embedder=embedder) as service:
        reader = Caller("key:reader", None, scopes=frozenset({"ask", "search"}))
        with pytest.raises(ForbiddenError):
            await service.audit(reader)
        admin = Caller("key:admin", None, scopes=frozenset({"admin"}))
        for attack in ("../../../etc", "..", "/etc/passwd", "live"):
            with pytest.raises(InvalidRequestError):
                await service.audit(admin, since=attack)
        with pytest.raises(NotFoundError):
            await service.audit(admin, since="20000101T000000.000000-abcd")
        report = await service.audit(admin, since=live_version_id(settings.index.dir))
        assert not [f for f in report.findings if f.kind != "unanswered"], (
            "nothing changed since the live version"
        )
        remote = await service.audit(admin)
        shown = [s for f in remote.findings for s in f.passages]
        assert shown and all(not s.source.startswith("/") and not s.link for s in shown), (
            "a remote caller never sees the server's paths"
        )


@pytest.mark.parametrize(
    ("a", "b", "relation"),
    [
        (
            "OPM conducts about 95 percent of all Federal background investigations for 100 agencies.",
            "OPM conducts about 90 percent of all Federal background investigations.",
            "value",
        ),
        (
            "Data checksums are enabled by default on new clusters.",
            "Data checksums are not enabled by default on new clusters.",
            "polarity",
        ),
        (
            "In PostgreSQL 9.6 the default is 8 connections.",
            "In PostgreSQL 15 the default is 8 connections.",
            "version",
        ),
        (
            "The default value of work_mem is 4MB for every session.",
            "The default value of maintenance_work_mem is 64MB for every session.",
            "drift",
        ),
        (
            "In FY 2012, 90 percent of initial investigations took 35 days.",
            "In FY 2013, 90 percent of initial investigations took 40 days.",
            "different",
        ),
        (
            "Table 68.1. Built-in GiST Operator Classes for every index.",
            "Table 69.1. Built-in GiST Operator Classes for every index.",
            "different",
        ),
        (
            "Computes the SHA-256 hash of the binary string given.",
            "Computes the SHA-384 hash of the binary string given.",
            "drift",
        ),
        (
            "The expression IS DOCUMENT returns true if the value is a proper XML document.",
            "The expression IS NOT DOCUMENT returns false if the value is a proper XML document.",
            "different",
        ),
        (
            "Set border 2 and the border style is 2 in this example.",
            "Set border 0 and the border style is 0 in this example.",
            "different",
        ),
        (
            "--replication — The new user will have the REPLICATION privilege in CREATE ROLE.",
            "--no-replication — The new user will not have the REPLICATION privilege in CREATE ROLE.",
            "different",
        ),
    ],
    ids=[
        "figure",
        "negation",
        "release",
        "subject-name",
        "series",
        "table-number",
        "hyphenated-name",
        "two-flips-agree",
        "worked-example",
        "option-and-its-description",
    ],
)
def test_what_code_decides_about_two_statements(a, b, relation):
    assert compare(a, b).relation == relation


def test_a_relative_link_to_no_indexed_document_is_flagged_and_no_other_link_is():
    page = Statement(
        "u1", "d1", "c1", "manual", "See the pages.", "Contents", "", 0, "/docs/pg/index.html", ""
    )
    text = (
        "See [replication](replication.html#standby), [the retired page](old/retired.html), "
        "[the site](https://example.org/x.html), [mail](mailto:a@b.c) and [this part](#top)."
    )
    [finding] = broken_links([(page, text)], {"/docs/pg/replication.html"})
    assert finding.kind == "broken_link" and "retired.html" in finding.why
    assert not broken_links([(page, text)], {"/docs/pg/replication.html", "/docs/pg/old/retired.html"})


def test_the_html_report_shows_document_text_and_never_runs_it():
    hostile = Statement(
        "u1",
        "d1",
        "c1",
        "manual",
        '<script>alert(1)</script><img src=x onerror="alert(2)"> is 5 MB.',
        "<b>Title</b>",
        "Heading",
        3,
        "/docs/a.html",
        "javascript:alert(3)",
    )
    page = report_html(
        [Finding("contradiction", "high", 0.9, "<i>why</i>", (hostile, hostile), "[-5-] {+6+}")], {}
    )
    assert "<script>" not in page and "onerror=" not in page.replace("onerror=&quot;", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "javascript:" not in page
    assert "<del>5</del>" in page and "&lt;b&gt;Title&lt;/b&gt;" in page


def statement(key: str, doc: str, text: str, title: str = "Manual") -> Statement:
    return Statement(key, doc, f"{doc}-{key}", "manual", text, title, "", 0, f"/docs/{doc}.html", "")


def test_a_template_filled_per_item_and_a_section_of_variants_are_no_contradictions():
    lengths = [
        statement(
            f"u{n}", f"protocol{n}", f"Int32({size}) — Length of message contents in bytes, including self."
        )
        for n, size in enumerate((4, 8, 12))
    ]
    assert not pair_findings(lengths, [(0, 1, 0.99), (0, 2, 0.99)]), "three values of one wording: a template"
    nearby = [
        statement("u0", "subquery", "The result is true if any equal subquery row is found by the scan."),
        statement("u1", "subquery", "The result is false if any equal subquery row is found by the scan."),
    ]
    assert not pair_findings(nearby, [(0, 1, 0.99)]), "two variants described side by side in one section"
    far = [nearby[0], *[statement(f"f{n}", "subquery", "Filler.") for n in range(60)], nearby[1]]
    [finding] = pair_findings(far, [(0, 61, 0.99)])
    assert finding.kind == "contradiction", "the same document restating it far away"
    drifted = [
        statement(
            "d0",
            "a",
            "Administrators keep the archive on a separate disk so that a full archive stops nothing.",
        ),
        statement(
            "d1",
            "b",
            "Administrators keep the archive on a different disk so that a full archive stops nothing.",
        ),
        statement(
            "t0", "c", "Only those foreign tables are shown that the current user has access to.", "tables"
        ),
        statement(
            "t1", "d", "Only those foreign servers are shown that the current user has access to.", "servers"
        ),
    ]
    found = pair_findings(drifted, [(0, 1, 0.99), (2, 3, 0.99)])
    assert [f.kind for f in found] == ["near_duplicate"], "a template filled for its page is no drift"


def test_the_cli_writes_a_report_and_counts_per_collection(settings, tmp_path, capsys):
    from server.doors.cli import main

    assert (
        main(
            ["audit", "--index", str(settings.index.dir), "--format", "html", "--out", str(tmp_path / "out")]
        )
        == 0
    )
    [page] = (tmp_path / "out").glob("audit-*.html")
    assert "15 minutes" in page.read_text() and "<script" not in page.read_text()
    assert "manual: 2 contradiction" in capsys.readouterr().err.replace("\n", " ")
