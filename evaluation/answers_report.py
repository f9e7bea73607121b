"""The report of ``docfinder eval answers --report DIR``: charts, per-type means, the worst answers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation.answers import ALL_METRICS, metric_value, row_mean
from evaluation.report_format import markdown_to_html, pyplot, save_chart, table_cell
from pipeline.citations import marker

WORST_ANSWERS = 10
ANSWER_PREVIEW_CHARS = 400


def render_answer_charts(
    summary: dict[str, Any], rows: Sequence[dict[str, Any]], out_dir: Path
) -> list[Path]:
    """PNG charts: each metric's distribution over the answers, and the means per question type."""
    plt = pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    charts = []
    columns = 3
    lines = -(-len(ALL_METRICS) // columns)
    figure, grid = plt.subplots(lines, columns, figsize=(11, 2.6 * lines))
    for axes, metric in zip(grid.flat, ALL_METRICS, strict=False):
        values = [v for v in (metric_value(row, metric) for row in rows) if v is not None]
        axes.hist(values, bins=[i / 10 for i in range(11)], color="#4477aa")
        axes.set(title=f"{metric} (n={len(values)})", xlim=(0, 1))
    for axes in list(grid.flat)[len(ALL_METRICS) :]:
        axes.axis("off")
    charts.append(save_chart(figure, out_dir / "metric_distributions.png"))

    kinds = list(summary["by_question_type"])
    if kinds:
        figure, axes = plt.subplots(figsize=(11, 3.5))
        width = 0.8 / len(ALL_METRICS)
        for offset, metric in enumerate(ALL_METRICS):
            means = [summary["by_question_type"][k][metric] or 0.0 for k in kinds]
            axes.bar([i + offset * width for i in range(len(kinds))], means, width, label=metric)
        axes.set_xticks([i + 0.4 - width / 2 for i in range(len(kinds))], kinds)
        axes.set(title="Mean per question type", ylim=(0, 1))
        axes.legend(fontsize=7, ncols=3)
        charts.append(save_chart(figure, out_dir / "by_question_type.png"))
    return charts


def render_answers_report(
    summary: dict[str, Any], rows: Sequence[dict[str, Any]], charts: Sequence[Path], fmt: str
) -> str:
    """The report as Markdown or HTML."""
    metrics = summary["metrics"]
    worst = sorted((r for r in rows if row_mean(r) is not None), key=lambda r: row_mean(r) or 0.0)
    lines = [
        "# docfinder answer evaluation",
        "",
        f"{summary['questions']} questions from {summary['dataset']}; answers: {summary['answers']}; "
        f"judge: {summary['judge']}; outcomes: "
        + ", ".join(f"{o} {n}" for o, n in summary["outcomes"].items()),
        "",
        *[f"![{c.stem}]({c.name})" for c in charts],
        "",
        "## Metrics",
        "",
        "| metric | mean | answers scored |",
        "| --- | --- | --- |",
        *[f"| {m} | {_shown(v['mean'])} | {v['scored']} |" for m, v in metrics.items()],
        "",
        "## Per question type",
        "",
        "| type | questions | " + " | ".join(ALL_METRICS) + " |",
        "| --- | --- | " + " | ".join("---" for _ in ALL_METRICS) + " |",
        *[
            f"| {table_cell(kind)} | {means['questions']} | "
            + " | ".join(_shown(means[m]) for m in ALL_METRICS)
            + " |"
            for kind, means in summary["by_question_type"].items()
        ],
        "",
        "## Worst answers",
        "",
        "| question | mean judged score | outcome | answer | sources |",
        "| --- | --- | --- | --- | --- |",
        *[
            f"| {table_cell(r['question'])} | {_shown(row_mean(r))} | {r['outcome']} | "
            f"{table_cell(r['answer'][:ANSWER_PREVIEW_CHARS])} | "
            f"{table_cell(', '.join(_place(c) for c in r['citations']))} |"
            for r in worst[:WORST_ANSWERS]
        ],
        "",
    ]
    return "\n".join(lines) if fmt == "md" else markdown_to_html(lines, "docfinder answer evaluation")


def write_answers_report(
    summary: dict[str, Any], rows: Sequence[dict[str, Any]], out_dir: Path, fmt: str
) -> Path:
    """Charts and report in ``out_dir``; returns the report's path."""
    charts = render_answer_charts(summary, rows, out_dir)
    path = out_dir / f"report.{fmt}"
    path.write_text(render_answers_report(summary, rows, charts, fmt), encoding="utf-8")
    return path


def _place(citation: dict[str, Any]) -> str:
    """``[n] file p. x`` for one cited source."""
    first_page = citation["pages"][0] if citation.get("pages") else 0
    page = f" p. {first_page}" if first_page else ""
    return f"{marker(citation['n'])} {Path(citation['source']).name}{page}"


def _shown(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "n/a"
