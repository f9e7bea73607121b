"""How the evaluation commands show their reports in a terminal: one rich table per report."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def print_eval_report(console: Console, report: dict[str, Any]) -> None:
    """The retrieval evaluation as a table, one row per configuration."""
    console.print(
        f"[bold]{escape(report['dataset'])}[/] split {report['split']}, {report['queries']} queries"
    )
    table = Table("configuration", "nDCG@10", "R@10", "R@100", "MRR@10", "p50 ms", "p95 ms")
    for row in report["rows"]:
        table.add_row(
            row["name"],
            f"{row['ndcg@10']:.4f}",
            f"{row['recall@10']:.4f}",
            f"{row['recall@100']:.4f}",
            f"{row['mrr@10']:.4f}",
            f"{row['latency_ms']['p50']:.2f}",
            f"{row['latency_ms']['p95']:.2f}",
        )
    console.print(table)
    console.print(f"latency floor (p50 ms): {report['latency_floor_ms']}")
    if report["tuned_on_train"].get("split"):
        tuned = report["tuned_on_train"]
        console.print(
            f"tuned on train: convex dense weight {tuned['convex_dense_weight']}, "
            f"BM25 field weight {tuned['bm25_field_weight']}"
        )


def print_context_report(console: Console, report: dict[str, Any]) -> None:
    """Context-selection recall per strategy and budget over all questions, then per question type."""
    runs = report["runs"]
    with_figures = runs[0]["questions_with_figures"] if runs else 0
    console.print(
        f"[bold]{escape(report['dataset'])}[/] {report['questions']} questions, "
        f"{with_figures} with figures in their answer"
    )
    for title, rows in (("all questions", runs), ("per question type", report["runs_by_question_type"])):
        table = Table(
            "question type",
            "strategy",
            "budget",
            "gold-doc recall",
            "figure recall (macro / micro)",
            "tokens",
            "select ms p50",
            title=title,
        )
        for run in rows:
            table.add_row(
                escape(run["question_type"]),
                run["strategy"],
                str(run["budget"]),
                f"{run['gold_doc_recall']:.3f}",
                f"{run['answer_figure_recall']:.3f} / {run['answer_figure_recall_micro']:.3f}",
                f"{run['mean_tokens']:.0f}",
                f"{run['select_ms_p50']:.0f}",
            )
        console.print(table)


def print_answers_summary(console: Console, summary: dict[str, Any]) -> None:
    """Each answer metric's mean and how many answers it scored, then outcomes and latency."""
    console.print(
        f"[bold]{escape(summary['dataset'])}[/] {summary['questions']} questions; judge: "
        f"{escape(summary['judge'])}; rows: {escape(summary['rows'])}"
    )
    table = Table("metric", "mean", "answers scored")
    for metric, value in summary["metrics"].items():
        mean = f"{value['mean']:.3f}" if value["mean"] is not None else "n/a"
        table.add_row(metric, mean, str(value["scored"]))
    console.print(table)
    outcomes = ", ".join(f"{o} {n}" for o, n in summary["outcomes"].items())
    latency = summary["latency_s"]
    console.print(
        f"outcomes: {outcomes}; latency p50 {latency['p50']} s, p95 {latency['p95']} s; "
        f"judge errors: {summary['judge_errors']}"
    )
