"""What feedback says, summed up: the ratings, the labels, by platform, domain, collection and
day, and the worst-rated questions with their answers and sources. The admin web page charts
it (``GET /v1/feedback/summary``) and ``docfinder eval feedback report`` writes it as a report."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.answers import FEEDBACK_LABELS, FeedbackRecord

# Judgements that make an answer's sources gold for its question.
GOOD_LABELS = {"Perfect answer, accurate", "Correct, but too verbose"}
WORST_QUESTIONS = 10


@dataclass(frozen=True, slots=True)
class FeedbackSummary:
    """The report's numbers."""

    records: int
    ratings: dict[int, int]
    mean_rating: float | None
    labels: dict[str, int]
    by_platform: dict[str, int]
    by_domain: dict[str, dict[str, Any]]
    by_collection: dict[str, dict[str, Any]]
    by_day: dict[str, dict[str, Any]]
    worst_questions: list[dict[str, Any]]


def summarise(records: Sequence[FeedbackRecord]) -> FeedbackSummary:
    """Rating distribution, label counts, per domain / collection / platform, worst questions."""
    rated = [r.rating for r in records if r.rating is not None]
    by_question: dict[str, list[FeedbackRecord]] = defaultdict(list)
    for record in records:
        by_question[record.question].append(record)
    worst = []
    for question, judged in by_question.items():
        ratings = [r.rating for r in judged if r.rating is not None]
        bad = sum(r.label is not None and r.label not in GOOD_LABELS for r in judged)
        if ratings or bad:
            worst.append(
                {
                    "question": question,
                    "mean_rating": round(statistics.fmean(ratings), 2) if ratings else None,
                    "judgements": len(judged),
                    "labels": dict(Counter(r.label for r in judged if r.label)),
                    "answer": judged[-1].answer,
                    "sources": list(judged[-1].sources),
                }
            )
    worst.sort(key=lambda w: (w["mean_rating"] if w["mean_rating"] is not None else 3.0, -w["judgements"]))
    return FeedbackSummary(
        records=len(records),
        ratings={n: sum(r == n for r in rated) for n in range(1, 6)},
        mean_rating=round(statistics.fmean(rated), 3) if rated else None,
        labels={label: sum(r.label == label for r in records) for label in FEEDBACK_LABELS},
        by_platform=dict(Counter(r.platform for r in records)),
        by_domain=_grouped(records, lambda r: [r.domain or "unclassified"]),
        by_collection=_grouped(records, lambda r: list(r.collections) or ["all"]),
        by_day=_grouped(records, lambda r: [r.created_at[:10]]),
        worst_questions=worst[:WORST_QUESTIONS],
    )


def _grouped(
    records: Iterable[FeedbackRecord], keys: Callable[[FeedbackRecord], list[str]]
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[FeedbackRecord]] = defaultdict(list)
    for record in records:
        for key in keys(record):
            groups[key].append(record)
    summary = {}
    for key, judged in sorted(groups.items()):
        ratings = [r.rating for r in judged if r.rating is not None]
        summary[key] = {
            "records": len(judged),
            "mean_rating": round(statistics.fmean(ratings), 3) if ratings else None,
            "labels": dict(Counter(r.label for r in judged if r.label)),
        }
    return summary


def is_good(rating: int | None, label: str | None) -> bool:
    """Whether a judgement says the answer was right (so its sources are gold for its question)."""
    if label is not None:
        return label in GOOD_LABELS
    return rating is not None and rating >= 4
