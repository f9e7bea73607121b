"""An audit's findings written for people (Markdown, a standalone HTML page) and programs (JSON).

Every document text and name is escaped: a passage holding ``<script>`` is shown, never run.
The HTML page needs nothing beside it (its style is inline, it has no script)."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any, Literal

from pipeline.audit.findings import KINDS, Finding, Statement, counts

Format = Literal["md", "html", "json"]
TITLES = {
    "contradiction": "Contradictions",
    "stale": "Stale statements",
    "near_duplicate": "Near-duplicate passages",
    "broken_link": "Links to nothing",
    "unanswered": "Unanswered demand",
}


def report_json(findings: Sequence[Finding], about: Mapping[str, Any]) -> dict[str, Any]:
    """The findings (most severe first) with the counts per collection and what was audited."""
    return {"about": dict(about), "counts": counts(findings), "findings": [asdict(f) for f in findings]}


def report_markdown(findings: Sequence[Finding], about: Mapping[str, Any]) -> str:
    lines = [f"# Documentation audit ({about.get('index_version', '')})", "", _summary(about), ""]
    lines += _count_table(findings, markdown=True)
    for number, finding in enumerate(findings, start=1):
        lines += [
            "",
            f"## {number}. {TITLES[finding.kind]}: {finding.severity} ({finding.confidence:.0%} sure)",
        ]
        lines += ["", finding.why]
        for statement in finding.passages:
            lines += ["", f"> {statement.text}", f"> — [{_place(statement)}]({statement.link})"]
        if finding.diff:
            lines += ["", f"Words that differ: `{finding.diff}`"]
        for question in finding.asked:
            lines += [f"- {question}"]
    return "\n".join(lines) + "\n"


def report_html(findings: Sequence[Finding], about: Mapping[str, Any]) -> str:
    e = html.escape
    body = [f"<h1>Documentation audit <small>{e(str(about.get('index_version', '')))}</small></h1>"]
    body.append(f"<p>{e(_summary(about))}</p>")
    body += _count_table(findings, markdown=False)
    for number, finding in enumerate(findings, start=1):
        body.append(f'<section class="{e(finding.severity)}">')
        body.append(
            f"<h2>{number}. {e(TITLES[finding.kind])} <span>{e(finding.severity)}, "
            f"{finding.confidence:.0%} sure</span></h2><p>{e(finding.why)}</p>"
        )
        for statement in finding.passages:
            body.append(
                f'<blockquote>{e(statement.text)}<footer><a href="{e(_safe_link(statement.link))}">'
                f"{e(_place(statement))}</a></footer></blockquote>"
            )
        if finding.diff:
            body.append(f"<p>Words that differ: <code>{_diff_html(finding.diff)}</code></p>")
        if finding.asked:
            body.append("<ul>" + "".join(f"<li>{e(q)}</li>" for q in finding.asked) + "</ul>")
        body.append("</section>")
    return _PAGE.format(body="\n".join(body))


def render(findings: Sequence[Finding], about: Mapping[str, Any], form: Format) -> str:
    if form == "json":
        return json.dumps(report_json(findings, about), indent=2) + "\n"
    return report_markdown(findings, about) if form == "md" else report_html(findings, about)


def _summary(about: Mapping[str, Any]) -> str:
    collections = ", ".join(about.get("collections", ())) or "all collections"
    since = f", statements changed since {about['since']}" if about.get("since") else ""
    return f"{about.get('statements', 0)} statements of {collections}{since}; {about.get('seconds', 0)} s."


def _count_table(findings: Sequence[Finding], markdown: bool) -> list[str]:
    table = counts(findings)
    if markdown:
        rows = [
            "| collection | " + " | ".join(TITLES[k] for k in KINDS) + " |",
            "|---" * (len(KINDS) + 1) + "|",
        ]
        rows += [
            f"| {name} | " + " | ".join(str(row[k]) for k in KINDS) + " |" for name, row in table.items()
        ]
        return rows
    e = html.escape
    head = "".join(f"<th>{e(TITLES[k])}</th>" for k in KINDS)
    cells = "".join(
        f"<tr><td>{e(name)}</td>" + "".join(f"<td>{row[k]}</td>" for k in KINDS) + "</tr>"
        for name, row in table.items()
    )
    return [f"<table><tr><th>collection</th>{head}</tr>{cells}</table>"]


def _place(statement: Statement) -> str:
    page = f", page {statement.page}" if statement.page else ""
    heading = f" — {statement.heading}" if statement.heading else ""
    return f"{statement.title}{heading}{page}"


def _safe_link(link: str) -> str:
    """Only web and file links are links; anything else (``javascript:``) is shown as nothing."""
    return link if link.startswith(("http://", "https://", "file://")) else "#"


def _diff_html(diff: str) -> str:
    escaped = html.escape(diff)
    return (
        escaped.replace("[-", "<del>").replace("-]", "</del>").replace("{+", "<ins>").replace("+}", "</ins>")
    )


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Documentation audit</title>
<style>
body {{ font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }}
section {{ border-left: 4px solid #999; padding: 0 1rem; margin: 1.5rem 0; }}
section.high {{ border-color: #c00; }} section.medium {{ border-color: #d80; }}
h2 span {{ font-size: 0.8rem; font-weight: normal; color: #555; }}
blockquote {{ margin: 0.5rem 0; padding: 0.5rem; background: #f6f6f6; }}
footer {{ font-size: 0.85rem; }} del {{ background: #fdd; }} ins {{ background: #dfd; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: 0.2rem 0.5rem; }}
</style></head>
<body>
{body}
</body></html>
"""
