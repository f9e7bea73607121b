"""Unanswered demand: the questions docfinder could not answer (the documents did not say, or
no short answer could be verified) and those rated as missing information, grouped by topic
with how often each was asked, so that a writer sees which pages are missing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.audit.findings import Finding, Severity

SAME_TOPIC = 0.8  # cosine similarity of two questions' vectors at which they ask the same thing
QUOTED_QUESTIONS = 5


@dataclass(frozen=True, slots=True)
class Unanswered:
    """A question that went unanswered, and why: an outcome ("not_in_documents") or a rating label."""

    question: str
    reason: str
    collections: tuple[str, ...]
    asked_at: str


def demand_findings(asked: Sequence[Unanswered], vectors: np.ndarray) -> list[Finding]:
    """The questions grouped greedily by topic (each joins the first group whose first question
    is at least :data:`SAME_TOPIC` alike), one finding per group, the most asked first."""
    groups: list[list[int]] = []
    for i in range(len(asked)):
        for group in groups:
            if float(vectors[group[0]] @ vectors[i]) >= SAME_TOPIC:
                group.append(i)
                break
        else:
            groups.append([i])
    findings = []
    for group in groups:
        questions = [asked[i] for i in group]
        reasons = sorted({q.reason for q in questions})
        collections = tuple(sorted({c for q in questions for c in q.collections}))
        distinct = list(dict.fromkeys(q.question for q in questions))
        severity: Severity = "high" if len(group) >= 5 else "medium" if len(group) >= 2 else "low"
        last = questions[-1].asked_at[:10]
        why = f"asked {len(group)} time(s) and not answered ({', '.join(reasons)}); last on {last}"
        findings.append(
            Finding(
                "unanswered",
                severity,
                1.0,
                why,
                asked=tuple(distinct[:QUOTED_QUESTIONS]),
                count=len(group),
                collections=collections,
            )
        )
    return sorted(findings, key=lambda f: -f.count)
