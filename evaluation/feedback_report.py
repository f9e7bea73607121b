"""What admins do with feedback: a report with charts, and an export that is an evaluation set.

The report answers the questions the reference system's feedback rounds asked: how are
answers rated, what goes wrong (labels), where (domain, collection, platform), and which
questions fare worst. The export writes one JSON object per judgement; ``docfinder eval
feedback`` reads it back and measures whether retrieval still finds the sources of answers
people judged good.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evaluation.report_format import markdown_to_html, pyplot, read_jsonl, save_chart, table_cell
from pipeline.answers import FeedbackRecord
from server.core.feedback_summary import FeedbackSummary, is_good, summarise

__all__ = [
    "FeedbackSummary",
    "export_items",
    "is_good",
    "load_items",
    "render_charts",
    "render_report",
    "summarise",
]


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


def load_items(path: Path) -> list[dict[str, Any]]:
    """An exported evaluation set, checked line by line."""
    return [item for _, item in read_jsonl(path, {"question", "sources", "rating", "label"})]
