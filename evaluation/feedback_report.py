"""What admins do with feedback: a report with charts, and an export that is an evaluation set.

The report answers the questions the reference system's feedback rounds asked: how are
answers rated, what goes wrong (labels), where (domain, collection, platform), and which
questions fare worst. The export writes one JSON object per judgement; ``docfinder eval
feedback`` reads it back and measures whether retrieval still finds the sources of answers
people judged good.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evaluation.report_format import markdown_to_html, pyplot, read_jsonl, save_chart, table_cell
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
        worst_questions=worst[:WORST_QUESTIONS],
    )


def _grouped(records: Iterable[FeedbackRecord], keys) -> dict[str, dict[str, Any]]:
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


def render_charts(summary: FeedbackSummary, out_dir: Path) -> list[Path]:
    """PNG charts: the rating distribution, the label counts, the mean rating by domain."""
    plt = pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    charts = []

    figure, axes = plt.subplots(figsize=(5, 3))
    axes.bar([str(n) for n in summary.ratings], list(summary.ratings.values()), color="#4477aa")
    axes.set(title="Ratings", xlabel="rating (1 = bad, 5 = perfect)", ylabel="answers")
    charts.append(save_chart(figure, out_dir / "ratings.png"))

    figure, axes = plt.subplots(figsize=(7, 3.5))
    labels = list(reversed(list(summary.labels)))
    axes.barh(labels, [summary.labels[label] for label in labels], color="#aa7744")
    axes.set(title="What people said", xlabel="judgements")
    charts.append(save_chart(figure, out_dir / "labels.png"))

    figure, axes = plt.subplots(figsize=(6, 3))
    domains = [d for d, v in summary.by_domain.items() if v["mean_rating"] is not None]
    axes.bar(domains, [summary.by_domain[d]["mean_rating"] for d in domains], color="#44aa77")
    axes.set(title="Mean rating by domain", ylabel="mean rating", ylim=(0, 5))
    axes.tick_params(axis="x", labelrotation=30)
    charts.append(save_chart(figure, out_dir / "by_domain.png"))
    return charts


def render_report(summary: FeedbackSummary, charts: Sequence[Path], fmt: str) -> str:
    """The report as Markdown or HTML, with the charts as images beside it."""
    lines = [
        "# docfinder feedback report",
        "",
        f"{summary.records} judgements; mean rating "
        + (f"{summary.mean_rating:.2f}" if summary.mean_rating is not None else "n/a")
        + "; by platform: "
        + (", ".join(f"{p} {n}" for p, n in sorted(summary.by_platform.items())) or "none"),
        "",
        *[f"![{c.stem}]({c.name})" for c in charts],
        "",
        "## Ratings",
        "",
        "| rating | answers |",
        "| --- | --- |",
        *[f"| {n} | {count} |" for n, count in summary.ratings.items()],
        "",
        "## Labels",
        "",
        "| label | judgements |",
        "| --- | --- |",
        *[f"| {label} | {count} |" for label, count in summary.labels.items()],
        "",
        *_group_table("Domain", summary.by_domain),
        *_group_table("Collection", summary.by_collection),
        "## Worst-rated questions",
        "",
        "| question | mean rating | judgements | labels |",
        "| --- | --- | --- | --- |",
        *[
            f"| {table_cell(w['question'])} | "
            f"{w['mean_rating'] if w['mean_rating'] is not None else 'n/a'} | "
            f"{w['judgements']} | {table_cell(', '.join(f'{k} ×{v}' for k, v in w['labels'].items()))} |"
            for w in summary.worst_questions
        ],
        "",
    ]
    markdown = "\n".join(lines)
    return markdown if fmt == "md" else markdown_to_html(lines, "docfinder feedback")


def _group_table(name: str, groups: dict[str, dict[str, Any]]) -> list[str]:
    rows = [
        f"## By {name.lower()}",
        "",
        f"| {name.lower()} | judgements | mean rating |",
        "| --- | --- | --- |",
    ]
    for key, value in groups.items():
        mean = value["mean_rating"] if value["mean_rating"] is not None else "n/a"
        rows.append(f"| {table_cell(key)} | {value['records']} | {mean} |")
    return [*rows, ""]


def export_items(records: Sequence[FeedbackRecord], out: Path) -> int:
    """Write one JSON object per judgement (an evaluation set); returns how many."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for record in records:
            item = asdict(record)
            item["sources"] = list(record.sources)
            item["collections"] = list(record.collections)
            item["good"] = is_good(record.rating, record.label)
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    return len(records)


def is_good(rating: int | None, label: str | None) -> bool:
    """Whether a judgement says the answer was right (so its sources are gold for its question)."""
    if label is not None:
        return label in GOOD_LABELS
    return rating is not None and rating >= 4


def load_items(path: Path) -> list[dict[str, Any]]:
    """An exported evaluation set, checked line by line."""
    return [item for _, item in read_jsonl(path, {"question", "sources", "rating", "label"})]
