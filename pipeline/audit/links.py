"""Links between documents that point to nothing in the index: a relative link in a page
("[pg_proc](catalog-pg-proc.html)") whose target is no indexed document. A link to another
site is not followed (nothing a document holds becomes a URL docfinder calls), nor a link
within the page ("#section")."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Iterable

from pipeline.audit.findings import Finding, Statement

_LINK = re.compile(r"\[([^\]\n]*)\]\(([^)\s]+)\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def linked_targets(source: str, text: str) -> list[tuple[str, str]]:
    """``(label, path)`` of each relative link of ``text``, the path resolved against ``source``'s folder."""
    found = []
    for label, target in _LINK.findall(text):
        path = target.split("#", 1)[0].split("?", 1)[0]
        if not path or _SCHEME.match(target) or target.startswith("/"):
            continue
        found.append((label, posixpath.normpath(posixpath.join(posixpath.dirname(source), path))))
    return found


def broken_links(passages: Iterable[tuple[Statement, str]], known_sources: Collection[str]) -> list[Finding]:
    """A finding for each (document, target) pair whose relative link names no indexed document;
    ``passages`` are each chunk's first statement with the chunk's text."""
    findings = []
    seen: set[tuple[str, str]] = set()
    for statement, text in passages:
        for label, target in linked_targets(statement.source, text):
            if target in known_sources or (statement.source, target) in seen:
                continue
            seen.add((statement.source, target))
            name = posixpath.basename(target)
            why = f"the link {label or target!r} points to {name!r}, which is not in the index"
            findings.append(
                Finding("broken_link", "low", 0.9, why, (statement,), collections=(statement.collection,))
            )
    return findings
